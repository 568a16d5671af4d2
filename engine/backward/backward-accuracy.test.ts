// Every backward algorithm against the float64 reference gradients, on every variant and
// dtype. The rule is the FlashAttention one: each of dQ, dK, dV within
// max(2 × the same-precision unfused error, 1e-4 for fp32 / 4e-3 for 16-bit) of float64.

import { describe, expect, it } from 'vitest';
import { maxAbs } from '../algorithms/accuracy-matrix.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import { naiveBackwardSamePrecision } from './accuracy-support.ts';
import { randomGradOutput } from './grad-output.ts';
import { referenceBackward } from './reference-backward.ts';
import { BACKWARD_ALGORITHMS } from '../algorithms/backward-registry.ts';
import type { BackwardInputs, BackwardResult } from './types.ts';

const base: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 37, nk: 53, d: 16, dv: 24, causal: false, dtype: 'fp32' };

const BACKWARD_VARIANTS: [string, Partial<AttentionProblem>][] = [
  ['Nq != Nk, dv != d', {}],
  ['causal, Nq < Nk', { causal: true }],
  ['causal, Nq > Nk (fully masked rows)', { causal: true, nq: 53, nk: 37 }],
  ['sliding window', { window: { left: 7, right: 3 } }],
  ['GQA', { hq: 4, hk: 2 }],
  ['MQA, batch 2', { batch: 2, hq: 3, hk: 1 }],
  ['ALiBi', { alibi: 'standard' }],
  ['softcap', { softcap: 3 }],
  ['sinks', { sinks: [0.5, 2] }],
  ['dv > d', { d: 8, dv: 32 }],
  [
    'all at once',
    { causal: true, window: { left: 20, right: -1 }, hq: 4, hk: 2, softcap: 5, alibi: 'standard', sinks: [1, -1, 0, 2], nq: 45, nk: 40 },
  ],
];

function run(algoIndex: number, p: AttentionProblem, seed = 5): { r: BackwardResult; err: number[]; bar: number[] } {
  const x = randomInputs(p, { seed });
  const dO = randomGradOutput(p, seed);
  const algo = BACKWARD_ALGORITHMS[algoIndex];
  const xb: BackwardInputs = { ...x, dO };
  const r = runToEnd(algo, p, xb, { blockM: 8, blockN: 16 }) as BackwardResult;
  const ref = referenceBackward(p, { ...x, dO });
  const err = [maxAbs(r.dq, ref.dq), maxAbs(r.dk, ref.dk), maxAbs(r.dv, ref.dv)];
  let bar = [1e-4, 1e-4, 1e-4];
  if (p.dtype !== 'fp32') {
    const n = naiveBackwardSamePrecision(p, { ...x, dO });
    bar = [maxAbs(n.dq, ref.dq), maxAbs(n.dk, ref.dk), maxAbs(n.dv, ref.dv)].map((e) => Math.max(2 * e, 4e-3));
  }
  return { r, err, bar };
}

describe.each(BACKWARD_ALGORITHMS.map((a, i) => [a.id, i] as const))('%s backward', (_id, ai) => {
  for (const dtype of ['fp32', 'fp16', 'bf16'] as DType[]) {
    it.each(BACKWARD_VARIANTS)(`${dtype}: %s`, (_name, over) => {
      const p = { ...base, ...over, dtype };
      const { err, bar } = run(ai, p);
      for (let t = 0; t < 3; t++) expect(err[t], ['dQ', 'dK', 'dV'][t]).toBeLessThanOrEqual(bar[t]);
    });
  }

  it('rows with every key masked get exactly zero dQ, and nothing is NaN', () => {
    const p = { ...base, causal: true, nq: 53, nk: 37 };
    const { r } = run(ai, p);
    // Query i sees keys j <= i + nk − nq: the first nq − nk rows see none.
    for (let h = 0; h < p.hq; h++)
      for (let i = 0; i < p.nq - p.nk; i++) for (let e = 0; e < p.d; e++) expect(r.dq[(h * p.nq + i) * p.d + e]).toBe(0);
    for (const a of [r.dq, r.dk, r.dv]) expect(a.every(Number.isFinite)).toBe(true);
  });

  it('returns the forward O and LSE with the gradients', () => {
    const p = { ...base, causal: true };
    const { r } = run(ai, p);
    expect(r.o.length).toBe(p.batch * p.hq * p.nq * p.dv);
    expect(r.forward.counters.steps).toBeGreaterThan(0);
    expect(r.counters).not.toBe(r.forward.counters);
  });
});
