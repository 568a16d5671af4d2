// FlashAttention-3 backward (Hopper), as Dao-AILab/flash-attention's hopper/ backward runs it:
// the warp-specialized structure of engine/backward/ws-backward.ts (preprocess, a main kernel
// of producer / MMA warpgroups / dQ writer, postprocess) with SM90's tiles and rings. The
// producer's program order is Q(first), K/V, then dO(i), Q(i+1), …, dO(last); the dO ring
// frees after the dQ gemm is issued, the Q ring after dK += dSᵀ Q. Tile sizes from the
// kernel's launch table for SM90:
//   d ≤ 64: 128 × 128 (96 × 128 causal with softcap); d ≤ 96: 64 × 128;
//   d ≤ 128: 64 × 128 (causal, window or softcap) else 80 × 128; d ≤ 192: 64 × 96; d ≤ 256: 64 × 80.
// ALiBi and sinks are not in the FA3 kernel; they are added as in FA2.

import { FA3_SUPPORTS } from './supports.ts';
import type { FeatureSpecs } from '../features.ts';
import { fa3, FA3_SCHEDULE_FEATURES } from './forward.ts';
import { wsBackward } from '../../backward/ws-backward.ts';
import type { BackwardAlgorithm } from '../../backward/types.ts';
import type { AttentionProblem } from '../../core/problem.ts';

export const FA3_BACKWARD_FEATURES = {
  ...FA3_SCHEDULE_FEATURES,
  deterministic: { default: false, doc: 'a semaphore per dQ row block orders the column blocks’ adds (reproducible dQ, some waiting)' },
} satisfies FeatureSpecs;

/** The kernel's backward tile for a problem (SM90 launch table). */
export function fa3BackwardTile(p: AttentionProblem): { blockM: number; blockN: number } {
  const local = p.window !== undefined && (p.window.left >= 0 || p.window.right >= 0);
  const softcap = p.softcap !== undefined;
  if (p.d <= 64) return { blockM: p.causal && softcap ? 96 : 128, blockN: 128 };
  if (p.d <= 96) return { blockM: 64, blockN: 128 };
  if (p.d <= 128) return { blockM: p.causal || local || softcap ? 64 : 80, blockN: 128 };
  if (p.d <= 192) return { blockM: 64, blockN: 96 };
  return { blockM: 64, blockN: 80 };
}

/** Stages of the Q/LSE ring and of the dO/D ring. */
export function fa3BackwardStages(p: AttentionProblem): { q: number; dO: number } {
  return { q: 2, dO: p.d <= 128 ? 2 : 1 };
}

export const fa3Backward: BackwardAlgorithm = wsBackward({
  id: 'fa3',
  name: 'FlashAttention-3 backward (Hopper)',
  prefix: 'fa3bwd',
  forward: fa3,
  features: FA3_BACKWARD_FEATURES,
  supports: FA3_SUPPORTS,
  tile: fa3BackwardTile,
  stages: fa3BackwardStages,
  // The deterministic order of causal runs: from the last visible column block down.
  lastColumnFirst: (p) => p.causal,
});
