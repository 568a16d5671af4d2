// Checks sampled rows of a GPU result against the float64 reference, without computing
// the whole reference (infeasible at N = 64K). One row of attention depends only on its
// query row and its head's K and V; the formula is engine/core/reference.ts's, restricted to
// row i, and uses the same score modifiers (engine/core/scores.ts).

import { kOffset, kvHead, qOffset, vOffset, type AttentionInputs } from '../core/inputs.ts';
import { scoreModel, modifyScore } from '../core/scores.ts';
import type { AttentionProblem } from '../core/problem.ts';

export function referenceRow(
  p: AttentionProblem,
  h: number,
  i: number,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  b = 0, // the batch, for mask_mod / score_mod texts that read it
): { o: Float64Array; lse: number } {
  const sm = scoreModel(p);
  const sink = p.sinks?.[h];
  const s = new Float64Array(p.nk);
  let max = sink ?? -Infinity;
  for (let j = 0; j < p.nk; j++) {
    let dot = 0;
    for (let c = 0; c < p.d; c++) dot += q[c] * k[j * p.d + c];
    s[j] = modifyScore(sm, h, i, j, dot, b);
    if (s[j] > max) max = s[j];
  }
  const o = new Float64Array(p.dv);
  if (max === -Infinity) return { o, lse: -Infinity };
  let sum = sink !== undefined ? Math.exp(sink - max) : 0;
  for (let j = 0; j < p.nk; j++) {
    s[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - max);
    sum += s[j];
  }
  for (let j = 0; j < p.nk; j++) {
    if (s[j] === 0) continue;
    const w = s[j] / sum;
    for (let c = 0; c < p.dv; c++) o[c] += w * v[j * p.dv + c];
  }
  return { o, lse: max + Math.log(sum) };
}

/** Row i of (batch b, query head h) in float64, from whole-problem host inputs. */
export function referenceRowOf(p: AttentionProblem, x: AttentionInputs, b: number, h: number, i: number): { o: Float64Array; lse: number } {
  const hk = kvHead(p, h);
  const k0 = kOffset(p, b, hk, 0);
  const v0 = vOffset(p, b, hk, 0);
  return referenceRow(
    p,
    h,
    i,
    x.q.subarray(qOffset(p, b, h, i), qOffset(p, b, h, i) + p.d),
    x.k.subarray(k0, k0 + p.nk * p.d),
    x.v.subarray(v0, v0 + p.nk * p.dv),
    b,
  );
}

/** Max |ΔO| and |ΔLSE| of the sampled rows of a whole-problem result held in host arrays ([B, H, N, dv] and [B, H, N]). */
export function hostRowErrors(
  p: AttentionProblem,
  x: AttentionInputs,
  r: { o: ArrayLike<number>; lse: ArrayLike<number> },
  sites: readonly { b: number; h: number; i: number }[],
): { eo: number; el: number } {
  let eo = 0;
  let el = 0;
  for (const { b, h, i } of sites) {
    const ref = referenceRowOf(p, x, b, h, i);
    const oo = ((b * p.hq + h) * p.nq + i) * p.dv;
    for (let c = 0; c < p.dv; c++) eo = Math.max(eo, Math.abs(r.o[oo + c] - ref.o[c]));
    const l = r.lse[(b * p.hq + h) * p.nq + i];
    el = Math.max(el, l === ref.lse ? 0 : Math.abs(l - ref.lse));
  }
  return { eo, el };
}

/** Rows to sample: first, last, and evenly spaced ones in between (distinct, sorted). */
export function sampleRows(nq: number, count: number): number[] {
  const rows = new Set<number>([0, nq - 1]);
  for (let t = 1; rows.size < Math.min(count, nq) && t < count * 4; t++) rows.add(Math.floor((t * nq) / (count + 1)) % nq);
  return [...rows].sort((a, b) => a - b);
}

/**
 * The (batch, head, row) sites a check samples: sampleRows' rows, with batches and heads both
 * spread from the first to the last, so that a problem run in windows — of batches or of heads
 * inside a batch — has rows checked in its first and last window.
 */
export function sampleSites(p: AttentionProblem, count: number): { b: number; h: number; i: number }[] {
  const rows = sampleRows(p.nq, count);
  const spread = (t: number, n: number) => (rows.length > 1 ? Math.round((t * (n - 1)) / (rows.length - 1)) : 0);
  return rows.map((i, t) => ({ b: spread(t, p.batch), h: spread(t, p.hq), i }));
}

export interface RowCheck {
  rows: { b: number; h: number; i: number }[];
  maxAbsErrO: number;
  maxAbsErrLse: number;
  /** Root mean square of the sampled heads' K and V: ≈ 1 for fillRandom's N(0, 1) inputs. */
  inputRms: number;
}

/** Compares sampled rows of `run` (an AttentionRun after execute()) with the float64 reference. */
export async function checkSampledRows(
  run: {
    problem: AttentionProblem;
    readRow(b: number, h: number, i: number): Promise<{ o: Float32Array; lse: number }>;
    readRowInputs(b: number, h: number, i: number): Promise<{ q: Float32Array; k: Float32Array; v: Float32Array }>;
  },
  count = 4,
  /** Called before each row is read back (the WebGPU panel's progress). */
  onRow?: (row: number, rows: number) => void,
): Promise<RowCheck> {
  const p = run.problem;
  const rows = sampleSites(p, count);
  let eo = 0;
  let el = 0;
  let sq = 0;
  let n = 0;
  for (const [t, r] of rows.entries()) {
    onRow?.(t, rows.length);
    const x = await run.readRowInputs(r.b, r.h, r.i);
    for (const a of [x.k, x.v]) for (let j = 0; j < a.length; j++) sq += a[j] * a[j];
    n += x.k.length + x.v.length;
    const ref = referenceRow(p, r.h, r.i, x.q, x.k, x.v, r.b);
    const got = await run.readRow(r.b, r.h, r.i);
    for (let c = 0; c < p.dv; c++) eo = Math.max(eo, Math.abs(got.o[c] - ref.o[c]));
    el = Math.max(el, got.lse === ref.lse ? 0 : Math.abs(got.lse - ref.lse));
  }
  return { rows, maxAbsErrO: eo, maxAbsErrLse: el, inputRms: Math.sqrt(sq / Math.max(1, n)) };
}
