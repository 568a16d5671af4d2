// What FA4's kernels accept: the descriptor declares it and backward.ts refuses from it.

import type { Supports } from '../capabilities.ts';

export const FA4_SUPPORTS: Supports = { dtypes: ['fp32', 'fp16', 'bf16', 'fp8e4m3', 'fp8e5m2'] };
