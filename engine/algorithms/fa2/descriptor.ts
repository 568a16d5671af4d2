// FlashAttention-2: the K/V loop inside, one Q tile per CTA, statistics on chip.

import { fa2Backward } from './backward.ts';
import { fa2BwdHw } from './backward-schedule.ts';
import { fa2 } from './forward.ts';
import { defineAlgorithm } from '../descriptor.ts';

export const fa2Algorithm = defineAlgorithm({
  id: 'fa2',
  name: fa2.name,
  title: 'FA2',
  forward: fa2,
  switches: {},
  backward: { algorithm: fa2Backward, switches: {}, dqAccumulation: true, scaleLater: false },
  backwardSchedule: fa2BwdHw,
  backwardGpu: 'a100',
  backwardDtype: 'fp16',
  defaults: { gpu: null, dtype: 'fp32', nq: 64, nk: 64, d: 32, dv: 32, tile: { blockM: 16, blockN: 16 } },
  tiles: () => ({ blockM: 16, blockN: 16 }),
  supports: { dtypes: ['fp32', 'fp16', 'bf16'] },
  rowStats: 'on-chip',
  // The SM80 split kernel keeps one K and one V buffer per CTA.
  serving: { pageTableEntryBytes: 4, splits: false, smemKvStages: 1 },
});
