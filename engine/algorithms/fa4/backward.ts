// FlashAttention-4 backward (Blackwell), as flash_attn/cute/flash_bwd_sm100.py@0251105a runs
// it: the warp-specialized structure of engine/backward/ws-backward.ts on SM100's 128 × 128
// tile. The load warp is the `producer` (Q with LSE, dO with dPsum; one Q stage in a 2-CTA pair
// at d ≥ 128, two on one CTA, one dO stage: flash_bwd_sm100.py l. 237-238), the MMA and
// compute warps are `mma` (S, dP, dV, dK and dQ accumulate in TMEM), the reduce warps are the
// `dqwriter` (TMA reduce-adds of dQ into dQaccum). Deterministic runs hand out the column
// blocks from the last one down when causal or local (spt, l. 711-712). The hardware schedule
// is ./backward-schedule.ts.

import type { FeatureSpecs } from '../features.ts';
import { wsBackward } from '../../backward/ws-backward.ts';
import type { BackwardAlgorithm } from '../../backward/types.ts';
import { FA4_SUPPORTS } from './supports.ts';
import { FA4_FEATURES, fa4 } from './forward.ts';

/** The forward's switches (the forward run that gives O and the LSE takes them) and the deterministic dQ order. */
export const FA4_BACKWARD_FEATURES = {
  ...FA4_FEATURES,
  deterministic: { default: false, doc: 'a semaphore per dQ row block orders the column blocks’ adds (reproducible dQ, some waiting)' },
} satisfies FeatureSpecs;

export const fa4Backward: BackwardAlgorithm = wsBackward({
  id: 'fa4',
  name: 'FlashAttention-4 backward (Blackwell)',
  prefix: 'fa4bwd',
  forward: fa4,
  features: FA4_BACKWARD_FEATURES,
  supports: FA4_SUPPORTS,
  // interface.py@0251105a l. 1940-1941: m_block_size = n_block_size = 128 on SM100.
  tile: () => ({ blockM: 128, blockN: 128 }),
  stages: (p) => ({ q: p.d >= 128 ? 1 : 2, dO: 1 }),
  lastColumnFirst: (p) => p.causal || (p.window !== undefined && (p.window.left >= 0 || p.window.right >= 0)),
});
