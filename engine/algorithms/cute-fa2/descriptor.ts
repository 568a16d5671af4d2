// FlashAttention-2 as the CuTe SM80 kernel runs it: four warps on its one 128 × 64 tile.

import { fa2BwdHw } from '../fa2/backward-schedule.ts';
import { defineAlgorithm } from '../descriptor.ts';
import { CUTE_FA2_FEATURES, cuteFa2 } from './forward.ts';
import { CUTE_FA2_TILE } from './tile.ts';
import { cuteFa2Hw } from './schedule.ts';

export const cuteFa2Algorithm = defineAlgorithm({
  id: 'cute-fa2',
  name: cuteFa2.name,
  title: 'CuTe FA2',
  forward: cuteFa2,
  switches: CUTE_FA2_FEATURES,
  schedule: cuteFa2Hw,
  // Its backward kernel is FA2's SM80 one.
  backwardSchedule: fa2BwdHw,
  backwardGpu: 'a100',
  defaults: { gpu: 'a100', dtype: 'fp16', nq: 512, nk: 512, d: 64, dv: 64 },
  tiles: () => ({ blockM: CUTE_FA2_TILE.blockM, blockN: CUTE_FA2_TILE.blockN }),
  supports: { dtypes: ['fp32', 'fp16', 'bf16'] },
  rowStats: 'on-chip',
  serving: { pageTableEntryBytes: 4, splits: false },
});
