// The float64 reference backward checked against finite differences of the float64
// reference *forward* (engine/core/reference.ts, a separate implementation): for the loss
// L = Σ dO ∘ O, every analytic gradient entry must match the central difference
// (L(x + h) − L(x − h)) / 2h on every variant, GQA sums and masked rows included.

import { describe, expect, it } from 'vitest';
import { randomInputs, type AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { randomGradOutput } from './grad-output.ts';
import { referenceBackward } from './reference-backward.ts';

const base: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 5, nk: 6, d: 3, dv: 4, causal: false, dtype: 'fp32' };

const VARIANTS: [string, Partial<AttentionProblem>][] = [
  ['plain, dv != d, Nq != Nk', {}],
  ['causal bottom-right', { causal: true, nq: 6, nk: 4 }],
  ['window', { window: { left: 1, right: 1 } }],
  ['GQA (4 query heads on 2 K/V heads)', { hq: 4, hk: 2 }],
  ['MQA, batch 2', { batch: 2, hq: 3, hk: 1 }],
  ['ALiBi', { alibi: 'standard', hq: 2, hk: 2 }],
  ['softcap', { softcap: 0.7 }],
  ['sinks', { sinks: [0.8], causal: true }],
  [
    'everything',
    { causal: true, nq: 6, nk: 6, hq: 2, hk: 1, softcap: 2, alibi: [0.3, 0.1], sinks: [0.2, -1], window: { left: 3, right: -1 } },
  ],
];

/** L = Σ dO ∘ O through the reference forward, inputs given as float64 arrays. */
function loss(p: AttentionProblem, x: { q: Float64Array; k: Float64Array; v: Float64Array }, dO: Float32Array): number {
  const { o } = referenceAttention(p, x as unknown as AttentionInputs);
  let s = 0;
  for (let i = 0; i < o.length; i++) s += dO[i] * o[i];
  return s;
}

describe('referenceBackward against finite differences (float64)', () => {
  it.each(VARIANTS)('%s', (_name, over) => {
    const p = { ...base, ...over };
    const x = randomInputs(p, { seed: 11 });
    const dO = randomGradOutput(p, 11);
    const g = referenceBackward(p, { ...x, dO });
    const x64 = { q: Float64Array.from(x.q), k: Float64Array.from(x.k), v: Float64Array.from(x.v) };
    const h = 1e-6;
    let worst = 0;
    for (const [t, grad] of [
      ['q', g.dq],
      ['k', g.dk],
      ['v', g.dv],
    ] as const) {
      for (let e = 0; e < x64[t].length; e++) {
        const keep = x64[t][e];
        x64[t][e] = keep + h;
        const up = loss(p, x64, dO);
        x64[t][e] = keep - h;
        const down = loss(p, x64, dO);
        x64[t][e] = keep;
        const fd = (up - down) / (2 * h);
        worst = Math.max(worst, Math.abs(fd - grad[e]));
      }
    }
    expect(worst).toBeLessThan(1e-7);
  });

  it('a row with every key masked has exactly zero gradients, and no NaN anywhere', () => {
    // Window [0, 0] right of a shifted diagonal: with Nq > Nk and causal, the first rows see nothing.
    const p = { ...base, nq: 6, nk: 3, causal: true };
    const x = randomInputs(p, { seed: 2 });
    const g = referenceBackward(p, { ...x, dO: randomGradOutput(p, 2) });
    expect(g.lse[0]).toBe(-Infinity);
    for (let e = 0; e < p.d; e++) expect(g.dq[e]).toBe(0);
    for (const a of [g.dq, g.dk, g.dv]) expect(a.every(Number.isFinite)).toBe(true);
  });

  it('D = rowsum(dO ∘ O) equals rowsum(P ∘ dP): the identity the FA2 preprocessing relies on', () => {
    const p = { ...base, softcap: 1.5 };
    const x = randomInputs(p, { seed: 4 });
    const dO = randomGradOutput(p, 4);
    const g = referenceBackward(p, { ...x, dO });
    // Σ_i D_i = Σ dO ∘ O; the gradient of L w.r.t. a global scale of V is Σ dV ∘ V = Σ dO ∘ O as well.
    let dDotO = 0;
    for (let i = 0; i < g.o.length; i++) dDotO += dO[i] * g.o[i];
    let dvDotV = 0;
    for (let i = 0; i < g.dv.length; i++) dvDotV += g.dv[i] * x.v[i];
    expect(dvDotV).toBeCloseTo(dDotO, 10);
  });
});
