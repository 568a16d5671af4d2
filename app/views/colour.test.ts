import { describe, expect, it } from 'vitest';
import { randomInputs } from '../../engine/core/inputs.ts';
import type { AttentionProblem } from '../../engine/core/problem.ts';
import { colourIndex, colourScale, robustExtent } from './colour.ts';

const P: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 32, dv: 32, causal: false, dtype: 'fp32' };
const rangeOf = (a: ArrayLike<number>): [number, number] => [Math.min(...Array.from(a)), Math.max(...Array.from(a))];

describe('robust colour scales', () => {
  it('a planted outlier row is clipped while the bulk of Q keeps the colour range', () => {
    const q = randomInputs(P, { seed: 1, distribution: 'outlier-row', outlierRow: 5 }).q;
    const full = rangeOf(q);
    expect(Math.max(-full[0], full[1])).toBeGreaterThan(20);
    const s = colourScale('diverging', full, { values: q });
    expect(s.clips).toBe(true);
    // The bulk: every value outside the outlier row is inside the domain, and the domain is
    // at most a few times the largest of them.
    const rest = Array.from(q).filter((_, i) => Math.floor(i / P.d) !== 5);
    const restMax = Math.max(...rest.map(Math.abs));
    expect(s.domain[1]).toBeGreaterThanOrEqual(restMax * 0.75);
    expect(s.domain[1]).toBeLessThan(restMax * 2);
    const clipped = Array.from(q).filter((v) => colourIndex(s, v) < 0 || colourIndex(s, v) > 255).length;
    const outliers = Array.from(q.subarray(5 * P.d, 6 * P.d)).filter((v) => Math.abs(v) > s.domain[1]).length;
    expect(outliers).toBeGreaterThan(P.d / 2);
    expect(clipped).toBeLessThanOrEqual(outliers + 2);
  });

  it('normal inputs keep their whole range (their 4.5 σ tail is no outlier)', () => {
    const q = randomInputs({ ...P, nq: 512, d: 64 }, { seed: 3 }).q;
    const s = colourScale('diverging', rangeOf(q), { values: q });
    expect(s.clips).toBe(false);
    expect(s.domain[1]).toBe(Math.max(...Array.from(q).map(Math.abs)));
  });

  it('without values the scale spans the whole range, symmetric for diverging', () => {
    const s = colourScale('diverging', [-3, 100]);
    expect(s.domain).toEqual([-100, 100]);
    expect(s.clips).toBe(false);
    expect(colourIndex(s, 0)).toBe(128);
    expect(colourIndex(s, 100)).toBe(255);
    expect(colourIndex(s, -100)).toBe(0);
  });

  it('the square-root scale spreads small values: a quarter of the range lands half way', () => {
    const s = colourScale('sequential', [0, 0.4], { gamma: 0.5 });
    expect(colourIndex(s, 0.1)).toBe(Math.round(Math.sqrt(0.25) * 255));
    expect(colourIndex(s, 0.004)).toBe(Math.round(Math.sqrt(0.01) * 255));
    expect(colourIndex(s, 0.4)).toBe(255);
  });

  it('robustExtent follows σ on a known sample and ignores non-finite values', () => {
    // |x| of 1..100 scaled: median 50.5 → σ̂ = 74.87, 4σ̂ = 299 > max, so the max (100).
    expect(robustExtent(Array.from({ length: 100 }, (_, i) => i + 1))).toBe(100);
    // 99 values of ±1 and one of 1000: σ̂ = 1 / 0.6745, 4σ̂ ≈ 5.93.
    const a = [...Array.from({ length: 99 }, (_, i) => (i % 2 ? 1 : -1)), 1000, NaN, Infinity];
    expect(robustExtent(a)).toBeCloseTo(4 / 0.6745, 10);
  });
});
