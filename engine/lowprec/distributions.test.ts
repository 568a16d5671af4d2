import { describe, expect, it } from 'vitest';
import { randomInputs, SINK_KEYS } from '../core/inputs.ts';
import { DEFAULT_PROBLEM } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';

describe('low-precision input distributions', () => {
  it("'fa3-outliers' adds N(0,100) to about 0.1% of the entries", () => {
    const p = { ...DEFAULT_PROBLEM, hq: 4, hk: 4, nq: 256, nk: 256, d: 64, dv: 64 };
    const x = randomInputs(p, { seed: 5, distribution: 'fa3-outliers' });
    const all = [...x.q, ...x.k, ...x.v];
    // |N(0,1)| > 6 essentially never happens; |N(0,100)| > 6 about 55% of the time.
    const big = all.filter((v) => Math.abs(v) > 6).length / all.length;
    expect(big).toBeGreaterThan(0.0003);
    expect(big).toBeLessThan(0.0009);
    const plain = randomInputs(p, { seed: 5 });
    expect([...plain.q, ...plain.k, ...plain.v].filter((v) => Math.abs(v) > 6).length).toBe(0);
  });
  it("'fa3-outliers' takes the outliers' standard deviation from outlierStd", () => {
    const p = { ...DEFAULT_PROBLEM, hq: 4, hk: 4, nq: 256, nk: 256, d: 64, dv: 64 };
    const spread = (outlierStd?: number) => {
      const x = randomInputs(p, { seed: 5, distribution: 'fa3-outliers', outlierStd });
      const big = [...x.q, ...x.k, ...x.v].filter((v) => Math.abs(v) > 6);
      return Math.sqrt(big.reduce((s, v) => s + v * v, 0) / big.length);
    };
    // Same draw, outliers scaled: their RMS grows about tenfold from sd 10 to sd 100.
    expect(spread(100) / spread()).toBeGreaterThan(7);
    expect(spread(10)).toBe(spread());
  });
  it("'sink' gives the first keys over half of every row's attention", () => {
    const p = { ...DEFAULT_PROBLEM, nq: 32, nk: 128, d: 64, dv: 64 };
    const x = randomInputs(p, { seed: 9, distribution: 'sink' });
    // Attention mass on the sink keys, read from the reference with V = indicator of a sink key.
    const v = new Float32Array(p.nk * p.dv);
    for (let j = 0; j < SINK_KEYS; j++) v[j * p.dv] = 1;
    const o = referenceAttention(p, { ...x, v }).o;
    for (let i = 0; i < p.nq; i++) expect(o[i * p.dv]).toBeGreaterThan(0.5);
  });
});
