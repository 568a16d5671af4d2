// The receiving side of FrameUpdate: keeps a Frame whose big arrays are replaced by a full
// update and patched in place by a partial one. Used by the app's pane controller and by
// the tests, so both see frames exactly the same way.

import type { Frame, FrameUpdate } from './protocol.ts';
import { applyBackwardPatch } from './backward-state.ts';

export function applyUpdate(prev: Frame | undefined, u: FrameUpdate): Frame {
  const { patch, ...rest } = u;
  const seq = (prev?.seq ?? 0) + 1;
  const bwd = patch.bwd && applyBackwardPatch(patch.full ? undefined : prev?.bwd, patch.bwd, u.nq, u.nk);
  if (patch.full)
    return { ...rest, s: patch.s, p: patch.p, mask: patch.mask, o: patch.o, oState: patch.oState, m: patch.m, l: patch.l, bwd, seq };
  if (!prev || prev.nq !== u.nq || prev.nk !== u.nk || prev.dv !== u.dv) {
    throw new Error('a partial frame update arrived without the frame it patches');
  }
  const w = patch.cols[1] - patch.cols[0];
  for (let r = 0; r < patch.rows[1] - patch.rows[0]; r++) {
    const at = (patch.rows[0] + r) * u.nk + patch.cols[0];
    prev.s.set(patch.s.subarray(r * w, (r + 1) * w), at);
    prev.p.set(patch.p.subarray(r * w, (r + 1) * w), at);
    prev.mask.set(patch.mask.subarray(r * w, (r + 1) * w), at);
  }
  prev.o.set(patch.o, patch.oRows[0] * u.dv);
  prev.oState.set(patch.oState, patch.oRows[0]);
  prev.m.set(patch.m, patch.oRows[0]);
  prev.l.set(patch.l, patch.oRows[0]);
  const changed = { rows: patch.rows, cols: patch.cols, oRows: patch.oRows };
  return { ...rest, s: prev.s, p: prev.p, mask: prev.mask, o: prev.o, oState: prev.oState, m: prev.m, l: prev.l, bwd, seq, changed };
}
