// Score modifiers and masks, shared by every algorithm so they cannot disagree.
// Order (as FlashAttention applies them): scale, softcap, ALiBi bias, then masks.

import { compileMaskSpec, isEmptyMask } from './mask-spec.ts';
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
  /** The problem's mask_mod (true keeps the key), on top of causal/window. */
  maskMod: ((b: number, h: number, i: number, j: number) => boolean) | undefined;
  /** The problem's score_mod, applied after scale, softcap and ALiBi. */
  scoreMod: ((b: number, h: number, i: number, j: number, s: number) => number) | undefined;
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
    ...userMods(p),
  };
}

function userMods(p: AttentionProblem): Pick<ScoreModel, 'maskMod' | 'scoreMod'> {
  if (p.mask === undefined || isEmptyMask(p.mask)) return { maskMod: undefined, scoreMod: undefined };
  const c = compileMaskSpec(p.mask, p.nq, p.nk);
  return { maskMod: c.maskMod, scoreMod: c.scoreMod };
}

/** The model without any mask (built-in or mask_mod): what a score is before masking. */
export function unmasked(m: ScoreModel): ScoreModel {
  return { ...m, causal: false, left: -1, right: -1, maskMod: undefined };
}

/** True when key j is visible to query i of batch b, query head h. */
export function visible(m: ScoreModel, i: number, j: number, b: number, h: number): boolean {
  const rel = j - (i + m.diag); // > 0: key is in the future of the aligned diagonal
  if (m.causal && rel > 0) return false;
  if (m.left >= 0 && rel < -m.left) return false;
  if (m.right >= 0 && rel > m.right) return false;
  return m.maskMod === undefined || m.maskMod(b, h, i, j);
}

/**
 * Key range [lo, hi) of query row i that causal/window leave; keys outside are masked. A
 * mask_mod can hide more inside it (ask visible()).
 */
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
export function modifyScore(m: ScoreModel, h: number, i: number, j: number, dot: number, b: number): number {
  if (!visible(m, i, j, b, h)) return -Infinity;
  let s = dot * m.scale;
  if (m.softcap !== undefined) s = m.softcap * Math.tanh(s / m.softcap);
  if (m.slopes !== undefined) s -= m.slopes[h] * Math.abs(j - (i + m.diag));
  if (m.scoreMod !== undefined) s = m.scoreMod(b, h, i, j, s);
  return s;
}

/** Does any key of the block [c0, c1) survive the mask for any query of [r0, r1) (batch b, query head h)? */
export function blockHasVisible(m: ScoreModel, r0: number, r1: number, c0: number, c1: number, nk: number, b: number, h: number): boolean {
  for (let i = r0; i < r1; i++) {
    const [lo, hi] = visibleRange(m, i, nk);
    const a = Math.max(lo, c0);
    const e = Math.min(hi, c1);
    if (m.maskMod === undefined) {
      if (a < e) return true;
      continue;
    }
    for (let j = a; j < e; j++) if (m.maskMod(b, h, i, j)) return true;
  }
  return false;
}

/** Is every key of the block [c0, c1) visible to every query of [r0, r1)? (A full block needs no mask.) */
export function blockFullyVisible(
  m: ScoreModel,
  r0: number,
  r1: number,
  c0: number,
  c1: number,
  nk: number,
  b: number,
  h: number,
): boolean {
  for (let i = r0; i < r1; i++) {
    const [lo, hi] = visibleRange(m, i, nk);
    if (lo > c0 || hi < c1) return false;
    if (m.maskMod !== undefined) for (let j = c0; j < c1; j++) if (!m.maskMod(b, h, i, j)) return false;
  }
  return true;
}
