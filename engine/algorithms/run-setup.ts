// What every exact step algorithm (standard, FA1, FA2) sets up before its first event.
// Validation comes first, so a bad problem is rejected whole and never half-computed.

import { sixteenBitRounder } from '../core/dtype.ts';
import { checkInputs, type AttentionInputs } from '../core/inputs.ts';
import { dtypeBytes, requireNoFp8, validateProblem, type AttentionProblem } from '../core/problem.ts';
import { scoreModel, type ScoreModel } from '../core/scores.ts';
import { Tracer } from '../trace/tracer.ts';
import { resolveBlocks } from './blocks.ts';
import { readFeatures } from './features.ts';
import type { RunOptions } from './types.ts';

export interface RunSetup {
  blockM: number;
  blockN: number;
  sm: ScoreModel;
  tr: Tracer;
  /** Bytes per element of the input dtype. */
  eb: number;
  /** 16-bit rounding of stored values, undefined for fp32. */
  rounder: ((x: number) => number) | undefined;
}

/** Validates and prepares a run of an algorithm that has no feature switches (any given one is rejected by name). */
export function setUpExactRun(id: string, p: AttentionProblem, x: AttentionInputs, opts: RunOptions): RunSetup {
  validateProblem(p);
  requireNoFp8(p, id);
  checkInputs(p, x);
  readFeatures(id, {}, opts.features);
  const { blockM, blockN } = resolveBlocks(p, opts);
  return {
    blockM,
    blockN,
    sm: scoreModel(p),
    tr: new Tracer(opts.trace, opts.annotate),
    eb: dtypeBytes(p.dtype),
    rounder: sixteenBitRounder(p.dtype),
  };
}
