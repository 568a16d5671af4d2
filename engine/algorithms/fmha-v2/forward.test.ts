import { describe, expect, it } from 'vitest';
import { kOffset, kvHead, qOffset, randomInputs, vOffset, type AttentionInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import { runToEnd } from '../../run.ts';
import { modifyScore, scoreModel } from '../../core/scores.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { accuracyMatrix, maxAbs, naiveSamePrecision } from '../accuracy-matrix.ts';
import { cuteFa2 } from '../cute-fa2/forward.ts';
import { fmhaV2, fmhaV2DefaultTile, fmhaV2PackedQkv } from './forward.ts';

describe('fmha_v2 against the float64 reference', () => {
  accuracyMatrix(fmhaV2, { dims: [64, 128, 256] });
});

/**
 * Error bound of fp16 accumulation, from probabilistic rounding-error analysis (Higham &
 * Mary 2019): each rounded add of a running sum s_k commits an error of at most u·|s_k|
 * (u = 2^-11); modelled as independent and zero-mean, the total stays below
 * λ·u·sqrt(Σ_k s_k²) except with probability about 2n·exp(−λ²/2). With λ = 8 that is
 * below 1e-11 per sum — a bound no test run will exceed by chance, unlike the worst case
 * n·u·Σ|terms|, which is ~100× looser and could never fail.
 * - Q·Kᵀ: logit (i, j) moves by δ_ij ≤ scale·λ·u·sqrt(Σ_e s_e²), s_e its partial dot
 *   products. To first order O_i moves by Σ_j P_ij δ_ij |v_j − O_i|.
 * - P·V: in final-max units the accumulator's partial sums are A_k = Σ_{j≤k} p_j v_j, and
 *   each of the Tc rescales rounds once more; so |ΔO_i| ≤ λ·u·sqrt(Σ_k A_k² + Tc·max A_k²) / l_i.
 * P's rounding to fp16 and the output rounding are what the naive same-precision run has:
 * bound = 2 × naive + 1e-5 + the largest sum of both terms over the output.
 */
function fp16AccumulationBound(p: AttentionProblem, x: AttentionInputs, naiveErr: number, blockN: number): number {
  const u = 2 ** -11;
  const lambda = 8;
  const sm = scoreModel(p);
  const tc = Math.ceil(p.nk / blockN);
  let worst = 0;
  const logit = new Float64Array(p.nk);
  const delta = new Float64Array(p.nk);
  for (let h = 0; h < p.hq; h++) {
    const hk = kvHead(p, h);
    for (let i = 0; i < p.nq; i++) {
      const qo = qOffset(p, 0, h, i);
      let mx = -Infinity;
      for (let j = 0; j < p.nk; j++) {
        const ko = kOffset(p, 0, hk, j);
        let s = 0;
        let sq = 0;
        for (let e = 0; e < p.d; e++) {
          s += x.q[qo + e] * x.k[ko + e];
          sq += s * s;
        }
        logit[j] = modifyScore(sm, h, i, j, s, 0);
        delta[j] = sm.scale * lambda * u * Math.sqrt(sq);
        if (logit[j] > mx) mx = logit[j];
      }
      if (mx === -Infinity) continue;
      let l = 0;
      const w = new Float64Array(p.nk);
      for (let j = 0; j < p.nk; j++) {
        w[j] = logit[j] === -Infinity ? 0 : Math.exp(logit[j] - mx);
        l += w[j];
      }
      for (let e = 0; e < p.dv; e++) {
        let o = 0;
        for (let j = 0; j < p.nk; j++) o += (w[j] / l) * x.v[vOffset(p, 0, hk, j) + e];
        let acc = 0;
        let sumSq = 0;
        let maxSq = 0;
        let qkTerm = 0;
        for (let j = 0; j < p.nk; j++) {
          if (w[j] === 0) continue;
          const v = x.v[vOffset(p, 0, hk, j) + e];
          acc += w[j] * v;
          sumSq += acc * acc;
          maxSq = Math.max(maxSq, acc * acc);
          qkTerm += (w[j] / l) * delta[j] * Math.abs(v - o);
        }
        const pvTerm = (lambda * u * Math.sqrt(sumSq + tc * maxSq)) / l;
        worst = Math.max(worst, pvTerm + qkTerm);
      }
    }
  }
  return 2 * naiveErr + 1e-5 + worst;
}

describe('fmha_v2 fp16 accumulation', () => {
  for (const [name, over] of [
    ['ragged 77x131', { nq: 77, nk: 131 }],
    ['causal 64x300 gqa', { nq: 64, nk: 300, hq: 2, hk: 1, causal: true }],
  ] as const) {
    it(`${name}: larger error than fp32 accumulation, inside the derived bound`, () => {
      const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, d: 64, dv: 64, causal: false, dtype: 'fp16', ...over };
      const x = randomInputs(p, { seed: 12 });
      const ref = referenceAttention(p, x);
      const e32 = maxAbs(runToEnd(fmhaV2, p, x).o, ref.o);
      const r16 = runToEnd(fmhaV2, p, x, { features: { fp16Accumulation: true } });
      const e16 = maxAbs(r16.o, ref.o);
      const naive = maxAbs(naiveSamePrecision(p, x).o, ref.o);
      const bound = fp16AccumulationBound(p, x, naive, r16.blocks.blockN);
      console.log(
        `fmha_v2 ${name} fp16: max|err| fp32 acc ${e32.toExponential(2)}, fp16 acc ${e16.toExponential(2)}, naive ${naive.toExponential(2)}, bound ${bound.toExponential(2)}`,
      );
      expect(e16).toBeGreaterThan(e32);
      expect(e16).toBeLessThanOrEqual(bound);
    });
  }
  it('is refused for bf16 and fp32 inputs, naming the feature', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 8, nk: 8, d: 16, dv: 16, causal: false, dtype: 'bf16' };
    expect(() => runToEnd(fmhaV2, p, randomInputs(p, { seed: 1 }), { features: { fp16Accumulation: true } })).toThrow(
      /features.fp16Accumulation: needs dtype fp16/,
    );
    expect(() => runToEnd(fmhaV2, p, randomInputs(p, { seed: 1 }), { features: { halfAcc: true } })).toThrow(
      /unknown feature 'halfAcc' for fmha-v2; accepted: fp16Accumulation/,
    );
  });
});

describe('fmha_v2 grid, warps and pipeline', () => {
  const p: AttentionProblem = { batch: 2, hq: 2, hk: 2, nq: 200, nk: 300, d: 64, dv: 64, causal: false, dtype: 'fp16' };
  const evs: TraceEvent[] = [];
  runToEnd(fmhaV2, p, randomInputs(p, { seed: 3 }), { trace: true, onEvent: (e) => evs.push(e) });
  it('one CTA per (batch, head, Q tile): the outer loop is blockIdx.x inside (z = batch, y = head)', () => {
    const ctas = evs.filter((e) => e.line === 'fmha-v2.loadQ').map((e) => `${e.b}.${e.h}.${e.outer}`);
    expect(ctas).toEqual(['0.0.0', '0.0.1', '0.1.0', '0.1.1', '1.0.0', '1.0.1', '1.1.0', '1.1.1']);
  });
  it('4 warps split the 128 rows of a tile; the ragged last tile has fewer', () => {
    const first = evs.filter((e) => e.kind === 'qk' && e.b === 0 && e.h === 0 && e.outer === 0 && e.inner === 0);
    expect(first.map((e) => [e.warp, ...e.tile.rows])).toEqual([
      [0, 0, 32],
      [1, 32, 64],
      [2, 64, 96],
      [3, 96, 128],
    ]);
    const last = evs.filter((e) => e.kind === 'qk' && e.b === 0 && e.h === 0 && e.outer === 1 && e.inner === 0);
    expect(last.map((e) => [e.warp, ...e.tile.rows])).toEqual([
      [0, 128, 160],
      [1, 160, 192],
      [2, 192, 200],
    ]);
  });
  it('double-buffers K/V: block j+1 is requested before any warp computes on block j', () => {
    const cta = evs.filter((e) => e.b === 0 && e.h === 0 && e.outer === 0);
    for (let j = 0; j + 1 < 3; j++) {
      const load = cta.findIndex((e) => e.kind === 'load' && e.inner === j + 1);
      const qk = cta.findIndex((e) => e.kind === 'qk' && e.inner === j);
      expect(load).toBeGreaterThan(-1);
      expect(load).toBeLessThan(qk);
    }
  });
  it('counts the same traffic and work as the CuTe FA2 model with the same tiles', () => {
    const q: AttentionProblem = { ...p, causal: true, nq: 150, nk: 150 };
    const x = randomInputs(q, { seed: 4 });
    const a = runToEnd(fmhaV2, q, x, { blockM: 64, blockN: 64 }).counters;
    const b = runToEnd(cuteFa2, q, x, { blockM: 64, blockN: 64 }).counters;
    expect({ ...a, steps: 0 }).toEqual({ ...b, steps: 0 });
  });
  it('reads packed QKV only when the problem allows one [B, S, 3, H, D] tensor; default tiles by head dim', () => {
    expect(fmhaV2PackedQkv(p)).toBe(false); // Nq != Nk
    expect(fmhaV2PackedQkv({ ...p, nk: 200 })).toBe(true);
    expect(fmhaV2PackedQkv({ ...p, nk: 200, hk: 1 })).toBe(false);
    expect(fmhaV2DefaultTile({ ...p, d: 16 })).toEqual({ blockM: 128, blockN: 128 });
    expect(fmhaV2DefaultTile({ ...p, d: 128 })).toEqual({ blockM: 64, blockN: 64 });
  });
});
