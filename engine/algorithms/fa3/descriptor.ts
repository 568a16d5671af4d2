// FlashAttention-3 on Hopper (SM90): producer/consumer warpgroups, ping-pong, intra-warpgroup overlap, FP8.

import { FA3_BACKWARD_FEATURES, fa3Backward } from './backward.ts';
import { fa3BwdHw } from './backward-schedule.ts';
import { FA3_FEATURES, fa3, fa3DefaultTile } from './forward.ts';
import { fa3Hw } from './schedule.ts';
import { FA3_SUPPORTS } from './supports.ts';
import { defineAlgorithm } from '../descriptor.ts';

export const fa3Algorithm = defineAlgorithm({
  id: 'fa3',
  name: fa3.name,
  title: 'FA3',
  forward: fa3,
  switches: FA3_FEATURES,
  backward: { algorithm: fa3Backward, switches: FA3_BACKWARD_FEATURES, dqAccumulation: true, scaleLater: true },
  schedule: fa3Hw,
  backwardSchedule: fa3BwdHw,
  backwardGpu: 'h100',
  registerNote: 'setmaxnreg moves them from the producer to the consumers',
  defaults: { gpu: 'h100', dtype: 'fp16', nq: 512, nk: 512, d: 128, dv: 128 },
  tiles: (p) => fa3DefaultTile({ ...p, batch: 1, hq: 1, hk: 1, nq: 1, nk: 1 }),
  supports: FA3_SUPPORTS,
  rowStats: 'on-chip',
  serving: { pageTableEntryBytes: 4, splits: false },
});
