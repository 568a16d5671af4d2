// Standard (unfused) attention: S, then P, then O, each a full pass over HBM.

import { standardBackward } from './backward.ts';
import { standard } from './forward.ts';
import { defineAlgorithm } from '../descriptor.ts';

export const standardAlgorithm = defineAlgorithm({
  id: 'standard',
  name: standard.name,
  title: 'Standard attention',
  forward: standard,
  switches: {},
  backward: { algorithm: standardBackward, switches: {}, dqAccumulation: false, scaleLater: false },
  defaults: { gpu: null, dtype: 'fp32', nq: 64, nk: 64, d: 32, dv: 32, tile: { blockM: 16, blockN: 16 } },
  tiles: () => ({ blockM: 16, blockN: 16 }),
  // The reference takes any mask, the attention chunk included.
  supports: { dtypes: ['fp32', 'fp16', 'bf16'], attentionChunk: true },
  rowStats: 'materialized',
  serving: { pageTableEntryBytes: 4, splits: false },
});
