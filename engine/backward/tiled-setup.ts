// What the three tiled backward algorithms (FA1, FA2, FA3) share after setUpBackward: the
// score tile of one (row block, column block), the on-chip dK/dV accumulators of the column
// block being worked on, the bookkeeping of who added into which dQ row block, and the step
// context their events are emitted through. The loops differ (FA1 read-modify-writes dQ,
// FA2/FA3 accumulate it atomically, FA3 splits the work between warp roles); this does not.

import type { StepAlgorithm, RunOptions } from '../algorithms/types.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import { softmaxScale, type AttentionProblem } from '../core/problem.ts';
import { DqAccumulation } from './dq-accumulation.ts';
import { setUpBackward, type BackwardSetup } from './setup.ts';
import { GradTile } from './tile-grad.ts';
import type { BwdContext } from './tile-events.ts';

export interface TiledBackward extends BackwardSetup {
  /** Softmax scale τ (dQ and dK carry it). */
  scale: number;
  ctx: BwdContext;
  /** dK_j and dV_j of the column block on chip, fp32. */
  kAcc: Float32Array;
  vAcc: Float32Array;
  acc: DqAccumulation;
}

export function setUpTiledBackward(
  p: AttentionProblem,
  xIn: AttentionInputs,
  forward: StepAlgorithm,
  forwardOptions: Omit<RunOptions, 'trace'> & { blockM: number; blockN: number },
  trace: boolean,
  prefix: string,
): TiledBackward {
  const { blockM, blockN } = forwardOptions;
  const S = setUpBackward(p, xIn, forward, forwardOptions, trace);
  const tile = new GradTile(blockM, blockN, p.d);
  return {
    ...S,
    scale: softmaxScale(p),
    ctx: { p, x: S.x, sm: S.sm, tr: S.tr, trace, prefix, rounder: S.rounder, tile },
    kAcc: new Float32Array(blockN * p.d),
    vAcc: new Float32Array(blockN * p.dv),
    acc: new DqAccumulation(S.sm, p.nq, p.nk, blockM, blockN),
  };
}
