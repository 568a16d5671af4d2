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
import { fa4 } from './fa4/forward.ts';
import { flashDecoding } from './flash-decoding/forward.ts';
import { fmhaV2 } from './fmha-v2/forward.ts';
import { sage } from './sage/forward.ts';
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

/** Entries of tile (Q tile qi, K/V tile kj) the predicate keeps. */
function kept(qi: number, kj: number, keep: (i: number, j: number) => boolean): number {
  let n = 0;
  for (let i = qi * B; i < (qi + 1) * B; i++) for (let j = kj * B; j < (kj + 1) * B; j++) if (keep(i, j)) n++;
  return n;
}

function classes(p: AttentionProblem, keep: (i: number, j: number) => boolean) {
  let empty = 0;
  let full = 0;
  let partial = 0;
  for (let qi = 0; qi < p.nq / B; qi++)
    for (let kj = 0; kj < p.nk / B; kj++) {
      const n = kept(qi, kj, keep);
      if (n === 0) empty++;
      else if (n === B * B) full++;
      else partial++;
    }
  return { empty: empty * p.hq, full: full * p.hq, partial: partial * p.hq };
}

/** The sparsity counters a run reports for tile classes `c`: every entry of a partial tile checked once. */
function expectCounters(sparsity: unknown, c: { empty: number; full: number; partial: number }): void {
  expect(sparsity).toMatchObject({ tilesSkipped: c.empty, tilesFull: c.full, tilesPartial: c.partial, maskEvals: c.partial * B * B });
}

/** FA4's CTA holds two Q tiles and skips a K/V tile only when both find it empty; a lone empty tile runs the mask. */
function pairClasses(p: AttentionProblem, keep: (i: number, j: number) => boolean) {
  let empty = 0;
  let full = 0;
  let partial = 0;
  for (let qi = 0; qi < p.nq / B; qi += 2)
    for (let kj = 0; kj < p.nk / B; kj++) {
      const n = [kept(qi, kj, keep), kept(qi + 1, kj, keep)];
      if (n[0] + n[1] === 0) empty += 2;
      else for (const k of n) k === B * B ? full++ : partial++;
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

  for (const [name, p, keep] of cases) {
    it(`fa4, ${name}: a K/V tile empty for both Q tiles of a CTA is skipped, the rest run the mask unless full`, () => {
      // Past 128 query rows the kernel takes two Q tiles per CTA (q_stage 2).
      const p4 = {
        ...p,
        nq: 160,
        nk: 160,
        ...(p.mask && { mask: maskSpecFrom({ maskMod: 'sliding_window:40' }, { hq: 2, nq: 160, nk: 160 }) }),
      };
      const x = randomInputs(p4, { seed: 5, distribution: 'normal' });
      const got = runToEnd(fa4, p4, x, { blockM: B, blockN: B, features: { lazyRescale: false, exp2Emulation: false } });
      const want = referenceAttention(p4, x);
      for (let n = 0; n < want.o.length; n++) expect(Math.abs(got.o[n] - want.o[n])).toBeLessThan(2e-6);
      const c = pairClasses(p4, keep);
      // The pairing matters here: some empty tile shares its CTA with a visited one.
      expect(c.empty).toBeLessThan(classes(p4, keep).empty);
      expect(c.empty * c.full * c.partial).toBeGreaterThan(0);
      expectCounters(got.counters.sparsity, c);
    });

    it(`flash-decoding, ${name}: each split skips its own empty tiles; output matches float64`, () => {
      const x = randomInputs(p, { seed: 5, distribution: 'normal' });
      const got = runToEnd(flashDecoding, p, x, { blockM: B, blockN: B, features: { splits: 2 } });
      expect(got.stats?.splits).toBe(2);
      const want = referenceAttention(p, x);
      for (let n = 0; n < want.o.length; n++) expect(Math.abs(got.o[n] - want.o[n])).toBeLessThan(2e-6);
      const c = classes(p, keep);
      expectCounters(got.counters.sparsity, c);
      expect(got.counters.hbmRead.K).toBe((c.full + c.partial) * B * p.d * 4);
    });

    it(`sage, ${name}: INT8 scores over the same block mask; output near float64 and far from the unmasked one`, () => {
      const p16 = { ...p, dtype: 'fp16' as const };
      const x = randomInputs(p16, { seed: 5, distribution: 'normal' });
      const got = runToEnd(sage, p16, x, { blockM: B, blockN: B, features: { version: 1 } });
      const err = (want: Float64Array | Float32Array) => Math.max(...want.map((w, n) => Math.abs(got.o[n] - w)));
      expect(err(referenceAttention(p16, x).o)).toBeLessThan(0.03);
      expect(err(referenceAttention({ ...p16, causal: false, mask: undefined }, x).o)).toBeGreaterThan(0.3);
      const c = classes(p, keep);
      expectCounters(got.counters.sparsity, c);
    });
  }
});
