// The exact float64 reference every algorithm is tested against. Deliberately the most
// direct formula possible: materialize one row of logits, subtract the max, exponentiate,
// normalize, multiply by V. No tiling, no rounding.

import { checkInputs, kOffset, kvHead, oOffset, qOffset, vOffset, type AttentionInputs } from './inputs.ts';
import { validateProblem, type AttentionProblem } from './problem.ts';
import { modifyScore, scoreModel } from './scores.ts';

export interface AttentionOutput {
  /** [batch, hq, nq, dv] */
  o: Float64Array | Float32Array;
  /** [batch, hq, nq], natural log of the softmax denominator (sinks included); -Infinity for fully masked rows. */
  lse: Float64Array | Float32Array;
}

export function referenceAttention(p: AttentionProblem, x: AttentionInputs): { o: Float64Array; lse: Float64Array } {
  validateProblem(p);
  checkInputs(p, x);
  const sm = scoreModel(p);
  const o = new Float64Array(p.batch * p.hq * p.nq * p.dv);
  const lse = new Float64Array(p.batch * p.hq * p.nq);
  const row = new Float64Array(p.nk);
  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      const sink = p.sinks?.[h];
      for (let i = 0; i < p.nq; i++) {
        const qo = qOffset(p, b, h, i);
        let max = sink ?? -Infinity;
        for (let j = 0; j < p.nk; j++) {
          const ko = kOffset(p, b, hk, j);
          let dot = 0;
          for (let c = 0; c < p.d; c++) dot += x.q[qo + c] * x.k[ko + c];
          row[j] = modifyScore(sm, h, i, j, dot, b);
          if (row[j] > max) max = row[j];
        }
        const oo = oOffset(p, b, h, i);
        const li = (b * p.hq + h) * p.nq + i;
        if (max === -Infinity) {
          lse[li] = -Infinity; // every key masked and no sink: output stays 0
          continue;
        }
        let sum = sink !== undefined ? Math.exp(sink - max) : 0;
        for (let j = 0; j < p.nk; j++) {
          const e = row[j] === -Infinity ? 0 : Math.exp(row[j] - max);
          row[j] = e;
          sum += e;
        }
        for (let j = 0; j < p.nk; j++) {
          const w = row[j] / sum;
          if (w === 0) continue;
          const vo = vOffset(p, b, hk, j);
          for (let c = 0; c < p.dv; c++) o[oo + c] += w * x.v[vo + c];
        }
        lse[li] = max + Math.log(sum);
      }
    }
  }
  return { o, lse };
}
