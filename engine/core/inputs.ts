// Input tensors of a problem, always held in BHND order (batch, head, sequence, dim),
// contiguous, as float32 values already rounded to the problem's dtype.

import { roundArray } from './dtype.ts';
import { ProblemError, validateProblem, type AttentionProblem } from './problem.ts';
import { mulberry32, normalSource } from './random.ts';

export interface AttentionInputs {
  /** [batch, hq, nq, d] */
  q: Float32Array;
  /** [batch, hk, nk, d] */
  k: Float32Array;
  /** [batch, hk, nk, dv] */
  v: Float32Array;
}

export type InputDistribution = 'normal' | 'large-logits' | 'outlier-row' | 'fa3-outliers' | 'sink';
/** Every distribution, for the places that list or check them (the share links). */
export const INPUT_DISTRIBUTIONS: readonly InputDistribution[] = ['normal', 'large-logits', 'outlier-row', 'fa3-outliers', 'sink'];

/** Keys that the 'sink' distribution makes attention sinks (the first tokens, as in trained models). */
export const SINK_KEYS = 4;

export interface RandomInputOptions {
  seed: number;
  distribution?: InputDistribution;
  /** For 'outlier-row': which query row (of every head) gets the planted outlier. */
  outlierRow?: number;
  /** For 'fa3-outliers': the outliers' standard deviation (default 10, the paper's N(0,100)). */
  outlierStd?: number;
}

export function inputSizes(p: AttentionProblem): { q: number; k: number; v: number; o: number; lse: number } {
  return {
    q: p.batch * p.hq * p.nq * p.d,
    k: p.batch * p.hk * p.nk * p.d,
    v: p.batch * p.hk * p.nk * p.dv,
    o: p.batch * p.hq * p.nq * p.dv,
    lse: p.batch * p.hq * p.nq,
  };
}

/** Throws ProblemError when the tensors' lengths do not match the problem. */
export function checkInputs(p: AttentionProblem, x: AttentionInputs): void {
  const s = inputSizes(p);
  for (const t of ['q', 'k', 'v'] as const) {
    if (x[t].length !== s[t]) {
      throw new ProblemError(t, `expected ${s[t]} elements for the problem's shape, got ${x[t].length}`);
    }
  }
}

/**
 * Random inputs. 'normal': N(0,1) entries. 'large-logits': Q scaled ×12 so logits are
 * large enough to overflow a softmax without max subtraction. 'outlier-row': one query
 * row made 30× larger, so its running max jumps and rescaling is visible. 'fa3-outliers':
 * the FA3 paper's FP8 error experiment (section 4.3), every entry N(0,1) plus N(0,100)
 * (standard deviation 10) with probability 0.001. 'sink': every query row shares one
 * direction u and the first SINK_KEYS keys of each head are u (logit about sqrt(d)), so those keys get large
 * logits in every row (an attention-sink pattern), the other keys stay N(0,1).
 */
export function randomInputs(p: AttentionProblem, opts: RandomInputOptions): AttentionInputs {
  validateProblem(p);
  const s = inputSizes(p);
  const normal = normalSource(mulberry32(opts.seed));
  const fill = (n: number, scale = 1): Float32Array => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = normal() * scale;
    return a;
  };
  const dist = opts.distribution ?? 'normal';
  const q = fill(s.q, dist === 'large-logits' ? 12 : 1);
  const k = fill(s.k);
  const v = fill(s.v);
  if (dist === 'outlier-row') {
    const row = Math.min(opts.outlierRow ?? Math.floor(p.nq / 2), p.nq - 1);
    for (let bh = 0; bh < p.batch * p.hq; bh++) {
      const base = (bh * p.nq + row) * p.d;
      for (let c = 0; c < p.d; c++) q[base + c] *= 30;
    }
  }
  if (dist === 'fa3-outliers') {
    const rnd = mulberry32(opts.seed ^ 0x5eed);
    const extra = normalSource(rnd);
    for (const t of [q, k, v]) for (let i = 0; i < t.length; i++) if (rnd() < 0.001) t[i] += (opts.outlierStd ?? 10) * extra();
  }
  if (dist === 'sink') {
    const u = Array.from({ length: p.d }, () => normal());
    for (let r = 0; r < s.q / p.d; r++) for (let c = 0; c < p.d; c++) q[r * p.d + c] += u[c];
    for (let bh = 0; bh < p.batch * p.hk; bh++)
      for (let j = 0; j < Math.min(SINK_KEYS, p.nk); j++) for (let c = 0; c < p.d; c++) k[(bh * p.nk + j) * p.d + c] = u[c];
  }
  return { q: roundArray(p.dtype, q), k: roundArray(p.dtype, k), v: roundArray(p.dtype, v) };
}

/** Index helpers for BHND storage. */
export function qOffset(p: AttentionProblem, b: number, h: number, i: number): number {
  return ((b * p.hq + h) * p.nq + i) * p.d;
}
export function kOffset(p: AttentionProblem, b: number, hk: number, j: number): number {
  return ((b * p.hk + hk) * p.nk + j) * p.d;
}
export function vOffset(p: AttentionProblem, b: number, hk: number, j: number): number {
  return ((b * p.hk + hk) * p.nk + j) * p.dv;
}
export function oOffset(p: AttentionProblem, b: number, h: number, i: number): number {
  return ((b * p.hq + h) * p.nq + i) * p.dv;
}
/** The key/value head a query head reads under GQA/MQA. */
export function kvHead(p: Pick<AttentionProblem, 'hq' | 'hk'>, h: number): number {
  return Math.floor(h / (p.hq / p.hk));
}
