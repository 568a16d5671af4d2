// The random problems the property tests draw (fast-check): sizes, GQA groups, causal and
// sliding-window masks, softcap, ALiBi, attention sinks, block sizes and a seed. One generator,
// so every property test covers the same kinds of problem; the limits say how large.

import fc from 'fast-check';
import type { AttentionProblem } from '../core/problem.ts';

export interface ProblemLimits {
  /** Largest Nq; Nk up to maxNk (default maxN). */
  maxN: number;
  maxNk?: number;
  /** Largest d and dv. */
  maxD: number;
  /** Block sizes (Br, Bc) from minBlock (default 1) to maxBlock. */
  minBlock?: number;
  maxBlock: number;
  /** Largest window edge (default 6). */
  maxWindow?: number;
  /** Largest batch (default 1). */
  maxBatch?: number;
}

export interface ArbitraryRun {
  problem: AttentionProblem;
  blockM: number;
  blockN: number;
  seed: number;
}

export function arbitraryRun(l: ProblemLimits): fc.Arbitrary<ArbitraryRun> {
  return fc
    .record({
      nq: fc.integer({ min: 1, max: l.maxN }),
      nk: fc.integer({ min: 1, max: l.maxNk ?? l.maxN }),
      d: fc.integer({ min: 1, max: l.maxD }),
      dv: fc.integer({ min: 1, max: l.maxD }),
      group: fc.integer({ min: 1, max: 3 }),
      hk: fc.integer({ min: 1, max: 2 }),
      causal: fc.boolean(),
      window: fc.option(
        fc.record({ left: fc.integer({ min: -1, max: l.maxWindow ?? 6 }), right: fc.integer({ min: -1, max: l.maxWindow ?? 6 }) }),
        { nil: undefined },
      ),
      softcap: fc.option(fc.double({ min: 0.5, max: 30, noNaN: true }), { nil: undefined }),
      alibi: fc.boolean(),
      sink: fc.option(fc.double({ min: -4, max: 4, noNaN: true }), { nil: undefined }),
      blockM: fc.integer({ min: l.minBlock ?? 1, max: l.maxBlock }),
      blockN: fc.integer({ min: l.minBlock ?? 1, max: l.maxBlock }),
      seed: fc.nat(),
      batch: fc.integer({ min: 1, max: l.maxBatch ?? 1 }),
    })
    .map((r) => {
      const hq = r.hk * r.group;
      const problem: AttentionProblem = {
        batch: r.batch,
        hq,
        hk: r.hk,
        nq: r.nq,
        nk: r.nk,
        d: r.d,
        dv: r.dv,
        causal: r.causal,
        dtype: 'fp32',
      };
      if (r.window) problem.window = r.window;
      if (r.softcap !== undefined) problem.softcap = r.softcap;
      if (r.alibi) problem.alibi = 'standard';
      if (r.sink !== undefined) {
        const sink = r.sink;
        problem.sinks = Array.from({ length: hq }, (_, h) => sink - h);
      }
      return { problem, blockM: r.blockM, blockN: r.blockN, seed: r.seed };
    });
}
