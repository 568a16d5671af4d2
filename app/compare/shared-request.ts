// The request a compare pane loads: the shared problem (the debugger pane's loaded run,
// or its form when nothing is loaded yet; imported tensors included) with the pane's own
// algorithm, dtype, tiles and features.

import { type LoadRequest, maskFromFields } from '../../engine/api.ts';
import { withImported } from '../import/import-store.ts';
import { DEFAULT_FORM, formToRequest, tileBlocks } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { featuresFor, requestDtype } from './pane-dtype.ts';

export const SHARED_PANE = 'main';

export function sharedRequest(): LoadRequest {
  const s = useApp.getState().problem[SHARED_PANE];
  if (s?.applied) return s.applied;
  return withImported(SHARED_PANE, formToRequest(s?.form ?? DEFAULT_FORM));
}

export function paneRequest(base: LoadRequest, c: ComparePaneConfig): LoadRequest {
  const blocks = tileBlocks(c.blockM, c.blockN);
  // A pane with no tile of its own sizes from the shared on-chip memory when the shared problem does.
  if (blocks.blockM === undefined && blocks.blockN === undefined && base.blocks.sramBytes !== undefined)
    blocks.sramBytes = base.blocks.sramBytes;
  const dtype = requestDtype(c, base);
  const req: LoadRequest = { ...base, algorithm: c.algorithm, blocks, problem: { ...base.problem, dtype } };
  if (c.maskMod !== undefined) {
    // The pane's mask_mod replaces the shared one; the shared score_mod and its arrays stay.
    const own = maskFromFields({ maskMod: c.maskMod, scoreMod: '' }, base.problem);
    const { maskMod: _shared, ...rest } = base.problem.mask ?? {};
    const mask = { ...rest, ...(own?.maskMod !== undefined ? { maskMod: own.maskMod } : {}) };
    if (own?.aux) mask.aux = { ...rest.aux, ...own.aux };
    if (mask.maskMod === undefined && mask.scoreMod === undefined) delete req.problem.mask;
    else req.problem.mask = mask;
  }
  const features = featuresFor(c.algorithm, dtype, c.features);
  if (Object.keys(features).length) req.features = features;
  else delete req.features;
  return req;
}
