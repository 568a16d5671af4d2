// FlashAttention (FA1): tiles sized from the on-chip memory, O, m and l rewritten in HBM per K/V block.

import { fa1Backward } from './backward.ts';
import { fa1 } from './forward.ts';
import { defineAlgorithm } from '../descriptor.ts';

export const fa1Algorithm = defineAlgorithm({
  id: 'fa1',
  name: fa1.name,
  title: 'FA1',
  forward: fa1,
  switches: {},
  backward: { algorithm: fa1Backward, switches: {}, dqAccumulation: false, scaleLater: false },
  defaults: { gpu: null, dtype: 'fp32', nq: 64, nk: 64, d: 32, dv: 32, tile: { blockM: 16, blockN: 16 } },
  tiles: () => ({ blockM: 16, blockN: 16 }),
  supports: { dtypes: ['fp32', 'fp16', 'bf16'] },
  rowStats: 'hbm',
  serving: { pageTableEntryBytes: 4, splits: false },
});
