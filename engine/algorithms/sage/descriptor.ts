// SageAttention: INT8 Q·Kᵀ with smoothed K, FP16 (v1) or FP8 (v2) P·V.

import { defineAlgorithm } from '../descriptor.ts';
import { SAGE_FEATURES, SAGE_TILE, sage } from './forward.ts';
import { SAGE_SUPPORTS } from './supports.ts';

export const sageAlgorithm = defineAlgorithm({
  id: 'sage',
  name: sage.name,
  title: 'SageAttention',
  forward: sage,
  switches: SAGE_FEATURES,
  // No hardware model (engine/hw has no SageAttention schedule), so the panel takes the
  // kernels' own 128 × 64 tile from `tiles`; 256 × 256 gives two Q tiles of four 32-row warp
  // slices (v2's per-warp Q scales) against four K/V blocks, about 250 steps.
  defaults: { gpu: null, dtype: 'fp16', nq: 256, nk: 256, d: 64, dv: 64 },
  tiles: () => ({ ...SAGE_TILE }),
  supports: SAGE_SUPPORTS,
  rowStats: 'on-chip',
  serving: { pageTableEntryBytes: 4, splits: false },
});
