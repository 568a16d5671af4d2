// What the differences note says of one compare pane: the tile its run resolved, the dtype its
// request carries (requestDtype: imported tensors keep the files' dtype), its GPU and kernel tile.

import { descriptorOf, type LoadRequest } from '../../engine/api.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import type { PaneFacts } from './pane-differences.ts';
import { requestDtype } from './pane-dtype.ts';
import { paneKernelTile } from './pane-kernel-tile.ts';

export function paneFacts(
  shared: LoadRequest,
  c: ComparePaneConfig,
  index: number,
  blocks: { blockM: number; blockN: number },
  gpu: string | undefined,
): PaneFacts {
  return {
    pane: index + 1,
    tile: [blocks.blockM, blocks.blockN],
    dtype: requestDtype(c, shared),
    gpu,
    kernelTile: paneKernelTile(shared, c),
    name: descriptorOf(c.algorithm).name,
  };
}
