// A compare pane's name in the tables, the difference pickers and the sync notices: its
// algorithm, the dtype it ran when it chose one, its tile, its changed features and mask.

import type { LoadRequest } from '../../engine/api.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { requestDtype } from './pane-dtype.ts';

/** `shared`: the shared request as loaded; over tensors from files the pane ran the files' dtype, not its own, and says so. */
export function paneLabel(c: ComparePaneConfig, index: number, shared: LoadRequest | undefined): string {
  const ran = c.dtype && (shared ? requestDtype(c, shared) : c.dtype);
  const tile = c.blockM || c.blockN ? ` ${c.blockM || 'auto'}×${c.blockN || 'auto'}` : '';
  const feats = Object.entries(c.features)
    .map(([k, v]) => (typeof v === 'boolean' ? `${v ? '+' : '−'}${k}` : `${k}=${v}`))
    .join(' ');
  const mask = c.maskMod !== undefined ? ` mask ${c.maskMod.length > 24 ? `${c.maskMod.slice(0, 24)}…` : c.maskMod || 'none'}` : '';
  return `${index + 1}: ${c.algorithm}${ran ? ` ${ran}` : ''}${tile}${feats ? ` ${feats}` : ''}${mask}`;
}
