// The arithmetic every tiled algorithm shares: one tile of logits S = Q_i K_j^T with the
// score modifiers, the mask, and O += P V_j. Written once over flat typed arrays with
// precomputed offsets, so the tracing-off path allocates nothing per element and the
// algorithms differ only in what they do *between* these kernels — which is the point
// of comparing them.

import { kvHead, type AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { visible, visibleRange, type ScoreModel } from '../core/scores.ts';

/** Where one (batch, query head) pair lives in the BHND inputs. */
export interface HeadSlice {
  b: number;
  h: number;
  /** Offset of row 0 of this head in q / o. */
  qBase: number;
  oBase: number;
  /** Offset of row 0 of the key/value head it reads (GQA/MQA). */
  kBase: number;
  vBase: number;
}

export function headSlice(p: AttentionProblem, b: number, h: number): HeadSlice {
  const hk = kvHead(p, h);
  return {
    b,
    h,
    qBase: (b * p.hq + h) * p.nq * p.d,
    oBase: (b * p.hq + h) * p.nq * p.dv,
    kBase: (b * p.hk + hk) * p.nk * p.d,
    vBase: (b * p.hk + hk) * p.nk * p.dv,
  };
}

/**
 * s[r*stride + c] = modified logit of query r0+r and key c0+c (scale, softcap, ALiBi),
 * *before* masking, so the mask phase can show what it hides. Returns true when any
 * entry of the tile is masked (causal/window/mask_mod); with `checkMask` false (the caller's
 * block mask already classed the tile) the mask is not evaluated and the result is false.
 */
export function scoreTile(
  p: AttentionProblem,
  sm: ScoreModel,
  x: AttentionInputs,
  hs: HeadSlice,
  r0: number,
  rows: number,
  c0: number,
  cols: number,
  s: Float32Array,
  stride: number,
  checkMask = true,
): boolean {
  const d = p.d;
  const q = x.q;
  const k = x.k;
  const scale = sm.scale;
  const cap = sm.softcap;
  const slope = sm.slopes ? sm.slopes[hs.h] : 0;
  let anyMasked = false;
  for (let r = 0; r < rows; r++) {
    const i = r0 + r;
    const qo = hs.qBase + i * d;
    const so = r * stride;
    for (let c = 0; c < cols; c++) {
      const ko = hs.kBase + (c0 + c) * d;
      // Four independent partial sums: lets the JIT overlap the multiply-adds (float64 accumulation).
      let d0 = 0;
      let d1 = 0;
      let d2 = 0;
      let d3 = 0;
      let e = 0;
      for (; e + 3 < d; e += 4) {
        d0 += q[qo + e] * k[ko + e];
        d1 += q[qo + e + 1] * k[ko + e + 1];
        d2 += q[qo + e + 2] * k[ko + e + 2];
        d3 += q[qo + e + 3] * k[ko + e + 3];
      }
      for (; e < d; e++) d0 += q[qo + e] * k[ko + e];
      let v = (d0 + d1 + (d2 + d3)) * scale;
      if (cap !== undefined) v = cap * Math.tanh(v / cap);
      if (slope !== 0) v -= slope * Math.abs(c0 + c - (i + sm.diag));
      if (sm.scoreMod !== undefined) v = sm.scoreMod(hs.b, hs.h, i, c0 + c, v);
      s[so + c] = v;
    }
    if (!checkMask || anyMasked) continue;
    const [lo, hi] = visibleRange(sm, i, p.nk);
    if (lo > c0 || hi < c0 + cols) anyMasked = true;
    else if (sm.maskMod !== undefined) for (let c = 0; c < cols && !anyMasked; c++) anyMasked = !sm.maskMod(hs.b, hs.h, i, c0 + c);
  }
  return anyMasked;
}

/** Sets masked entries of the tile to -Infinity; fills `bits` (rows×cols, 1 = masked) when given. */
export function maskTile(
  p: AttentionProblem,
  sm: ScoreModel,
  hs: HeadSlice,
  r0: number,
  rows: number,
  c0: number,
  cols: number,
  s: Float32Array,
  stride: number,
  bits?: number[],
): void {
  for (let r = 0; r < rows; r++) {
    const [lo, hi] = visibleRange(sm, r0 + r, p.nk);
    for (let c = 0; c < cols; c++) {
      const j = c0 + c;
      const hidden = j < lo || j >= hi || (sm.maskMod !== undefined && !visible(sm, r0 + r, j, hs.b, hs.h));
      if (hidden) s[r * stride + c] = -Infinity;
      if (bits) bits[r * cols + c] = hidden ? 1 : 0;
    }
  }
}

/** acc[r*accStride + e] += w * P[r, c] * V[c0 + c, e]; rows of P that are all zero cost nothing. */
export function accumulatePV(
  p: AttentionProblem,
  x: AttentionInputs,
  hs: HeadSlice,
  pt: Float32Array,
  ptStride: number,
  rows: number,
  c0: number,
  cols: number,
  acc: Float32Array,
  accStride: number,
): void {
  const dv = p.dv;
  const v = x.v;
  for (let r = 0; r < rows; r++) {
    const ao = r * accStride;
    for (let c = 0; c < cols; c++) {
      const w = pt[r * ptStride + c];
      if (w === 0) continue;
      const vo = hs.vBase + (c0 + c) * dv;
      let e = 0;
      for (; e + 3 < dv; e += 4) {
        acc[ao + e] += w * v[vo + e];
        acc[ao + e + 1] += w * v[vo + e + 1];
        acc[ao + e + 2] += w * v[vo + e + 2];
        acc[ao + e + 3] += w * v[vo + e + 3];
      }
      for (; e < dv; e++) acc[ao + e] += w * v[vo + e];
    }
  }
}

/** Rounds P to the input dtype in place (fp32 storage already rounds). */
export function roundTile(
  rounder: ((x: number) => number) | undefined,
  pt: Float32Array,
  rows: number,
  cols: number,
  stride: number,
): void {
  if (!rounder) return;
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) pt[r * stride + c] = rounder(pt[r * stride + c]);
}
