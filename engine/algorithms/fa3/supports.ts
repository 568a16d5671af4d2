// What FA3's kernels accept: the descriptor declares it and forward.ts / backward.ts refuse from it.

import type { Supports } from '../capabilities.ts';

export const FA3_SUPPORTS: Supports = {
  dtypes: ['fp32', 'fp16', 'bf16', 'fp8e4m3', 'fp8e5m2'],
  whatIf: { fp8e5m2: 'what-if: FA3 ships e4m3 only' },
  // attention_chunk of mha_fwd (hopper/flash_api.cpp@0251105a l. 701, 148-160).
  attentionChunk: true,
  headDims: { max: 256, maxRefusal: (d) => `FA3 instantiates head dims up to 256, got ${d}` },
  fp8: {
    lacks: {
      alibi: 'FA3 has no ALiBi, and FlashScope models its FP8 path as the kernel ships it; run ALiBi in fp16 or bf16',
      sinks: 'FA3 FP8 has no attention-sink logits; run sinks in fp16 or bf16',
    },
    headDimPairs: [[192, 128]],
    pairRefusal: (d, dv) => `FA3's FP8 path instantiates d = dv and d 192 with dv 128 only, got d = ${d}, dv = ${dv}`,
  },
};
