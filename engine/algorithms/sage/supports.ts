// What SageAttention's kernels accept: the descriptor declares it and forward.ts refuses from it.

import type { Supports } from '../capabilities.ts';

export const SAGE_SUPPORTS: Supports = {
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
};
