// The one tiny problem the forward and backward worked examples of TRACE.md are drawn from.

import type { AttentionProblem } from '../core/problem.ts';

/** 3 queries, 4 keys, d = dv = 2, causal (bottom-right), 2×2 tiles, seed 3 (chosen so the second K/V block raises a row max and the rescale factor is not 1). */
export const EXAMPLE_PROBLEM: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 3, nk: 4, d: 2, dv: 2, causal: true, dtype: 'fp32' };
export const EXAMPLE_BLOCKS = { blockM: 2, blockN: 2 };
export const EXAMPLE_SEED = 3;
