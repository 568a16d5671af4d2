// The arithmetic of one backward tile — query rows [r0, r0 + rows) against keys
// [c0, c0 + cols) of one (batch, query head) — shared by every tiled backward (FA1, FA2,
// FA3) and by standard attention's full-width strips. Each function is one line of the
// papers' pseudo-code; the algorithms differ in the order they call them and in where
// the results live (registers, shared memory, HBM), which is what their traces show.
//
// Precision follows the kernels: S, P, dP and dS in fp32; P and dS rounded to the input
// dtype before they enter a matmul (`p16`, `ds`); dV, dK and the dQ partial accumulated in
// fp32 (Float32Array stores round every add).

import type { AttentionProblem } from '../core/problem.ts';
import { blockHasVisible, type ScoreModel } from '../core/scores.ts';
import { headSlice, maskTile, scoreTile, type HeadSlice } from '../algorithms/tile-math.ts';
import type { BackwardInputs } from './types.ts';

/** On-chip buffers of one tile, sized for the largest tile and reused. */
export class GradTile {
  /** Logits (after the modifiers; masked entries −∞ once masked). */
  readonly s: Float32Array;
  /** Softcap only: 1 − tanh²(s/c) per entry, taken before masking (as the kernel does, to avoid 1 − ∞²). */
  readonly capGrad: Float32Array;
  /** P in fp32 (used for dS) and as fed to the dV matmul (rounded to the dtype for 16-bit). */
  readonly p32: Float32Array;
  readonly p16: Float32Array;
  readonly dp: Float32Array;
  /** dS as fed to the dQ and dK matmuls. */
  readonly ds: Float32Array;
  /** dS_ij K_j of the current tile (rows × d), before it is added into dQ. */
  readonly dqPart: Float32Array;
  /** Per row: D_i and the statistics P is recomputed from. */
  readonly D: Float64Array;
  readonly lse: Float64Array;
  anyMasked = false;
  /** `within`: a view of rows [r0, r0 + maxRows) of a larger tile (standard attention's strips of its N×N matrices in HBM). */
  constructor(
    readonly maxRows: number,
    readonly stride: number,
    d: number,
    within?: { tile: GradTile; r0: number },
  ) {
    const n = maxRows * stride;
    const part = <T extends Float32Array | Float64Array>(a: T | undefined, fresh: () => T, rowLen: number): T =>
      within && a ? (a.subarray(within.r0 * rowLen, (within.r0 + maxRows) * rowLen) as T) : fresh();
    const w = within?.tile;
    this.s = part(w?.s, () => new Float32Array(n), stride);
    this.capGrad = part(w?.capGrad, () => new Float32Array(n), stride);
    this.p32 = part(w?.p32, () => new Float32Array(n), stride);
    this.p16 = part(w?.p16, () => new Float32Array(n), stride);
    this.dp = part(w?.dp, () => new Float32Array(n), stride);
    this.ds = part(w?.ds, () => new Float32Array(n), stride);
    this.dqPart = new Float32Array(maxRows * d);
    this.D = part(w?.D, () => new Float64Array(maxRows), 1);
    this.lse = part(w?.lse, () => new Float64Array(maxRows), 1);
  }
}

/** Where one tile is: the head's offsets and the row/column ranges. */
export interface TilePos {
  hs: HeadSlice;
  r0: number;
  rows: number;
  c0: number;
  cols: number;
}

export function tilePos(p: AttentionProblem, b: number, h: number, r0: number, r1: number, c0: number, c1: number): TilePos {
  return { hs: headSlice(p, b, h), r0, rows: r1 - r0, c0, cols: c1 - c0 };
}

/** S_ij = τ Q_i K_jᵀ with the modifiers (unmasked), and the softcap derivative from it. Returns true when a mask phase is needed. */
export function scores(p: AttentionProblem, sm: ScoreModel, x: BackwardInputs, t: GradTile, at: TilePos): boolean {
  const { hs, r0, rows, c0, cols } = at;
  t.anyMasked = scoreTile(p, sm, x, hs, r0, rows, c0, cols, t.s, t.stride);
  if (sm.softcap !== undefined) {
    const c = sm.softcap;
    const slope = sm.slopes ? sm.slopes[hs.h] : 0;
    for (let r = 0; r < rows; r++)
      for (let k = 0; k < cols; k++) {
        // The capped logit before the ALiBi bias: c·tanh(u/c), so tanh = that / c.
        const th = (t.s[r * t.stride + k] + slope * Math.abs(c0 + k - (r0 + r + sm.diag))) / c;
        t.capGrad[r * t.stride + k] = 1 - th * th;
      }
  }
  return t.anyMasked;
}

/** Masked entries of S set to −∞; `bits` (rows×cols, 1 = masked) filled when given. */
export function mask(p: AttentionProblem, sm: ScoreModel, t: GradTile, at: TilePos, bits?: number[]): void {
  maskTile(p, sm, at.hs, at.r0, at.rows, at.c0, at.cols, t.s, t.stride, bits);
}

/**
 * P_ij = exp(S_ij − LSE_i) from t.lse (FA1 passes its m and l folded into t.lse: m + log l
 * gives the same P as diag(l)⁻¹ exp(S − m)). A row with LSE = −∞ (nothing visible) gets P = 0.
 */
export function recompute(t: GradTile, at: TilePos, rounder: ((x: number) => number) | undefined): void {
  const { rows, cols } = at;
  for (let r = 0; r < rows; r++) {
    const L = t.lse[r];
    const o = r * t.stride;
    for (let k = 0; k < cols; k++) {
      const sv = t.s[o + k];
      const v = L === -Infinity || sv === -Infinity ? 0 : Math.exp(sv - L);
      t.p32[o + k] = v;
      t.p16[o + k] = rounder ? rounder(t.p32[o + k]) : t.p32[o + k];
    }
  }
}

/** FA1's form: P_ij = diag(l_i)⁻¹ exp(S_ij − m_i), from its stored m and l. */
export function recomputeFromStats(
  t: GradTile,
  at: TilePos,
  m: ArrayLike<number>,
  l: ArrayLike<number>,
  rounder: ((x: number) => number) | undefined,
): void {
  const { rows, cols } = at;
  for (let r = 0; r < rows; r++) {
    const mr = m[r];
    const lr = l[r];
    const o = r * t.stride;
    for (let k = 0; k < cols; k++) {
      const sv = t.s[o + k];
      const v = mr === -Infinity || sv === -Infinity || !(lr > 0) ? 0 : Math.exp(sv - mr) / lr;
      t.p32[o + k] = v;
      t.p16[o + k] = rounder ? rounder(t.p32[o + k]) : t.p32[o + k];
    }
  }
}

/** dV_j += P_ijᵀ dO_i into `acc` (cols × dv, fp32). */
export function dvUpdate(p: AttentionProblem, x: BackwardInputs, t: GradTile, at: TilePos, acc: Float32Array): void {
  const { hs, r0, rows, cols } = at;
  const dv = p.dv;
  const dO = x.dO;
  for (let r = 0; r < rows; r++) {
    const go = hs.oBase + (r0 + r) * dv;
    for (let k = 0; k < cols; k++) {
      const w = t.p16[r * t.stride + k];
      if (w === 0) continue;
      const ao = k * dv;
      for (let e = 0; e < dv; e++) acc[ao + e] += w * dO[go + e];
    }
  }
}

/** dP_ij = dO_i V_jᵀ (fp32). */
export function dpCompute(p: AttentionProblem, x: BackwardInputs, t: GradTile, at: TilePos): void {
  const { hs, r0, rows, c0, cols } = at;
  const dv = p.dv;
  const dO = x.dO;
  const v = x.v;
  for (let r = 0; r < rows; r++) {
    const go = hs.oBase + (r0 + r) * dv;
    for (let k = 0; k < cols; k++) {
      const vo = hs.vBase + (c0 + k) * dv;
      let acc = 0;
      for (let e = 0; e < dv; e++) acc += dO[go + e] * v[vo + e];
      t.dp[r * t.stride + k] = acc;
    }
  }
}

/** D_i = rowsum(dO_i ∘ O_i) into t.D, with O the forward's output as stored. */
export function dsum(p: AttentionProblem, x: BackwardInputs, o: Float32Array, t: GradTile, hs: HeadSlice, r0: number, rows: number): void {
  const dv = p.dv;
  for (let r = 0; r < rows; r++) {
    const go = hs.oBase + (r0 + r) * dv;
    let acc = 0;
    for (let e = 0; e < dv; e++) acc += x.dO[go + e] * o[go + e];
    t.D[r] = Math.fround(acc);
  }
}

/** dS_ij = P_ij ∘ (dP_ij − D_i), times the softcap derivative; rounded to the dtype for the matmuls. */
export function dsCompute(
  sm: ScoreModel,
  t: GradTile,
  at: TilePos,
  rounder: ((x: number) => number) | undefined,
  pFor: 'p32' | 'p16' = 'p32',
): void {
  const { rows, cols } = at;
  const pt = t[pFor];
  const cap = sm.softcap !== undefined;
  for (let r = 0; r < rows; r++) {
    const D = t.D[r];
    const o = r * t.stride;
    for (let k = 0; k < cols; k++) {
      let v = pt[o + k] === 0 ? 0 : pt[o + k] * (t.dp[o + k] - D);
      if (cap) v *= t.capGrad[o + k];
      t.ds[o + k] = v;
      if (rounder) t.ds[o + k] = rounder(t.ds[o + k]);
    }
  }
}

/** The tile's dQ partial dS_ij K_j (× `scale`) into t.dqPart (rows × d, fp32). */
export function dqPartial(p: AttentionProblem, x: BackwardInputs, t: GradTile, at: TilePos, scale: number): void {
  const { hs, rows, c0, cols } = at;
  const d = p.d;
  const k = x.k;
  t.dqPart.fill(0, 0, rows * d);
  for (let r = 0; r < rows; r++) {
    const ao = r * d;
    for (let c = 0; c < cols; c++) {
      const w = t.ds[r * t.stride + c] * scale;
      if (w === 0) continue;
      const ko = hs.kBase + (c0 + c) * d;
      for (let e = 0; e < d; e++) t.dqPart[ao + e] += w * k[ko + e];
    }
  }
}

/** dQ_i += the partial, in the fp32 accumulator `dq` (HBM). */
export function dqAdd(p: AttentionProblem, t: GradTile, at: TilePos, dq: Float32Array): void {
  const d = p.d;
  const base = at.hs.qBase + at.r0 * d;
  for (let e = 0; e < at.rows * d; e++) dq[base + e] += t.dqPart[e];
}

/** dK_j += dS_ijᵀ Q_i (× `scale`) into `acc` (cols × d, fp32). */
export function dkUpdate(p: AttentionProblem, x: BackwardInputs, t: GradTile, at: TilePos, acc: Float32Array, scale: number): void {
  const { hs, r0, rows, cols } = at;
  const d = p.d;
  const q = x.q;
  for (let r = 0; r < rows; r++) {
    const qo = hs.qBase + (r0 + r) * d;
    for (let c = 0; c < cols; c++) {
      const w = t.ds[r * t.stride + c] * scale;
      if (w === 0) continue;
      const ao = c * d;
      for (let e = 0; e < d; e++) acc[ao + e] += w * q[qo + e];
    }
  }
}

/** Row blocks a column block's worker visits (ascending), skipping fully masked tiles. */
export function visitedRowBlocks(sm: ScoreModel, nq: number, nk: number, blockM: number, c0: number, c1: number): number[] {
  const out: number[] = [];
  for (let r0 = 0; r0 < nq; r0 += blockM) {
    const r1 = Math.min(nq, r0 + blockM);
    // The backward refuses masks that read b or h (engine/backward/setup.ts), so head (0, 0) speaks for all.
    if (blockHasVisible(sm, r0, r1, c0, c1, nk, 0, 0)) out.push(r0 / blockM);
  }
  return out;
}
