import { describe, expect, it } from 'vitest';
import { fa2 } from './forward.ts';
import { randomInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import { runToEnd } from '../../run.ts';

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue; // equal infinities
    m = Math.max(m, Math.abs(a[i] - b[i]));
  }
  return m;
}

describe('fa2 against the float64 reference', () => {
  const cases: [string, Partial<AttentionProblem>][] = [
    ['ragged 77x131', { nq: 77, nk: 131, d: 40, dv: 24 }],
    ['causal nq<nk with gqa', { nq: 33, nk: 70, hq: 4, hk: 2, causal: true }],
    ['causal nq>nk: early rows fully masked', { nq: 70, nk: 33, causal: true }],
    [
      'window, alibi, softcap, sinks',
      { nq: 50, nk: 50, hq: 2, hk: 1, window: { left: 7, right: 3 }, alibi: 'standard', softcap: 5, sinks: [0.5, -1] },
    ],
  ];
  for (const [name, over] of cases) {
    it(name, () => {
      const p: AttentionProblem = { batch: 2, hq: 1, hk: 1, nq: 16, nk: 16, d: 16, dv: 16, causal: false, dtype: 'fp32', ...over };
      const x = randomInputs(p, { seed: 7 });
      const ref = referenceAttention(p, x);
      const got = runToEnd(fa2, p, x, { blockM: 16, blockN: 16 });
      expect(maxAbs(got.o, ref.o)).toBeLessThan(2e-5);
      expect(maxAbs(got.lse, ref.lse)).toBeLessThan(2e-5);
      const traced = runToEnd(fa2, p, x, { blockM: 16, blockN: 16, trace: true });
      expect(traced.counters).toEqual(got.counters);
    });
  }
  it('fully masked rows give zero output and -inf LSE', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 20, nk: 10, d: 8, dv: 8, causal: true, dtype: 'fp32' };
    const x = randomInputs(p, { seed: 1 });
    const got = runToEnd(fa2, p, x, { blockM: 8, blockN: 4 });
    expect(got.lse[0]).toBe(-Infinity);
    expect(Array.from(got.o.subarray(0, 8))).toEqual(new Array(8).fill(0));
    expect(Number.isFinite(got.lse[19])).toBe(true);
  });
});
