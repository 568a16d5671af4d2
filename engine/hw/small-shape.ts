// The small problem the hardware model's unit tests start from, so each test names only what it changes.

import type { ProblemShape } from './model.ts';

/** One head, 512 × 512, d = dv = 128, fp16, no mask, with the fields a test changes. */
export const smallShape = (o: Partial<ProblemShape> = {}): ProblemShape => ({
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 512,
  nk: 512,
  d: 128,
  dv: 128,
  dtype: 'fp16',
  causal: false,
  ...o,
});
