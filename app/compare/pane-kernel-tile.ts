// The tile a compare pane's shipped kernel is built with: what the pane's load runs when its
// Br and Bc are empty, resolved the one way the session resolves it (passBlocks), so the
// differences note names the tile the loaded run shows, for the pass it runs.

import { hasKernel, type LoadRequest, passBlocks } from '../../engine/api.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { paneRequest } from './shared-request.ts';

/** The pane's kernel tile as [Br, Bc], or undefined for an algorithm whose tile is free. */
export function paneKernelTile(shared: LoadRequest, c: ComparePaneConfig): [number, number] | undefined {
  if (!hasKernel(c.algorithm)) return undefined;
  const req = paneRequest(shared, { ...c, blockM: '', blockN: '' });
  const tile = passBlocks(req, req.problem);
  return [tile.blockM, tile.blockN];
}
