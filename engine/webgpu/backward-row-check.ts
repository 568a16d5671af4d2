// One query row's dQ in float64, from the inputs alone, for checking sampled rows of a GPU
// backward at sizes where the whole reference is out of reach. Row i of dQ depends only on
// q_i, dO_i and its head's K and V: its softmax gives P_i and O_i, then D_i = dO_i · O_i,
// dS_ij = P_ij (dO_i · V_j − D_i), dQ_i = Σ_j dS_ij ∂s/∂(q·k) K_j with the score model of
// engine/core/scores.ts (∂s/∂(q·k) = τ, or τ (1 − tanh²) under a softcap).

import { kvHead } from '../core/inputs.ts';
import { modifyScore, scoreModel } from '../core/scores.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceRow } from './row-check.ts';

/** q, dO: the row's values; k, v: its K/V head's [Nk, d] and [Nk, dv]. */
export function referenceDqRow(
  p: AttentionProblem,
  h: number,
  i: number,
  q: ArrayLike<number>,
  dO: ArrayLike<number>,
  k: Float32Array,
  v: Float32Array,
): Float64Array {
  const sm = scoreModel(p);
  const row = referenceRow(p, h, i, Float32Array.from(q), k, v);
  const dq = new Float64Array(p.d);
  if (row.lse === -Infinity) return dq;
  let D = 0;
  for (let c = 0; c < p.dv; c++) D += dO[c] * row.o[c];
  for (let j = 0; j < p.nk; j++) {
    let dot = 0;
    for (let c = 0; c < p.d; c++) dot += q[c] * k[j * p.d + c];
    const s = modifyScore(sm, h, i, j, dot, 0);
    if (s === -Infinity) continue;
    const pr = Math.exp(s - row.lse);
    let dp = 0;
    for (let c = 0; c < p.dv; c++) dp += dO[c] * v[j * p.dv + c];
    let ds = pr * (dp - D) * sm.scale;
    if (sm.softcap !== undefined) {
      const t = Math.tanh((dot * sm.scale) / sm.softcap);
      ds *= 1 - t * t;
    }
    for (let c = 0; c < p.d; c++) dq[c] += ds * k[j * p.d + c];
  }
  return dq;
}

/** Max |GPU dQ − float64| over sampled (b, h, i) rows; tensors BHND. */
export function sampledDqError(
  p: AttentionProblem,
  x: { q: Float32Array; k: Float32Array; v: Float32Array },
  dO: Float32Array,
  dq: Float32Array,
  sites: readonly { b: number; h: number; i: number }[],
): number {
  let worst = 0;
  for (const { b, h, i } of sites) {
    const hk = kvHead(p, h);
    const r = (b * p.hq + h) * p.nq + i;
    const kv = (b * p.hk + hk) * p.nk;
    const ref = referenceDqRow(
      p,
      h,
      i,
      x.q.subarray(r * p.d, (r + 1) * p.d),
      dO.subarray(r * p.dv, (r + 1) * p.dv),
      x.k.subarray(kv * p.d, (kv + p.nk) * p.d),
      x.v.subarray(kv * p.dv, (kv + p.nk) * p.dv),
    );
    for (let c = 0; c < p.d; c++) worst = Math.max(worst, Math.abs(dq[r * p.d + c] - ref[c]));
  }
  return worst;
}
