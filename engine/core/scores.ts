// Score modifiers and masks, shared by every algorithm so they cannot disagree.
// Order (as FlashAttention applies them): scale, softcap, ALiBi bias, then masks. Every mask,
// the causal flag and the window included, is mask_mod text read through one tree.

import { compileMaskMod } from './mask-evaluate.ts';
import { parseMask, type MaskNode } from './mask-language.ts';
import { builtInMaskTexts } from './mask-presets.ts';
import { maskRange, type LinearBound } from './mask-range.ts';
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
  /** Bounds on kv_idx per query row, read off the mask (causal, window and the mask_mod's linear conjuncts). */
  lower: LinearBound[];
  upper: LinearBound[];
  /** What the mask says beyond those bounds (true keeps the key); undefined when the bounds are all of it. */
  maskMod: ((b: number, h: number, i: number, j: number) => boolean) | undefined;
  /** The problem's score_mod, applied after scale, softcap and ALiBi. */
  scoreMod: ((b: number, h: number, i: number, j: number, s: number) => number) | undefined;
}

export function scoreModel(p: AttentionProblem): ScoreModel {
  const user = p.mask === undefined || isEmptyMask(p.mask) ? undefined : compileMaskSpec(p.mask, p.nq, p.nk);
  // The causal flag and the window are mask_mod texts (mask-presets.ts), in front of the user's mask.
  const masks: MaskNode[] = builtInMaskTexts(p).map((t) => parseMask(t, 'mask_mod'));
  if (user?.checked.maskAst) masks.push(user.checked.maskAst);
  const range = maskRange(masks, p.nq, p.nk);
  return {
    scale: softmaxScale(p),
    softcap: p.softcap,
    slopes: alibiSlopes(p),
    diag: p.nk - p.nq,
    lower: range.lower,
    upper: range.upper,
    maskMod: range.residual && compileMaskMod(range.residual, { nq: p.nq, nk: p.nk, aux: user?.checked.aux ?? new Map() }),
    scoreMod: user?.scoreMod,
  };
}

/** The model without any mask: what a score is before masking. */
export function unmasked(m: ScoreModel): ScoreModel {
  return { ...m, lower: [], upper: [], maskMod: undefined };
}

/** True when key j is visible to query i of batch b, query head h. */
export function visible(m: ScoreModel, i: number, j: number, b: number, h: number): boolean {
  for (const u of m.upper) if (j > u.a * i + u.c) return false;
  for (const l of m.lower) if (j < l.a * i + l.c) return false;
  return m.maskMod === undefined || m.maskMod(b, h, i, j);
}

/**
 * Key range [lo, hi) of query row i that the mask's bounds leave; keys outside are masked. The
 * residual mask can hide more inside it (ask visible()).
 */
export function visibleRange(m: ScoreModel, i: number, nk: number): [number, number] {
  let lo = 0;
  let hi = nk;
  for (const l of m.lower) lo = Math.max(lo, l.a * i + l.c);
  for (const u of m.upper) hi = Math.min(hi, u.a * i + u.c + 1);
  if (hi < lo) hi = lo;
  return [Math.min(lo, nk), Math.max(0, hi)];
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

/** How many (query, key) pairs of the block [r0, r1) × [c0, c1) are visible. */
export function blockVisibleCount(m: ScoreModel, r0: number, r1: number, c0: number, c1: number, nk: number, b: number, h: number): number {
  let n = 0;
  for (let i = r0; i < r1; i++) {
    const [lo, hi] = visibleRange(m, i, nk);
    const a = Math.max(lo, c0);
    const e = Math.min(hi, c1);
    if (m.maskMod === undefined) n += Math.max(0, e - a);
    else for (let j = a; j < e; j++) if (m.maskMod(b, h, i, j)) n++;
  }
  return n;
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
