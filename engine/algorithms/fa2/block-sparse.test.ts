// FA2 walks the block mask: empty tiles are skipped unloaded, full tiles run no mask, partial
// tiles run it on every entry. Tile classes are counted here from a hand-written predicate,
// the output is checked against float64.

import { describe, expect, it } from 'vitest';
import { randomInputs } from '../../core/inputs.ts';
import { maskSpecFrom } from '../../core/mask-presets.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { runToEnd } from '../../run.ts';
import { fa2 } from './forward.ts';

const B = 16;
const dims = { hq: 2, nq: 40, nk: 56 };
const base: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 40, nk: 56, d: 8, dv: 8, causal: false, dtype: 'fp32' };
const diag = base.nk - base.nq;
const docOf = (pos: number): number => (pos < 12 ? 0 : pos < 40 ? 1 : 2);

/** Per tile: how many of its entries the predicate keeps, over every (b, h). */
function expectedTally(p: AttentionProblem, keep: (h: number, i: number, j: number) => boolean) {
  const t = { tilesSkipped: 0, tilesFull: 0, tilesPartial: 0, skippedFlops: 0, skippedBytes: 0, maskEvals: 0 };
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++)
      for (let r0 = 0; r0 < p.nq; r0 += B)
        for (let c0 = 0; c0 < p.nk; c0 += B) {
          const rows = Math.min(B, p.nq - r0);
          const cols = Math.min(B, p.nk - c0);
          let kept = 0;
          for (let i = r0; i < r0 + rows; i++) for (let j = c0; j < c0 + cols; j++) if (keep(h, i, j)) kept++;
          if (kept === 0) {
            t.tilesSkipped++;
            t.skippedFlops += 2 * rows * cols * (p.d + p.dv);
            t.skippedBytes += cols * (p.d + p.dv) * 4;
          } else if (kept === rows * cols) t.tilesFull++;
          else {
            t.tilesPartial++;
            t.maskEvals += rows * cols;
          }
        }
  return t;
}

const cases: [string, Partial<AttentionProblem>, (h: number, i: number, j: number) => boolean][] = [
  ['built-in causal', { causal: true }, (_h, i, j) => j <= i + diag],
  [
    'sliding_window:9 preset',
    { mask: maskSpecFrom({ maskMod: 'sliding_window:9' }, dims) },
    (_h, i, j) => j <= i + diag && j >= i + diag - 9,
  ],
  ['document ids', { mask: maskSpecFrom({ maskMod: 'document:12,28' }, dims) }, (_h, i, j) => docOf(i + diag) === docOf(j)],
  [
    'a per-head mask_mod',
    { mask: { maskMod: '(h == 0 && kv_idx < 16) || (h == 1 && q_idx >= 32)' } },
    (h, i, j) => (h === 0 && j < 16) || (h === 1 && i >= 32),
  ],
];

describe('fa2 steps through the block mask', () => {
  for (const [name, over, keep] of cases) {
    it(`${name}: skips empty tiles, masks only partial ones, output matches float64`, () => {
      const p = { ...base, ...over };
      const x = randomInputs(p, { seed: 3, distribution: 'normal' });
      const events: TraceEvent[] = [];
      const got = runToEnd(fa2, p, x, { blockM: B, blockN: B, trace: true, onEvent: (e) => events.push(e) });
      const want = referenceAttention(p, x);
      for (let n = 0; n < want.o.length; n++) expect(Math.abs(got.o[n] - want.o[n])).toBeLessThan(2e-6);
      const t = expectedTally(p, keep);
      expect(got.counters.sparsity).toEqual(t);
      expect(t.tilesSkipped).toBeGreaterThan(0);
      // No K/V load and no mask step touches a skipped tile; mask steps only on partial tiles.
      const key = (e: TraceEvent) => `${e.b}.${e.h}.${e.tile.qBlock}.${e.tile.kvBlock}`;
      const skipped = new Set(events.filter((e) => e.kind === 'skip').map(key));
      expect(skipped.size).toBe(t.tilesSkipped);
      expect(events.filter((e) => e.kind !== 'skip' && skipped.has(key(e)))).toEqual([]);
      expect(events.filter((e) => e.kind === 'mask').length).toBe(t.tilesPartial);
      // d = dv: half of the skipped bytes are K's.
      expect(got.counters.hbmRead.K).toBe(p.batch * p.hq * Math.ceil(p.nq / B) * p.nk * p.d * 4 - t.skippedBytes / 2);
    });
  }

  it('a problem with no mask has every tile full and reports no block mask', () => {
    const x = randomInputs(base, { seed: 4 });
    const got = runToEnd(fa2, base, x, { blockM: B, blockN: B });
    expect(got.counters.sparsity).toBeUndefined();
    // Per Q tile: load Q, 7 steps per K/V tile but no rescale on the first, normalize, write.
    expect(got.counters.steps).toBe(base.hq * 3 * (1 + 7 * 4 - 1 + 2));
  });
});
