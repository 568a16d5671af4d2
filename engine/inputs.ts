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

export type InputDistribution = 'normal' | 'large-logits' | 'outlier-row';

export interface RandomInputOptions {
  seed: number;
  distribution?: InputDistribution;
  /** For 'outlier-row': which query row (of every head) gets the planted outlier. */
  outlierRow?: number;
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
 * row made 30× larger, so its running max jumps and rescaling is visible.
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
export function kvHead(p: AttentionProblem, h: number): number {
  return Math.floor(h / (p.hq / p.hk));
}
