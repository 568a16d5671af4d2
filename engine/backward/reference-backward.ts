// The exact float64 gradients of attention, the reference every backward algorithm is
// tested against. Analytic, row by row, with no tiling and no rounding:
//   P_ij = exp(s_ij − LSE_i) (the LSE includes a sink),  O_i = Σ_j P_ij V_j
//   dV_j += P_ij dO_i,  dP_ij = dO_i · V_j,  D_i = Σ_j P_ij dP_ij (= dO_i · O_i)
//   dS_ij = P_ij (dP_ij − D_i)
//   s_ij = c·tanh(τ q_i·k_j / c) − slope·|j − (i + diag)|  →  ∂s/∂(q_i·k_j) = τ (1 − tanh²(τ q_i·k_j / c))
//   dQ_i += dS_ij ∂s/∂(q·k) K_j,  dK_j += dS_ij ∂s/∂(q·k) Q_i
// GQA/MQA: dK and dV of a K/V head sum over the query heads that read it. Masked keys
// have P = 0 and contribute nothing; a row with every key masked has LSE = −∞, P = 0 and
// gradient 0. A sink only enlarges the denominator: no gradient flows to it here.

import { kvHead, type AttentionInputs } from '../core/inputs.ts';
import { validateProblem, type AttentionProblem } from '../core/problem.ts';
import { modifyScore, scoreModel } from '../core/scores.ts';

/** Inputs as plain number arrays, so finite-difference tests can perturb them in float64. */
export interface Float64Inputs {
  q: ArrayLike<number>;
  k: ArrayLike<number>;
  v: ArrayLike<number>;
  dO: ArrayLike<number>;
}

export interface ReferenceGradients {
  o: Float64Array;
  lse: Float64Array;
  dq: Float64Array;
  dk: Float64Array;
  dv: Float64Array;
}

export function referenceBackward(p: AttentionProblem, x: Float64Inputs | (AttentionInputs & { dO: Float32Array })): ReferenceGradients {
  validateProblem(p);
  const sm = scoreModel(p);
  const { nq, nk, d, dv } = p;
  const o = new Float64Array(p.batch * p.hq * nq * dv);
  const lse = new Float64Array(p.batch * p.hq * nq);
  const dq = new Float64Array(p.batch * p.hq * nq * d);
  const dk = new Float64Array(p.batch * p.hk * nk * d);
  const dvOut = new Float64Array(p.batch * p.hk * nk * dv);
  const dot = new Float64Array(nk);
  const s = new Float64Array(nk);
  const pr = new Float64Array(nk);
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      const sink = p.sinks?.[h];
      for (let i = 0; i < nq; i++) {
        const qo = ((b * p.hq + h) * nq + i) * d;
        const oo = ((b * p.hq + h) * nq + i) * dv;
        let max = sink ?? -Infinity;
        for (let j = 0; j < nk; j++) {
          const ko = ((b * p.hk + hk) * nk + j) * d;
          let acc = 0;
          for (let e = 0; e < d; e++) acc += x.q[qo + e] * x.k[ko + e];
          dot[j] = acc;
          s[j] = modifyScore(sm, h, i, j, acc, b);
          if (s[j] > max) max = s[j];
        }
        const li = (b * p.hq + h) * nq + i;
        if (max === -Infinity) {
          lse[li] = -Infinity; // nothing visible: O = 0 and every gradient of this row is 0
          continue;
        }
        let sum = sink !== undefined ? Math.exp(sink - max) : 0;
        for (let j = 0; j < nk; j++) sum += s[j] === -Infinity ? 0 : Math.exp(s[j] - max);
        const L = max + Math.log(sum);
        lse[li] = L;
        for (let j = 0; j < nk; j++) pr[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - L);
        for (let j = 0; j < nk; j++) {
          if (pr[j] === 0) continue;
          const vo = ((b * p.hk + hk) * nk + j) * dv;
          for (let e = 0; e < dv; e++) o[oo + e] += pr[j] * x.v[vo + e];
        }
        let D = 0;
        for (let e = 0; e < dv; e++) D += x.dO[oo + e] * o[oo + e];
        for (let j = 0; j < nk; j++) {
          if (pr[j] === 0) continue;
          const vo = ((b * p.hk + hk) * nk + j) * dv;
          const ko = ((b * p.hk + hk) * nk + j) * d;
          let dp = 0;
          for (let e = 0; e < dv; e++) {
            dp += x.dO[oo + e] * x.v[vo + e];
            dvOut[vo + e] += pr[j] * x.dO[oo + e];
          }
          let g = sm.scale;
          if (sm.softcap !== undefined) {
            const t = Math.tanh((sm.scale * dot[j]) / sm.softcap);
            g *= 1 - t * t;
          }
          const ds = pr[j] * (dp - D) * g;
          for (let e = 0; e < d; e++) {
            dq[qo + e] += ds * x.k[ko + e];
            dk[ko + e] += ds * x.q[qo + e];
          }
        }
      }
    }
  return { o, lse, dq, dk, dv: dvOut };
}
