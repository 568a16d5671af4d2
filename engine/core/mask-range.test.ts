// The per-row key range read off a mask's tree: with the residual, it keeps exactly the pairs a
// hand-written predicate keeps; linear conjuncts become bounds, the rest stays a residual.

import { describe, expect, it } from 'vitest';
import { maskSpecFrom } from './mask-presets.ts';
import { parseMask } from './mask-language.ts';
import { maskRange } from './mask-range.ts';
import type { AttentionProblem } from './problem.ts';
import { scoreModel, visible, visibleRange } from './scores.ts';

const nq = 23;
const nk = 31;
const diag = nk - nq;
const base: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq, nk, d: 4, dv: 4, causal: false, dtype: 'fp32' };

const cases: [string, Partial<AttentionProblem>, (h: number, i: number, j: number) => boolean][] = [
  ['built-in causal', { causal: true }, (_h, i, j) => j <= i + diag],
  ['built-in window 4 back, 2 ahead', { window: { left: 4, right: 2 } }, (_h, i, j) => j >= i + diag - 4 && j <= i + diag + 2],
  [
    'causal preset + built-in window 5 back',
    { causal: true, window: { left: 5, right: -1 }, mask: { maskMod: 'kv_idx <= q_idx + (nk - nq)' } },
    (_h, i, j) => j <= i + diag && j >= i + diag - 5,
  ],
  [
    'strict bounds, a slope of 2, nq and nk',
    { mask: { maskMod: 'kv_idx > 2 * q_idx - 20 && kv_idx < nk - 3' } },
    (_h, i, j) => j > 2 * i - 20 && j < nk - 3,
  ],
  ['kv_idx on the right, negated', { mask: { maskMod: 'q_idx + 3 >= kv_idx && -kv_idx < -4' } }, (_h, i, j) => i + 3 >= j && -j < -4],
  ['equality', { mask: { maskMod: 'kv_idx == q_idx + 5' } }, (_h, i, j) => j === i + 5],
  [
    'a bound and a residual on the head',
    { mask: { maskMod: 'kv_idx <= q_idx && (h == 0 || kv_idx % 2 == 0)' } },
    (h, i, j) => j <= i && (h === 0 || j % 2 === 0),
  ],
  ['a disjunction is all residual', { mask: { maskMod: 'kv_idx < 3 || kv_idx >= q_idx' } }, (_h, i, j) => j < 3 || j >= i],
  // One document of 10 tokens, the rest a second one.
  [
    'the document preset (aux reads) is all residual',
    { mask: maskSpecFrom({ maskMod: 'document:10' }, { hq: 2, nq, nk }) },
    (_h, i, j) => i + diag < 10 === j < 10,
  ],
];

describe('the key range of a mask, read off its tree', () => {
  for (const [name, over, keep] of cases)
    it(`${name}: range and residual keep exactly the predicate's pairs`, () => {
      const sm = scoreModel({ ...base, ...over });
      for (let h = 0; h < base.hq; h++)
        for (let i = 0; i < nq; i++) {
          const [lo, hi] = visibleRange(sm, i, nk);
          for (let j = 0; j < nk; j++) {
            expect(visible(sm, i, j, 0, h), `h ${h} q ${i} kv ${j}`).toBe(keep(h, i, j));
            if (j < lo || j >= hi) expect(keep(h, i, j)).toBe(false);
          }
        }
    });

  it('linear conjuncts become bounds and leave no residual; the rest stays', () => {
    const m = (t: string) => parseMask(t, 'mask_mod');
    const causal = maskRange([m('kv_idx <= q_idx + (nk - nq)')], nq, nk);
    expect(causal).toEqual({ lower: [], upper: [{ a: 1, c: diag }], residual: undefined });
    const both = maskRange([m('kv_idx >= q_idx - 4 && kv_idx < 2 * q_idx')], nq, nk);
    expect(both).toMatchObject({ lower: [{ a: 1, c: -4 }], upper: [{ a: 2, c: -1 }], residual: undefined });
    expect(maskRange([m('kv_idx <= q_idx && kv_idx % 2 == 0')], nq, nk).residual).toBeDefined();
    expect(maskRange([m('kv_idx * kv_idx <= q_idx')], nq, nk)).toMatchObject({ lower: [], upper: [] });
  });

  it('bounds are taken only before the first aux read, so a read out of range still fails where it did', () => {
    const aux = new Map([['doc', 'int' as const]]);
    const r = maskRange([parseMask('doc[kv_idx] == 0 && kv_idx <= q_idx', 'mask_mod', aux)], nq, nk);
    expect(r.upper).toEqual([]);
    const sm = scoreModel({ ...base, mask: { maskMod: 'doc[kv_idx + 20] == 0 && kv_idx <= q_idx', aux: { doc: Array(40).fill(0) } } });
    // kv 25 is past q 0's bound, but the aux read comes first and is out of range there.
    expect(() => visible(sm, 0, 25, 0, 0)).toThrow('doc[45]');
  });
});
