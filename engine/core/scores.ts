// Score modifiers and masks, shared by every algorithm so they cannot disagree.
// Order (as FlashAttention applies them): scale, softcap, ALiBi bias, then masks.

import { alibiSlopes, softmaxScale, type AttentionProblem } from './problem.ts';

/** Precomputed, per-problem view of the modifiers; build once, query per element. */
export interface ScoreModel {
  scale: number;
  softcap: number | undefined;
  /** Per query head, or undefined without ALiBi. */
  slopes: number[] | undefined;
  /** Offset aligning query i with key i + diag (bottom-right alignment). */
  diag: number;
  causal: boolean;
  left: number; // -1 = unbounded
  right: number; // -1 = unbounded
}

export function scoreModel(p: AttentionProblem): ScoreModel {
  return {
    scale: softmaxScale(p),
    softcap: p.softcap,
    slopes: alibiSlopes(p),
    diag: p.nk - p.nq,
    causal: p.causal,
    left: p.window?.left ?? -1,
    right: p.window?.right ?? -1,
  };
}

/** True when key j is visible to query i. */
export function visible(m: ScoreModel, i: number, j: number): boolean {
  const rel = j - (i + m.diag); // > 0: key is in the future of the aligned diagonal
  if (m.causal && rel > 0) return false;
  if (m.left >= 0 && rel < -m.left) return false;
  if (m.right >= 0 && rel > m.right) return false;
  return true;
}

/** Visible key range [lo, hi) of query row i (keys outside are masked by causal/window). */
export function visibleRange(m: ScoreModel, i: number, nk: number): [number, number] {
  let lo = 0;
  let hi = nk;
  const center = i + m.diag;
  if (m.left >= 0) lo = Math.max(lo, center - m.left);
  let right = m.causal ? 0 : Infinity;
  if (m.right >= 0) right = Math.min(right, m.right);
  if (right !== Infinity) hi = Math.min(hi, center + right + 1);
  if (hi < lo) hi = lo;
  return [Math.max(0, Math.min(lo, nk)), Math.max(0, hi)];
}

/**
 * Turns a raw dot product q_i·k_j into the logit the softmax sees, or -Infinity when masked.
 * `h` is the query head (ALiBi slopes are per query head).
 */
export function modifyScore(m: ScoreModel, h: number, i: number, j: number, dot: number): number {
  if (!visible(m, i, j)) return -Infinity;
  let s = dot * m.scale;
  if (m.softcap !== undefined) s = m.softcap * Math.tanh(s / m.softcap);
  if (m.slopes !== undefined) s -= m.slopes[h] * Math.abs(j - (i + m.diag));
  return s;
}

/** Does any key of the block [c0, c1) survive the mask for any query of [r0, r1)? */
export function blockHasVisible(m: ScoreModel, r0: number, r1: number, c0: number, c1: number, nk: number): boolean {
  for (let i = r0; i < r1; i++) {
    const [lo, hi] = visibleRange(m, i, nk);
    if (Math.max(lo, c0) < Math.min(hi, c1)) return true;
  }
  return false;
}
