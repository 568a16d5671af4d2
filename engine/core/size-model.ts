// One size model for every entry point (the debugger session, the CLI's run, trace and
// simulate, the serving layouts, the browser's problem panel): the bytes and steps a
// problem will need, computed from its dimensions alone, before anything is allocated.
// A problem over a budget is refused with the one dimension to change and how far.

import type { ProblemDims } from './problem.ts';

/** The dimensions a size depends on: the problem's, and the tile sizes. */
export type SizeDim = keyof ProblemDims | 'blockM' | 'blockN';

export const SIZE_DIMS: readonly SizeDim[] = ['batch', 'hq', 'hk', 'nq', 'nk', 'd', 'dv', 'blockM', 'blockN'];

export interface SizeQuery extends ProblemDims {
  blockM: number;
  blockN: number;
  /** The backward pass records about 2.5 times the forward's tiles and holds the gradients. */
  pass?: 'forward' | 'backward';
}

export interface ProblemSize {
  /** Q, K, V as float32 (BHND). */
  inputBytes: number;
  /** O and the LSE as float32. */
  outputBytes: number;
  /** What a run holds at its peak besides the inputs and outputs: the float64 reference, a standard forward's S and P of one head, the gradients. */
  workBytes: number;
  /** The trace the debugger session records (its numbers as JS doubles, plus per-event overhead), with the per-head inputs the views draw. */
  steppingBytes: number;
  /** The trace as JSON lines (`trace` output): about 20 characters per number. */
  traceJsonBytes: number;
  /** Trace events (steps) of one pass. */
  steps: number;
  /** Multiply-adds of the two matmuls, as the papers count FLOPs. */
  flops: number;
  /** inputBytes + outputBytes + workBytes: the memory of an untraced run. */
  runBytes: number;
}

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** The largest tile any kernel FlashScope models uses; its own tile size is kept even on a shorter sequence. */
export const MAX_KERNEL_TILE = 256;

/** Tiles past every kernel's are capped at the sequence they tile: a 10⁹-row block of a 64-row problem is a 64-row block. */
export function capBlocks(dims: Pick<ProblemDims, 'nq' | 'nk'>, blockM: number, blockN: number): { blockM: number; blockN: number } {
  const cap = (b: number, n: number) => (b > MAX_KERNEL_TILE ? Math.min(b, n) : b);
  return { blockM: cap(blockM, dims.nq), blockN: cap(blockN, dims.nk) };
}

/** Every figure is a float64 product of the dimensions, so it stays exact-enough and finite for any positive integers. */
export function problemSize(q: SizeQuery): ProblemSize {
  // A tile longer than its sequence holds only the sequence's rows.
  const [blockM, blockN] = [Math.min(q.blockM, q.nq), Math.min(q.blockN, q.nk)];
  const heads = q.batch * q.hq;
  const tr = ceilDiv(q.nq, blockM);
  const tc = ceilDiv(q.nk, blockN);
  const backward = q.pass === 'backward' ? 2.5 : 1;
  const qElems = heads * q.nq * q.d;
  const kvElems = q.batch * q.hk * q.nk * (q.d + q.dv);
  const oElems = heads * q.nq * q.dv;
  const inputBytes = 4 * (qElems + kvElems);
  const outputBytes = 4 * (oElems + heads * q.nq);
  const gradBytes = q.pass === 'backward' ? 4 * (qElems + kvElems + oElems) : 0;
  const workBytes = 8 * oElems + 4 * 2 * q.nq * q.nk + gradBytes;
  // Numbers per head: S, mask and P tiles, O rows per K/V block, per-row statistics per step.
  const traceNumbers = heads * (3 * q.nq * q.nk + tc * q.nq * q.dv + tr * tc * 8 * blockM) * backward;
  const steps = Math.ceil(heads * tr * (tc * 8 + 3) * backward);
  // The views draw each head's Q, K and V: d counts here even when the trace has no d-wide array.
  const headInputs = q.nq * q.d + q.nk * (q.d + q.dv);
  const steppingBytes = traceNumbers * 8 + steps * 160 + headInputs * 8;
  const traceJsonBytes = traceNumbers * 20 + steps * 200;
  const flops = 2 * heads * q.nq * q.nk * (q.d + q.dv);
  return {
    inputBytes,
    outputBytes,
    workBytes,
    steppingBytes,
    traceJsonBytes,
    steps,
    flops,
    runBytes: inputBytes + outputBytes + workBytes,
  };
}

/** Memory a run in the browser may hold (inputs, outputs, reference): no entry there asks for more. */
export const RUN_BUDGET_BYTES = 1024 * 1024 * 1024;

/** What a caller limits: one figure of the size model, and its budget. */
export interface SizeLimit {
  measure: (s: ProblemSize) => number;
  budget: number;
  /** What is being sized, for the message: "this trace", "this run's memory". */
  what: string;
  /** The figure's unit in the message (bytes by default). */
  unit?: 'bytes' | 'steps';
  /** How the caller spells each dimension (CLI flags, panel labels); the field name otherwise. */
  names?: Partial<Record<SizeDim, string>>;
}

export class SizeError extends Error {
  constructor(
    /** The dimension to change. */
    readonly field: SizeDim,
    /** Its largest value that fits with every other dimension kept (0 when none does). */
    readonly largestFitting: number,
    readonly needed: number,
    message: string,
  ) {
    super(message);
    this.name = 'SizeError';
  }
}

/** Values the dimensions usually take, so the one furthest above its usual size is named. */
const USUAL: Record<SizeDim, number> = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 32, dv: 32, blockM: 16, blockN: 16 };

export function formatBytes(n: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  if (i === 0) return `${Math.round(v)} bytes`;
  return `${v >= 100 || v >= 1e6 ? Math.round(v).toLocaleString('en-US') : v.toPrecision(3)} ${units[i]}`;
}

function formatFigure(n: number, unit: 'bytes' | 'steps'): string {
  return unit === 'steps' ? `${Math.round(n).toLocaleString('en-US')} steps` : formatBytes(n);
}

/** The largest value of `dim` (1 … its current value) whose figure fits the budget, 0 if even 1 does not. */
function largestFitting(q: SizeQuery, dim: SizeDim, limit: SizeLimit): number {
  const at = (v: number) => limit.measure(problemSize({ ...q, [dim]: v }));
  if (at(1) > limit.budget) return 0;
  let lo = 1;
  let hi = q[dim];
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (at(mid) <= limit.budget) lo = mid;
    else hi = mid;
  }
  return at(hi) <= limit.budget ? hi : lo;
}

/** The figure of `q` under `limit`; throws SizeError naming the dimension to change when it is over the budget. */
export function checkSize(q: SizeQuery, limit: SizeLimit): number {
  const needed = limit.measure(problemSize(q));
  if (needed <= limit.budget) return needed;
  const unit = limit.unit ?? 'bytes';
  const name = (d: SizeDim) => limit.names?.[d] ?? d;
  // Name the dimension furthest above its usual value among those that alone can bring the figure within budget.
  const candidates = SIZE_DIMS.filter((d) => q[d] > 1)
    .map((d) => ({ d, fit: largestFitting(q, d, limit), ratio: q[d] / USUAL[d] }))
    .sort((a, b) => Number(b.fit > 0) - Number(a.fit > 0) || b.ratio - a.ratio);
  const best = candidates[0] ?? { d: 'nq' as SizeDim, fit: 0 };
  const head = `${limit.what} would need about ${formatFigure(needed, unit)}, over the limit of ${formatFigure(limit.budget, unit)}`;
  const advice =
    best.fit > 0
      ? `make ${name(best.d)} smaller (${q[best.d]}; at most ${best.fit} fits with the other sizes as they are)`
      : `make ${name(best.d)} (${q[best.d]}) and the other sizes smaller: no value of ${name(best.d)} alone fits`;
  throw new SizeError(best.d, best.fit, needed, `${head}: ${advice}`);
}
