// Test support (imported only by *.test.ts): the bar 16-bit backward results are held to.
// The FlashAttention test rule compares a kernel's error with PyTorch's at the same
// precision; FlashScope stands in for PyTorch's unfused path with the backward computed
// the way it does it: every intermediate (S, P, dV, dP, dS, dQ, dK) stored in the input
// dtype, softmax and its gradient in fp32. Written out independently of the algorithms.

import { roundTo } from '../core/dtype.ts';
import { kvHead } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { modifyScore, scoreModel } from '../core/scores.ts';
import type { BackwardInputs } from './types.ts';

export function naiveBackwardSamePrecision(
  p: AttentionProblem,
  x: BackwardInputs,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const sm = scoreModel(p);
  const r = (v: number) => roundTo(p.dtype, v);
  const { nq, nk, d, dv } = p;
  const dq = new Float64Array(p.batch * p.hq * nq * d);
  const dk = new Float64Array(p.batch * p.hk * nk * d);
  const dvOut = new Float64Array(p.batch * p.hk * nk * dv);
  const P = new Float64Array(nq * nk);
  const dS = new Float64Array(nq * nk);
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      const qo = (i: number) => ((b * p.hq + h) * nq + i) * d;
      const oo = (i: number) => ((b * p.hq + h) * nq + i) * dv;
      const ko = (j: number) => ((b * p.hk + hk) * nk + j) * d;
      const vo = (j: number) => ((b * p.hk + hk) * nk + j) * dv;
      const sink = p.sinks?.[h];
      for (let i = 0; i < nq; i++) {
        let mx = sink ?? -Infinity;
        const dots = new Float64Array(nk);
        for (let j = 0; j < nk; j++) {
          let acc = 0;
          for (let e = 0; e < d; e++) acc += x.q[qo(i) + e] * x.k[ko(j) + e];
          dots[j] = r(acc);
          P[i * nk + j] = r(modifyScore(sm, h, i, j, dots[j], b));
          if (P[i * nk + j] > mx) mx = P[i * nk + j];
        }
        let l = sink !== undefined && mx !== -Infinity ? Math.exp(sink - mx) : 0;
        for (let j = 0; j < nk; j++) {
          const s = P[i * nk + j];
          P[i * nk + j] = s === -Infinity || mx === -Infinity ? 0 : Math.fround(Math.exp(s - mx));
          l += P[i * nk + j];
        }
        for (let j = 0; j < nk; j++) P[i * nk + j] = l > 0 ? r(P[i * nk + j] / l) : 0;
        // dP = dO Vᵀ stored in the dtype; the softmax gradient in fp32, dS stored in the dtype.
        const dP = new Float64Array(nk);
        let D = 0;
        for (let j = 0; j < nk; j++) {
          let acc = 0;
          for (let e = 0; e < dv; e++) acc += x.dO[oo(i) + e] * x.v[vo(j) + e];
          dP[j] = r(acc);
          D += P[i * nk + j] * dP[j];
        }
        for (let j = 0; j < nk; j++) {
          let g = sm.scale;
          if (sm.softcap !== undefined) {
            const t = Math.tanh((sm.scale * dots[j]) / sm.softcap);
            g *= 1 - t * t;
          }
          dS[i * nk + j] = r(P[i * nk + j] * (dP[j] - D) * g);
        }
      }
      for (let i = 0; i < nq; i++)
        for (let e = 0; e < d; e++) {
          let acc = 0;
          for (let j = 0; j < nk; j++) acc += dS[i * nk + j] * x.k[ko(j) + e];
          dq[qo(i) + e] = r(acc);
        }
      for (let j = 0; j < nk; j++) {
        for (let e = 0; e < d; e++) {
          let acc = 0;
          for (let i = 0; i < nq; i++) acc += dS[i * nk + j] * x.q[qo(i) + e];
          dk[ko(j) + e] = r(dk[ko(j) + e] + r(acc));
        }
        for (let e = 0; e < dv; e++) {
          let acc = 0;
          for (let i = 0; i < nq; i++) acc += P[i * nk + j] * x.dO[oo(i) + e];
          dvOut[vo(j) + e] = r(dvOut[vo(j) + e] + r(acc));
        }
      }
    }
  return { dq, dk, dv: dvOut };
}
