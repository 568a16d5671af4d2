import { describe, expect, it } from 'vitest';
import { randomInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import { runToEnd } from '../../run.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { accuracyMatrix, maxAbs } from '../accuracy-matrix.ts';
import { flashDecoding, numSplitsHeuristic } from './forward.ts';

describe('flash-decoding against the float64 reference', () => {
  describe('heuristic split count', () => {
    accuracyMatrix(flashDecoding, { dims: [64, 128, 256] });
  });
  // fp32 with explicit split counts and random tiles is covered by hw-algorithms.property.test.ts.
  describe('3 splits of 16-key blocks (combine on every case, some splits empty)', () => {
    accuracyMatrix(flashDecoding, { dims: [64], dtypes: ['bf16'], options: { blockN: 16, features: { splits: 3 } } });
  });
  for (const dtype of ['fp32', 'fp16'] as const) {
    it(`decoding Nq = 1, GQA 8/2, Nk = 3000, ${dtype}`, () => {
      const p: AttentionProblem = {
        batch: 2,
        hq: 8,
        hk: 2,
        nq: 1,
        nk: 3000,
        d: 128,
        dv: 128,
        causal: true,
        dtype,
        sinks: [0, 1, -1, 2, 0, 0, 0.5, -3],
      };
      const x = randomInputs(p, { seed: 7 });
      const ref = referenceAttention(p, x);
      const evs: TraceEvent[] = [];
      const r = runToEnd(flashDecoding, p, x, { trace: true, onEvent: (e) => evs.push(e) });
      // 16 CTAs on 108 SMs, 24 blocks of 128 keys: the heuristic splits.
      expect(r.stats?.splits).toBe(numSplitsHeuristic(16, 108, 24));
      expect(r.stats?.splits).toBeGreaterThan(1);
      const combines = evs.filter((e) => e.kind === 'combine');
      expect(combines.length).toBe(16);
      const c = combines[0];
      if (c.kind !== 'combine') throw new Error('not a combine event');
      expect(c.splitLse[0].length).toBe(r.stats?.splits);
      expect(c.lse[0]).toBeCloseTo(ref.lse[0], 4);
      const err = maxAbs(r.o, ref.o);
      console.log(`flash-decoding Nq=1 ${dtype}: splits ${r.stats?.splits}, max|err| ${err.toExponential(2)}`);
      expect(err).toBeLessThan(dtype === 'fp32' ? 2e-5 : 2e-3);
    });
  }
});

describe('flash-decoding split heuristic', () => {
  it('matches hand-computed cases', () => {
    // Enough CTAs (>= 0.8 x SMs): no split.
    expect(numSplitsHeuristic(100, 108, 16)).toBe(1);
    // 4 CTAs, 16 blocks: efficiency 4s/108 grows with s; only s = 16 reaches 85% of the best.
    expect(numSplitsHeuristic(4, 108, 16)).toBe(16);
    // 48 CTAs, 64 blocks: s = 2 gives 0.889 of a wave, within 85% of the best (s = 64, 0.98).
    expect(numSplitsHeuristic(48, 108, 64)).toBe(2);
    // Never more splits than blocks.
    expect(numSplitsHeuristic(1, 108, 3)).toBe(3);
  });
});

describe('flash-decoding counters', () => {
  it('match the closed form of split kernel + combine kernel', () => {
    const p: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 5, nk: 96, d: 32, dv: 16, causal: false, dtype: 'bf16' };
    const S = 3;
    const bn = 16;
    const tc = p.nk / bn; // 6 blocks, 2 per split
    const x = randomInputs(p, { seed: 3 });
    const r = runToEnd(flashDecoding, p, x, { blockN: bn, features: { splits: S } });
    const BH = p.batch * p.hq;
    const eb = 2;
    const c = r.counters;
    expect(c.hbmRead).toEqual({
      Q: BH * S * p.nq * p.d * eb, // every split loads the Q tile
      K: BH * p.nk * p.d * eb,
      V: BH * p.nk * p.dv * eb,
      Opartial: BH * S * p.nq * p.dv * 4,
      LSEpartial: BH * S * p.nq * 4,
    });
    expect(c.hbmWritten).toEqual({
      Opartial: BH * S * p.nq * p.dv * 4,
      LSEpartial: BH * S * p.nq * 4,
      O: BH * p.nq * p.dv * eb,
      LSE: BH * p.nq * 4,
    });
    expect(c.matmulFlops).toBe(2 * BH * p.nq * p.nk * (p.d + p.dv));
    expect(c.expCount).toBe(BH * (p.nq * p.nk + p.nq * (tc - S)) + 2 * S * BH * p.nq);
    expect(c.rescaleCount).toBe(BH * p.nq * (tc - S));
    const perSplit = tc / S;
    expect(c.steps).toBe(BH * (S * (1 + 6 * perSplit + (perSplit - 1) + 2) + 2));
    expect(runToEnd(flashDecoding, p, x, { blockN: bn, features: { splits: S }, trace: true }).counters).toEqual(c);
    // One split: no partials, no combine.
    const one = runToEnd(flashDecoding, p, x, { blockN: bn, features: { splits: 1 } }).counters;
    expect(one.hbmWritten.Opartial).toBeUndefined();
    expect(one.hbmWritten).toEqual({ O: BH * p.nq * p.dv * eb, LSE: BH * p.nq * 4 });
  });
  it('rejects bad split counts and unknown keys', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 1, nk: 64, d: 16, dv: 16, causal: false, dtype: 'fp32' };
    const x = randomInputs(p, { seed: 1 });
    expect(() => runToEnd(flashDecoding, p, x, { features: { splits: 2.5 } })).toThrow(/features.splits/);
    expect(() => runToEnd(flashDecoding, p, x, { features: { numSplits: 2 } })).toThrow(
      /unknown feature 'numSplits' for flash-decoding; accepted: splits, smCount/,
    );
  });
});
