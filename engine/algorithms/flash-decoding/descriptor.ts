// Flash-decoding: split-KV over CTAs for few query rows, then a combine kernel.

import { defineAlgorithm } from '../descriptor.ts';
import { DECODING_BLOCK_M, FLASH_DECODING_FEATURES, decodingBlockN, flashDecoding } from './forward.ts';
import { flashDecodingHw } from './schedule.ts';

export const flashDecodingAlgorithm = defineAlgorithm({
  id: 'flash-decoding',
  name: flashDecoding.name,
  title: 'Flash-Decoding',
  forward: flashDecoding,
  switches: FLASH_DECODING_FEATURES,
  schedule: flashDecodingHw,
  defaults: { gpu: 'h100', dtype: 'fp16', nq: 1, nk: 2048, d: 128, dv: 128 },
  tiles: (p) => ({ blockM: DECODING_BLOCK_M, blockN: decodingBlockN(p.d) }),
  supports: { dtypes: ['fp32', 'fp16', 'bf16'] },
  rowStats: 'on-chip',
  serving: { pagedBlockN: (p) => decodingBlockN(p.d), pageTableEntryBytes: 4, smemKvStages: 1, splits: true, pagedDefault: true },
});
