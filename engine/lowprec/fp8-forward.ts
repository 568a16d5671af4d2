// FA3's FP8 forward numerics, tile by tile, without the trace: what the fa3 FP8 option is to
// compute. Per (batch, head): Q and K optionally rotated by the same random Hadamard
// (incoherent processing), Q/K/V quantized to e4m3 per tensor or per tile (Br×d of Q, Bc×d of
// K and V), S = Q̂K̂ᵀ accumulated in fp32, online softmax in fp32, P multiplied by a static
// pScale and cast to e4m3 before P·V (the row sum uses the fp32 P, as the kernel does), K/V
// blocks visited last-first (the kernel's order) or first-last.

import { kvHead, kOffset, qOffset, vOffset, type AttentionInputs } from '../inputs.ts';
import { softmaxScale, type AttentionProblem } from '../problem.ts';
import { roundFp8, type Fp8Format } from './fp8.ts';
import { randomSigns, rotateRows } from './incoherent.ts';
import { quantizeFp8Rows } from './quantize.ts';

export interface Fp8ForwardOptions {
  format: Fp8Format;
  blockM: number;
  blockN: number;
  blockQuant: boolean;
  incoherent: boolean;
  /** Static factor applied to P before its cast (a power of two keeps the division exact). */
  pScale: number;
  /** true: K/V blocks first to last; false: last to first as FA3's kernel iterates. */
  forwardKv: boolean;
  seed: number;
  /** Keys [0, sinkKeys) are not counted among flushed P values (the P-cast paper's "non-sink"). */
  sinkKeys?: number;
}

export interface Fp8ForwardResult {
  o: Float64Array;
  /** P values > 0 in fp32 that the e4m3 cast turned into 0, on non-sink keys. */
  flushedP: number;
  /** Non-sink P values computed (masked entries excluded). */
  nonSinkP: number;
  saturated: number;
}

export function fp8Forward(p: AttentionProblem, x: AttentionInputs, opt: Fp8ForwardOptions): Fp8ForwardResult {
  if (p.causal || p.window || p.alibi || p.softcap || p.sinks) throw new RangeError('fp8Forward models the plain (unmasked, unbiased) FA3 FP8 forward only');
  const scale = softmaxScale(p);
  const o = new Float64Array(p.batch * p.hq * p.nq * p.dv);
  const signs = randomSigns(p.d, opt.seed);
  let flushedP = 0;
  let nonSinkP = 0;
  let saturated = 0;
  const sinkKeys = opt.sinkKeys ?? 0;
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      let q: ArrayLike<number> = x.q.subarray(qOffset(p, b, h, 0), qOffset(p, b, h, 0) + p.nq * p.d);
      let k: ArrayLike<number> = x.k.subarray(kOffset(p, b, hk, 0), kOffset(p, b, hk, 0) + p.nk * p.d);
      const v = x.v.subarray(vOffset(p, b, hk, 0), vOffset(p, b, hk, 0) + p.nk * p.dv);
      if (opt.incoherent) {
        q = rotateRows(q, p.d, signs);
        k = rotateRows(k, p.d, signs);
      }
      const qq = quantizeFp8Rows(q, p.d, opt.blockQuant ? opt.blockM : Infinity, opt.format);
      const kq = quantizeFp8Rows(k, p.d, opt.blockQuant ? opt.blockN : Infinity, opt.format);
      const vq = quantizeFp8Rows(v, p.dv, opt.blockQuant ? opt.blockN : Infinity, opt.format);
      saturated += qq.saturated + kq.saturated + vq.saturated;
      const tc = Math.ceil(p.nk / opt.blockN);
      const order = Array.from({ length: tc }, (_, j) => (opt.forwardKv ? j : tc - 1 - j));
      for (let i = 0; i < p.nq; i++) {
        let m = -Infinity;
        let l = 0;
        const acc = new Float64Array(p.dv);
        for (const j of order) {
          const c0 = j * opt.blockN;
          const c1 = Math.min(p.nk, c0 + opt.blockN);
          const s = new Float64Array(c1 - c0);
          let mx = m;
          for (let c = c0; c < c1; c++) {
            let dot = 0;
            for (let e = 0; e < p.d; e++) dot = Math.fround(dot + qq.values[i * p.d + e] * kq.values[c * p.d + e]);
            s[c - c0] = Math.fround(dot * scale);
            mx = Math.max(mx, s[c - c0]);
          }
          const f = m === -Infinity ? 0 : Math.exp(m - mx);
          l *= f;
          for (let e = 0; e < p.dv; e++) acc[e] = Math.fround(acc[e] * f);
          m = mx;
          for (let c = c0; c < c1; c++) {
            const pv = Math.fround(Math.exp(s[c - c0] - m));
            l = Math.fround(l + pv);
            const cast = roundFp8('e4m3', pv * opt.pScale) / opt.pScale;
            if (c >= sinkKeys) {
              nonSinkP++;
              if (pv > 0 && cast === 0) flushedP++;
            }
            if (cast === 0) continue;
            for (let e = 0; e < p.dv; e++) acc[e] = Math.fround(acc[e] + cast * vq.values[c * p.dv + e]);
          }
        }
        const oo = ((b * p.hq + h) * p.nq + i) * p.dv;
        for (let e = 0; e < p.dv; e++) o[oo + e] = Math.fround(acc[e] / l);
      }
    }
  return { o, flushedP, nonSinkP, saturated };
}
