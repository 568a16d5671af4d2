// FA1 and standard attention under the block mask. FA1 skips empty tiles (and never loads a
// K/V block all of whose tiles are empty), runs no mask on full tiles; standard attention has
// no tiles and reports only its mask checks. Tile classes come from a hand-written predicate,
// the outputs are checked against float64, the spared work against the dense run's counters.

import { describe, expect, it } from 'vitest';
import { totalBytes } from '../../core/counters.ts';
import { randomInputs } from '../../core/inputs.ts';
import { maskSpecFrom } from '../../core/mask-presets.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { runToEnd } from '../../run.ts';
import { standard } from '../standard/forward.ts';
import { fa1 } from './forward.ts';

const B = 16;
const dims = { hq: 2, nq: 40, nk: 56 };
const base: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 40, nk: 56, d: 8, dv: 8, causal: false, dtype: 'fp32' };
const diag = base.nk - base.nq;

const cases: [string, Partial<AttentionProblem>, (h: number, i: number, j: number) => boolean][] = [
  ['built-in causal', { causal: true }, (_h, i, j) => j <= i + diag],
  [
    'sliding_window:9 preset',
    { mask: maskSpecFrom({ maskMod: 'sliding_window:9' }, dims) },
    (_h, i, j) => j <= i + diag && j >= i + diag - 9,
  ],
  [
    'a per-head mask_mod that empties a whole K/V block of head 1',
    { mask: { maskMod: '(h == 0 && kv_idx < 16) || (h == 1 && kv_idx >= 16 && q_idx >= 20)' } },
    (h, i, j) => (h === 0 && j < 16) || (h === 1 && j >= 16 && i >= 20),
  ],
];

function classes(p: AttentionProblem, keep: (h: number, i: number, j: number) => boolean) {
  const t = { tilesSkipped: 0, tilesFull: 0, tilesPartial: 0, skippedFlops: 0, maskEvals: 0, unloadedKv: 0 };
  for (let h = 0; h < p.hq; h++)
    for (let c0 = 0; c0 < p.nk; c0 += B) {
      const cols = Math.min(B, p.nk - c0);
      let columnEmpty = true;
      for (let r0 = 0; r0 < p.nq; r0 += B) {
        const rows = Math.min(B, p.nq - r0);
        let kept = 0;
        for (let i = r0; i < r0 + rows; i++) for (let j = c0; j < c0 + cols; j++) if (keep(h, i, j)) kept++;
        if (kept > 0) columnEmpty = false;
        if (kept === 0) {
          t.tilesSkipped++;
          t.skippedFlops += 2 * rows * cols * (p.d + p.dv);
        } else if (kept === rows * cols) t.tilesFull++;
        else {
          t.tilesPartial++;
          t.maskEvals += rows * cols;
        }
      }
      if (columnEmpty) t.unloadedKv++;
    }
  return t;
}

const hbm = (c: { hbmRead: object; hbmWritten: object }) => totalBytes(c.hbmRead) + totalBytes(c.hbmWritten);

describe('fa1 steps through the block mask', () => {
  for (const [name, over, keep] of cases)
    it(`${name}: skips empty tiles, masks only partial ones, spares exactly what the dense run spends more; output matches float64`, () => {
      const p = { ...base, ...over };
      const x = randomInputs(p, { seed: 3, distribution: 'normal' });
      const events: TraceEvent[] = [];
      const got = runToEnd(fa1, p, x, { blockM: B, blockN: B, trace: true, onEvent: (e) => events.push(e) });
      const want = referenceAttention(p, x);
      for (let n = 0; n < want.o.length; n++) expect(Math.abs(got.o[n] - want.o[n])).toBeLessThan(2e-6);

      const t = classes(p, keep);
      expect(t.tilesSkipped * t.tilesPartial).toBeGreaterThan(0);
      const s = got.counters.sparsity!;
      expect(s).toMatchObject({
        tilesSkipped: t.tilesSkipped,
        tilesFull: t.tilesFull,
        tilesPartial: t.tilesPartial,
        skippedFlops: t.skippedFlops,
        maskEvals: t.maskEvals,
      });
      const dense = runToEnd(fa1, base, x, { blockM: B, blockN: B });
      expect(dense.counters.matmulFlops - got.counters.matmulFlops).toBe(s.skippedFlops);
      expect(hbm(dense.counters) - hbm(got.counters)).toBe(s.skippedBytes);
      const kvLoads = events.filter((e) => e.line === 'fa1.loadKV').length;
      expect(kvLoads).toBe(p.hq * Math.ceil(p.nk / B) - t.unloadedKv);

      const key = (e: TraceEvent) => `${e.b}.${e.h}.${e.tile.qBlock}.${e.tile.kvBlock}`;
      const skipped = new Set(events.filter((e) => e.kind === 'skip').map(key));
      expect(skipped.size).toBe(t.tilesSkipped);
      expect(events.filter((e) => e.kind !== 'skip' && skipped.has(key(e)))).toEqual([]);
      expect(events.filter((e) => e.kind === 'mask').length).toBe(t.tilesPartial);
    });

  it('the per-head mask leaves a K/V block of head 1 unloaded', () => {
    expect(classes({ ...base, ...cases[2][1] }, cases[2][2]).unloadedKv).toBeGreaterThan(0);
  });

  it('a problem with no mask reports no block mask', () => {
    const got = runToEnd(fa1, base, randomInputs(base, { seed: 4 }), { blockM: B, blockN: B });
    expect(got.counters.sparsity).toBeUndefined();
  });
});

describe('standard attention has no tiles to skip', () => {
  for (const [name, over, keep] of cases)
    it(`${name}: reports one mask check per entry of S and no tiles; output matches float64`, () => {
      const p = { ...base, ...over };
      const x = randomInputs(p, { seed: 3, distribution: 'normal' });
      const events: TraceEvent[] = [];
      const got = runToEnd(standard, p, x, { blockM: B, trace: true, onEvent: (e) => events.push(e) });
      const want = referenceAttention(p, x);
      for (let n = 0; n < want.o.length; n++) expect(Math.abs(got.o[n] - want.o[n])).toBeLessThan(2e-6);
      expect(got.counters.sparsity).toEqual({
        tilesSkipped: 0,
        tilesFull: 0,
        tilesPartial: 0,
        skippedFlops: 0,
        skippedBytes: 0,
        maskEvals: p.hq * p.nq * p.nk,
      });
      // A mask step for each row block where the predicate hides some key, none elsewhere.
      let hiding = 0;
      for (let h = 0; h < p.hq; h++)
        for (let r0 = 0; r0 < p.nq; r0 += B) {
          let hides = false;
          for (let i = r0; i < Math.min(p.nq, r0 + B); i++) for (let j = 0; j < p.nk; j++) hides ||= !keep(h, i, j);
          if (hides) hiding++;
        }
      expect(events.filter((e) => e.kind === 'mask').length).toBe(hiding);
      expect(events.filter((e) => e.kind === 'skip')).toEqual([]);
    });

  it('a problem with no mask reports no mask checks', () => {
    const got = runToEnd(standard, base, randomInputs(base, { seed: 4 }), { blockM: B });
    expect(got.counters.sparsity).toBeUndefined();
  });
});
