// What fmha_v2's kernels accept: the descriptor declares it and forward.ts refuses from it.

import type { Supports } from '../capabilities.ts';

export const FMHA_V2_SUPPORTS: Supports = {
  dtypes: ['fp32', 'fp16', 'bf16'],
  headDims: { max: 256, maxRefusal: (d) => `fmha_v2 instantiates head dims up to 256, got ${d}` },
};
