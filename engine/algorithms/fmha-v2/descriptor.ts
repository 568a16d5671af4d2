// TensorRT-LLM's fmha_v2 on Ada (SM89): warp-tiled, double-buffered K/V, optional fp16 accumulation.

import { defineAlgorithm } from '../descriptor.ts';
import { FMHA_V2_FEATURES, fmhaV2, fmhaV2DefaultTile } from './forward.ts';
import { fmhaV2Hw } from './schedule.ts';
import { FMHA_V2_SUPPORTS } from './supports.ts';

export const fmhaV2Algorithm = defineAlgorithm({
  id: 'fmha-v2',
  name: fmhaV2.name,
  title: 'fmha_v2',
  forward: fmhaV2,
  switches: FMHA_V2_FEATURES,
  schedule: fmhaV2Hw,
  defaults: { gpu: 'rtx4060', dtype: 'fp16', nq: 512, nk: 512, d: 64, dv: 64 },
  tiles: (p) => fmhaV2DefaultTile(p),
  supports: FMHA_V2_SUPPORTS,
  rowStats: 'on-chip',
  serving: {
    pagedBlockN: (p) => fmhaV2DefaultTile(p).blockN,
    // Its paged kernels read a table of 64-bit page pointers.
    pageTableEntryBytes: 8,
    smemKvStages: 2,
    splits: false,
    pageNote: 'fmha_v2 copies the next tile’s pages while it computes on the current one',
  },
});
