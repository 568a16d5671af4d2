// Non-finite input values (NaN, ±Infinity): counted per tensor and described in one sentence,
// the same whether the UI's import refuses a head or the CLI's run warns about a whole tensor.

import type { AttentionInputs } from './inputs.ts';
import type { AttentionProblem } from './problem.ts';

export interface NonFiniteCount {
  /** Values that are NaN or ±Infinity. */
  count: number;
  nan: number;
  inf: number;
  /** Values looked at. */
  total: number;
  /** Flat index and value of the first non-finite value; undefined when there is none. */
  first?: { index: number; value: number };
}

export function countNonFinite(a: ArrayLike<number>): NonFiniteCount {
  const c: NonFiniteCount = { count: 0, nan: 0, inf: 0, total: a.length };
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    if (Number.isFinite(v)) continue;
    c.count++;
    if (Number.isNaN(v)) c.nan++;
    else c.inf++;
    if (!c.first) c.first = { index: i, value: v };
  }
  return c;
}

/** Row-major [batch, heads, rows, cols] dims of a tensor, to place its first non-finite value. */
export type Dims4 = readonly [number, number, number, number];

/**
 * `origin` places an array that holds one head of a larger tensor (the UI's import).
 * "Q holds NaN at row 1, column 1 of batch 0, head 1 and 5 more non-finite values (6 of 64:
 * 4 NaN, 2 ±Infinity); attention inputs must be finite". Empty when the count is 0.
 */
export function nonFiniteSentence(
  tensor: string,
  c: NonFiniteCount,
  dims: Dims4,
  origin: { batch: number; head: number } = { batch: 0, head: 0 },
): string {
  if (!c.first) return '';
  const [, heads, rows, cols] = dims;
  const i = c.first.index;
  const col = i % cols;
  const row = Math.floor(i / cols) % rows;
  const head = origin.head + (Math.floor(i / (cols * rows)) % heads);
  const batch = origin.batch + Math.floor(i / (cols * rows * heads));
  const more =
    c.count > 1
      ? ` and ${c.count - 1} more non-finite value${c.count > 2 ? 's' : ''} (${c.count} of ${c.total}: ${c.nan} NaN, ${c.inf} ±Infinity)`
      : '';
  return `${tensor} holds ${c.first.value} at row ${row}, column ${col} of batch ${batch}, head ${head}${more}; attention inputs must be finite`;
}

export interface NonFiniteInputs {
  counts: { q: number; k: number; v: number };
  /** One sentence per tensor that has any. */
  sentences: string[];
}

/** Counts of Q, K and V of a whole problem (BHND), with a sentence for each tensor that has any. */
export function nonFiniteInputs(p: AttentionProblem, x: AttentionInputs): NonFiniteInputs {
  const tensors = [
    ['q', 'Q', x.q, [p.batch, p.hq, p.nq, p.d]],
    ['k', 'K', x.k, [p.batch, p.hk, p.nk, p.d]],
    ['v', 'V', x.v, [p.batch, p.hk, p.nk, p.dv]],
  ] as const;
  const out: NonFiniteInputs = { counts: { q: 0, k: 0, v: 0 }, sentences: [] };
  for (const [key, name, a, dims] of tensors) {
    const c = countNonFinite(a);
    out.counts[key] = c.count;
    if (c.count > 0) out.sentences.push(nonFiniteSentence(name, c, dims));
  }
  return out;
}
