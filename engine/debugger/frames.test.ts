// A patched frame says what its update changed, and that region holds every changed cell:
// the heatmaps repaint only it, so a cell changed outside it would stay stale on screen.

import { expect, it } from 'vitest';
import { DEFAULT_PROBLEM } from '../core/problem.ts';
import type { LoadRequest } from '../request.ts';
import { applyUpdate } from './frames.ts';
import type { Frame } from './protocol.ts';
import { DebuggerSession } from './session.ts';

it('every S, P, mask and O cell a step changes lies inside the frame’s changed region; a full update has none', async () => {
  const req: LoadRequest = {
    algorithm: 'fa2',
    problem: { ...DEFAULT_PROBLEM, nq: 40, nk: 36, d: 8, dv: 8, causal: true },
    seed: 3,
    distribution: 'normal',
    blocks: { blockM: 16, blockN: 16 },
  };
  const s = new DebuggerSession();
  const { total } = await s.load(req);
  let f: Frame = applyUpdate(undefined, await s.seek(0, true));
  expect(f.changed).toBeUndefined();
  let outside = 0;
  let inside = 0;
  for (let k = 1; k < total; k++) {
    const before = { s: f.s.slice(), p: f.p.slice(), mask: f.mask.slice(), o: f.o.slice() };
    f = applyUpdate(f, await s.step(1, 'phase'));
    // A full update (a new head) has no region: the heatmaps repaint everything then.
    const ch = f.changed;
    if (!ch) continue;
    const inS = (r: number, c: number) => r >= ch.rows[0] && r < ch.rows[1] && c >= ch.cols[0] && c < ch.cols[1];
    for (let r = 0; r < f.nq; r++) {
      for (let c = 0; c < f.nk; c++) {
        const i = r * f.nk + c;
        const same = Object.is(before.s[i], f.s[i]) && Object.is(before.p[i], f.p[i]) && before.mask[i] === f.mask[i];
        if (!same) inS(r, c) ? inside++ : outside++;
      }
      for (let c = 0; c < f.dv; c++)
        if (!Object.is(before.o[r * f.dv + c], f.o[r * f.dv + c]) && !(r >= ch.oRows[0] && r < ch.oRows[1])) outside++;
    }
  }
  expect(outside).toBe(0);
  expect(inside).toBeGreaterThan(0);
});

it('a move that changes more than half the score matrix arrives whole, equal to a full seek to the same step', async () => {
  const req: LoadRequest = {
    algorithm: 'fa2',
    problem: { ...DEFAULT_PROBLEM, nq: 40, nk: 36, d: 8, dv: 8 },
    seed: 5,
    distribution: 'normal',
    blocks: { blockM: 16, blockN: 16 },
  };
  const s = new DebuggerSession();
  const { total } = await s.load(req);
  // From the last step back to the first, within one head: the undone steps wrote nearly every cell.
  const end = applyUpdate(undefined, await s.seek(total - 1, true));
  const u = await s.seek(0);
  expect(u.patch.full).toBe(true);
  const far = applyUpdate(end, u);
  expect(far.changed).toBeUndefined();
  const whole = applyUpdate(undefined, await s.seek(0, true));
  for (const k of ['s', 'p', 'mask', 'o', 'm', 'l'] as const) expect(Array.from(far[k])).toEqual(Array.from(whole[k]));
  // One step on changes one tile at most: a patch again.
  const next = await s.step(1, 'phase');
  expect(next.patch.full).toBe(false);
});
