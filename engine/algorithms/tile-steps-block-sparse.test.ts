// The steppers built on the shared tile steps walk the block mask: an empty tile is a skip
// step, a full tile runs no mask. Tile classes come from a hand-written predicate, the output
// is checked against float64.

import { describe, expect, it } from 'vitest';
import { randomInputs } from '../core/inputs.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { runToEnd } from '../run.ts';
import { cuteFa2 } from './cute-fa2/forward.ts';
import { fa3 } from './fa3/forward.ts';
import { fmhaV2 } from './fmha-v2/forward.ts';
import type { StepAlgorithm } from './types.ts';

const B = 16;
const window: AttentionProblem = {
  batch: 1,
  hq: 2,
  hk: 2,
  nq: 64,
  nk: 64,
  d: 8,
  dv: 8,
  causal: false,
  dtype: 'fp32',
  mask: maskSpecFrom({ maskMod: 'sliding_window:40' }, { hq: 2, nq: 64, nk: 64 }),
};
const cases: [string, AttentionProblem, (i: number, j: number) => boolean][] = [
  ['sliding_window:40', window, (i, j) => j <= i && j >= i - 40],
  ['built-in causal', { ...window, mask: undefined, causal: true }, (i, j) => j <= i],
];

function classes(p: AttentionProblem, keep: (i: number, j: number) => boolean) {
  let empty = 0;
  let full = 0;
  let partial = 0;
  for (let r0 = 0; r0 < p.nq; r0 += B)
    for (let c0 = 0; c0 < p.nk; c0 += B) {
      let kept = 0;
      for (let i = r0; i < r0 + B; i++) for (let j = c0; j < c0 + B; j++) if (keep(i, j)) kept++;
      if (kept === 0) empty++;
      else if (kept === B * B) full++;
      else partial++;
    }
  return { empty: empty * p.hq, full: full * p.hq, partial: partial * p.hq };
}

const algos: [StepAlgorithm, boolean][] = [
  [fa3, true],
  [fmhaV2, true],
  // CuTe FA2 cuts only the ends of the K/V range; its inner empty tiles run fully masked.
  [cuteFa2, false],
];

describe('steppers on the shared tile steps walk the block mask', () => {
  for (const [algo, skipsAll] of algos)
    for (const [name, p, keep] of cases)
      it(`${algo.id}, ${name}: skip steps for empty tiles, mask checks only on partial ones, output matches float64`, () => {
        const x = randomInputs(p, { seed: 5, distribution: 'normal' });
        const got = runToEnd(algo, p, x, { blockM: B, blockN: B });
        const want = referenceAttention(p, x);
        for (let n = 0; n < want.o.length; n++) expect(Math.abs(got.o[n] - want.o[n])).toBeLessThan(2e-6);
        const c = classes(p, keep);
        expect(c.full * c.partial * c.empty).toBeGreaterThan(0);
        const s = got.counters.sparsity!;
        expect(s.tilesSkipped + s.tilesFull + s.tilesPartial).toBe(c.empty + c.full + c.partial);
        if (skipsAll) {
          expect(s).toMatchObject({ tilesSkipped: c.empty, tilesFull: c.full, tilesPartial: c.partial });
          expect(s.maskEvals).toBe(c.partial * B * B);
          expect(got.counters.hbmRead.K).toBe((c.full + c.partial) * B * p.d * 4);
        } else expect(s.tilesSkipped).toBeGreaterThan(0);
      });
});
