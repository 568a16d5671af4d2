// SageAttention: INT8 Q·Kᵀ with smoothed K, FP16 (v1) or FP8 (v2) P·V.

import { defineAlgorithm } from '../descriptor.ts';
import { SAGE_FEATURES, SAGE_TILE, sage } from './forward.ts';

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
  supports: {
    dtypes: ['fp32', 'fp16', 'bf16'],
    dtypeRefusal: (dtype) =>
      `sage quantizes its own inputs (INT8 Q and K, FP16 or FP8 P·V) and takes fp16, bf16 or fp32 tensors; ${dtype} is not one of them — pick fp16 or bf16 (the kernel's) or fp32`,
    headDims: {
      max: 128,
      maxRefusal: (d) => `SageAttention's kernels (v1 Triton, v2 SM89) take head dims up to 128, got ${d}`,
      equal: (d, dv) => `SageAttention's kernels take one head dim for Q, K and V, got d = ${d}, dv = ${dv}`,
    },
    lacks: {
      alibi: 'SageAttention has no ALiBi; run ALiBi with fa2, fa3 or fa4',
      softcap: 'SageAttention has no softcap; run softcap with fa2, fa3 or fa4',
      sinks: 'SageAttention has no attention-sink logits; run sinks with fa2, fa3 or fa4',
    },
  },
  rowStats: 'on-chip',
  serving: { pageTableEntryBytes: 4, splits: false },
});
