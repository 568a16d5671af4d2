// What SageAttention does to Q, K and V before its attention kernel runs, and how its kernel
// turns integer dot products back into logits. The schedule is in engine/algorithms/sage/forward.ts.
//
// Q and K (thu-ml/SageAttention: the Triton per-block quantizer for v1, the CUDA per-warp one
// for v2 on SM89):
// - smoothK: K minus its mean over the tokens of each (batch, kv head), channel by channel.
//   The mean is rounded to the input dtype (torch's mean of an fp16 tensor is fp16) and
//   subtracted in fp32. Softmax is unchanged: every logit of a query row moves by the same
//   q·mean(K), so only the LSE needs it back, and the wrapper adds q·mean(K)·scale to it.
//   What it buys: a channel with a large common offset no longer sets the INT8 step of the
//   whole block, so the varying part of K keeps its bits.
// - INT8 codes, symmetric: one scale per Br rows of Q (v2 per warp: 32 rows of the 128-row
//   CTA tile) and per Bc rows of K; scale = max|x| / 127, code = round(x / scale).
//   v1 (Triton) rounds half away from zero (adds ±0.5, then truncates); v2's CUDA quantizer
//   uses cvt.rni (ties to even). Only the block's max lands on ±127; nothing clamps.
// - Where the softmax scale goes: v1 multiplies Q by scale·log2 e before quantizing, so
//   Q's INT8 scale carries it and S = int·qScale·kScale is already in log2 units; v2 keeps
//   Q's plain scale and multiplies scale·log2 e into the dequantization factor in the kernel.
//   Either way the softmax runs with exp2.
//
// V:
// - v1: V is cast to fp16 (the kernel's P·V is an fp16 MMA; bf16 or fp32 V is converted).
// - v2: V in FP8 e4m3 with one scale per channel: max over the tokens of |V[:, c]| / 448.
//   Stored here as code·scale, so P·V multiplies the exact values the tensor core sees.

import { roundTo } from '../../core/dtype.ts';
import { kOffset, qOffset, vOffset, type AttentionInputs } from '../../core/inputs.ts';
import { softmaxScale, type AttentionProblem } from '../../core/problem.ts';
import { FP8, roundFp8 } from '../../lowprec/fp8.ts';
import { INT8_MAX, int8Scale, quantizeInt8 } from '../../lowprec/int8.ts';

export type SageVersion = 1 | 2;

/**
 * v1's Triton quantizer: x + 0.5·sign(x) in fp32, then truncation toward zero. Half away from
 * zero, except that the fp32 add itself rounds: 70.49999 + 0.5 lands on 71.
 */
export function roundHalfAwayFp32(x: number): number {
  return Math.trunc(Math.fround(x + (x >= 0 ? 0.5 : -0.5)));
}

/**
 * The INT8 code of x under a scale, with the version's rounding of the fp32 quotient x / scale.
 * Inputs stored in 16 bits make exact and near ties common (their ratios are ratios of short
 * mantissas), so the rule matters.
 */
export function sageCode(version: SageVersion, x: number, scale: number): number {
  const r = Math.fround(x / scale);
  if (version === 2) return quantizeInt8(r, 1);
  const c = roundHalfAwayFp32(r);
  return c > INT8_MAX ? INT8_MAX : c < -INT8_MAX ? -INT8_MAX : c;
}

export interface SageQuantOptions {
  version: SageVersion;
  smoothK: boolean;
  /** Rows of Q per scale (Br, or a warp's 32 rows in v2) and keys of K per scale (Bc). */
  qRows: number;
  kRows: number;
}

export interface SagePrepared {
  /** INT8 codes in the layout of q and k. */
  qCodes: Int8Array;
  kCodes: Int8Array;
  /** Per (batch, head) the scales of its Q row groups; per (batch, kv head) those of its K blocks. */
  qScales: Float32Array[];
  kScales: Float32Array[];
  qSaturated: Int32Array[];
  kSaturated: Int32Array[];
  qRows: number;
  kRows: number;
  /** v2: scale·log2 e in fp32, multiplied into every dequantization factor; v1: 1 (folded into Q). */
  logitScale: number;
  /** The K mean subtracted per (batch, kv head), d values each; zeros without smoothing. */
  kMean: Float32Array[];
  /** V as P·V reads it (fp16 values in v1; e4m3 code·channel scale in v2). */
  v: Float32Array;
  /** v2: per (batch, kv head) the dv channel scales of V; empty in v1. */
  vScales: Float32Array[];
  /** Entries of Q, K (and V in v2) on ±max of their format. */
  saturated: number;
  version: SageVersion;
}

/** The dequantized logit of one (query, key) pair, in log2 units, exactly as the kernel forms it in fp32. */
export function dequantize(version: SageVersion, dot: number, qScale: number, kScale: number, logitScale: number): number {
  // v1: (int · q_scale) · k_scale, two fp32 multiplies (the Triton line); v2: int · (sm_scale·log2e · q_scale · k_scale).
  if (version === 1) return Math.fround(Math.fround(dot * qScale) * kScale);
  return Math.fround(dot * Math.fround(logitScale * Math.fround(qScale * kScale)));
}

export function prepareSage(p: AttentionProblem, x: AttentionInputs, o: SageQuantOptions): SagePrepared {
  const { version } = o;
  const d = p.d;
  const qCodes = new Int8Array(x.q.length);
  const kCodes = new Int8Array(x.k.length);
  let saturated = 0;
  // v1 folds scale·log2 e into Q before quantizing (fp32 multiply of each element).
  const qFactor = version === 1 ? Math.fround(Math.fround(softmaxScale(p)) * Math.fround(Math.LOG2E)) : 1;
  const logitScale = version === 2 ? Math.fround(Math.fround(softmaxScale(p)) * Math.fround(Math.LOG2E)) : 1;

  /** Quantize `rows` rows at `base` in groups of `groupRows`; `value(i, e)` gives the fp32 input. */
  const quantize = (codes: Int8Array, base: number, rows: number, groupRows: number, value: (i: number, e: number) => number) => {
    const groups = Math.ceil(rows / groupRows);
    const scales = new Float32Array(groups);
    const sat = new Int32Array(groups);
    for (let g = 0; g < groups; g++) {
      const r0 = g * groupRows;
      const r1 = Math.min(rows, r0 + groupRows);
      let amax = 0;
      for (let i = r0; i < r1; i++) for (let e = 0; e < d; e++) amax = Math.max(amax, Math.abs(value(i, e)));
      const scale = Math.fround(int8Scale(amax));
      scales[g] = scale;
      for (let i = r0; i < r1; i++)
        for (let e = 0; e < d; e++) {
          const c = sageCode(version, value(i, e), scale);
          codes[base + i * d + e] = c;
          if (Math.abs(c) === INT8_MAX) sat[g]++;
        }
      saturated += sat[g];
    }
    return { scales, sat };
  };

  const qScales: Float32Array[] = [];
  const qSaturated: Int32Array[] = [];
  const kScales: Float32Array[] = [];
  const kSaturated: Int32Array[] = [];
  const kMean: Float32Array[] = [];
  const vScales: Float32Array[] = [];
  const v = new Float32Array(x.v.length);
  const vStore = p.dtype === 'fp32' ? 'fp32' : 'fp16';
  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const base = qOffset(p, b, h, 0);
      const r = quantize(qCodes, base, p.nq, o.qRows, (i, e) => Math.fround(x.q[base + i * d + e] * qFactor));
      qScales.push(r.scales);
      qSaturated.push(r.sat);
    }
    for (let hk = 0; hk < p.hk; hk++) {
      const base = kOffset(p, b, hk, 0);
      const mean = new Float32Array(d);
      if (o.smoothK) {
        for (let e = 0; e < d; e++) {
          let s = 0;
          for (let j = 0; j < p.nk; j++) s += x.k[base + j * d + e];
          mean[e] = roundTo(p.dtype === 'fp32' ? 'fp32' : p.dtype, s / p.nk);
        }
      }
      kMean.push(mean);
      const r = quantize(kCodes, base, p.nk, o.kRows, (j, e) => Math.fround(x.k[base + j * d + e] - mean[e]));
      kScales.push(r.scales);
      kSaturated.push(r.sat);

      // V: fp16 for v1's MMA (fp32 problems stay unrounded), per-channel e4m3 for v2.
      const vb = vOffset(p, b, hk, 0);
      const dv = p.dv;
      if (version === 1) {
        for (let i = 0; i < p.nk * dv; i++) v[vb + i] = vStore === 'fp16' ? roundTo('fp16', x.v[vb + i]) : x.v[vb + i];
        vScales.push(new Float32Array(0));
      } else {
        const cs = new Float32Array(dv);
        const max = FP8.e4m3.max;
        for (let e = 0; e < dv; e++) {
          let amax = 0;
          for (let j = 0; j < p.nk; j++) amax = Math.max(amax, Math.abs(x.v[vb + j * dv + e]));
          cs[e] = amax > 0 ? Math.fround(amax / max) : 1;
          for (let j = 0; j < p.nk; j++) {
            const c = roundFp8('e4m3', x.v[vb + j * dv + e] / cs[e]);
            if (Math.abs(c) === max) saturated++;
            v[vb + j * dv + e] = c * cs[e];
          }
        }
        vScales.push(cs);
      }
    }
  }
  return {
    qCodes,
    kCodes,
    qScales,
    kScales,
    qSaturated,
    kSaturated,
    qRows: o.qRows,
    kRows: o.kRows,
    logitScale,
    kMean,
    v,
    vScales,
    saturated,
    version,
  };
}

/** The logit of query i against key j (log2 units): the exact integer dot of their codes, dequantized. */
export function sageLogit(p: AttentionProblem, s: SagePrepared, b: number, h: number, hk: number, i: number, j: number): number {
  const d = p.d;
  const qo = qOffset(p, b, h, i);
  const ko = kOffset(p, b, hk, j);
  // |code| ≤ 127, so |dot| ≤ 127²·d: exact in a double (and in the kernel's INT32).
  let dot = 0;
  for (let e = 0; e < d; e++) dot += s.qCodes[qo + e] * s.kCodes[ko + e];
  const qs = s.qScales[b * p.hq + h][Math.floor(i / s.qRows)];
  const ks = s.kScales[b * p.hk + hk][Math.floor(j / s.kRows)];
  return dequantize(s.version, dot, qs, ks, s.logitScale);
}

/** q·mean(K)·scale in natural-log units: what smoothing took out of every logit of row i, added back to the LSE. */
export function lseCorrection(
  p: AttentionProblem,
  x: AttentionInputs,
  s: SagePrepared,
  b: number,
  h: number,
  hk: number,
  i: number,
): number {
  const mean = s.kMean[b * p.hk + hk];
  const qo = qOffset(p, b, h, i);
  let dot = 0;
  for (let e = 0; e < p.d; e++) dot += x.q[qo + e] * mean[e];
  return Math.fround(dot * softmaxScale(p));
}
