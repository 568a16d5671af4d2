// The Precision view's numbers: how far a loaded forward run is from float64, over the whole
// output and tile by tile for one head, plus what the low-precision fields of the trace say
// about each tile (quantization scales, saturated entries, P values flushed by the cast).
//
// Everything is read from the recorded events and the run's inputs, so it works for any
// trace that carries the fields (FA3's FP8 path, SageAttention's INT8 one) and is just as
// useful for fp16/bf16 runs, whose traces have none of them: there the S and P errors show
// the 16-bit rounding alone.
//
// S and P are compared per cell against float64 recomputed from the same inputs:
//   S64 = the score modifiers applied to the float64 dot product of the stored (not
//         quantized, not rotated) Q and K rows: what the run would have computed exactly,
//         less the row's shift where the algorithm shifted all of a row's scores (sage's K
//         smoothing, named by the normalize event's scoreShift);
//   P64 = exp(S64 − m), with the m the step itself subtracted (the exp event's m), so the P
//         error isolates what S's error and P's own rounding or cast did at that step rather
//         than the difference between a running max and the final one.
// Each cell of S and P is written once per head in every forward schedule FlashScope steps,
// so one error per cell describes the step that wrote it.

import { referenceAttention } from '../core/reference.ts';
import { outputError, type OutputError } from '../lowprec/error-metrics.ts';
import { kOffset, kvHead, qOffset, type AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { modifyScore, scoreModel } from '../core/scores.ts';
import type { Range, TraceEvent } from '../trace/events.ts';

/**
 * Largest float64 reference the view computes, in multiply-adds (B·Hq·Nq·Nk·(d + dv)): at the
 * limit (e.g. one 1024×1024 head, d = dv = 64) the first request took 6.7 s and later heads
 * 2.7 s on a busy 2-core machine, against 10 s for loading the FP8 trace itself. The trace
 * budget admits larger problems than this.
 */
export const PRECISION_MAX_MACS = 2 ** 27;

export function referenceMacs(p: AttentionProblem): number {
  return p.batch * p.hq * p.nq * p.nk * (p.d + p.dv);
}

/** Why the view will not compute the reference for this problem, or undefined when it will. */
export function precisionRefusal(p: AttentionProblem): string | undefined {
  const macs = referenceMacs(p);
  if (macs <= PRECISION_MAX_MACS) return undefined;
  return (
    `The float64 reference of this problem needs ${(macs / 1e6).toFixed(0)} M multiply-adds ` +
    `(B·Hq·Nq·Nk·(d + dv)); the Precision view computes at most ${(PRECISION_MAX_MACS / 1e6).toFixed(0)} M in the browser. ` +
    `Make Nq, Nk, d or the number of heads smaller, or use the command line's run, whose error.json measures any size.`
  );
}

/** What one (Q block, K/V block) tile of a head recorded about its precision. */
export interface TilePrecision {
  qBlock: number;
  kvBlock: number;
  rows: Range;
  cols: Range;
  /** Quantization scales where the trace has them (qk.qScale/kScale, pv.vScale, load.quant). */
  qScale?: number;
  kScale?: number;
  vScale?: number;
  /** The static factor P was multiplied by before its cast (exp.pScale). */
  pScale?: number;
  /** Entries of the tile's Q, K and V blocks that landed on ±max of the format (load.quant.saturated). */
  qSaturated?: number;
  kSaturated?: number;
  vSaturated?: number;
  /** P values of this tile flushed to zero by the cast. */
  flushed: number;
  /** Largest |S − S64| and |P − P64| over the tile's visible cells (NaN: not recorded). */
  sMaxErr: number;
  pMaxErr: number;
  /** The steps that wrote the tile's S and P (−1: none). */
  qkStep: number;
  expStep: number;
}

/** Per-head marks that need no reference: which P values the cast flushed, and each tile's scales. */
export interface PrecisionMarks {
  b: number;
  h: number;
  nq: number;
  nk: number;
  /** [nq×nk]: the step whose cast flushed this P value to zero, −1 where none did. */
  flushedAt: Int32Array;
  /** P values flushed in this head over the whole run. */
  flushed: number;
  tiles: TilePrecision[];
}

export interface PrecisionHead extends PrecisionMarks {
  dv: number;
  /** [nq×dv] |O − O64| of the run's final output. */
  oErr: Float32Array;
  /** The head's own output error. */
  oError: OutputError;
  /** [nq×nk] |S − S64| and |P − P64| of the values each step wrote; NaN where masked or never written. */
  sErr: Float32Array;
  pErr: Float32Array;
  /** [nq×nk] the float64 S and P they are measured against (P64 = exp(S64 − m) with the step's m). */
  s64: Float64Array;
  p64: Float64Array;
}

export interface PrecisionRun {
  /** The whole output [batch, hq, nq, dv] against float64: max abs, RMSE, relative L1. */
  total: OutputError;
  /** Every exp step that cast P (an exp event with `flushed`), and how many values it flushed. */
  castSteps: Int32Array;
  castFlushed: Int32Array;
  /** P values flushed over the whole run (the sum of castFlushed). */
  flushedTotal: number;
  /** Whether any event carries a quantization scale. */
  quantized: boolean;
  /** The algorithm's own run totals (AlgorithmResult.stats: flushedP, castP, saturated), when it reports them. */
  stats?: Record<string, number>;
  /** The size of the reference that was computed. */
  macs: number;
}

export type PrecisionResponse = { ok: true; run: PrecisionRun; head: PrecisionHead } | { ok: false; reason: string };

const tileKey = (qBlock: number, kvBlock: number) => `${qBlock},${kvBlock}`;

/** The tile record for an event's tile, created on first sight. */
function tileOf(tiles: Map<string, TilePrecision>, ev: TraceEvent): TilePrecision {
  const k = tileKey(ev.tile.qBlock, ev.tile.kvBlock);
  let t = tiles.get(k);
  if (!t) {
    t = {
      qBlock: ev.tile.qBlock,
      kvBlock: ev.tile.kvBlock,
      rows: [...ev.tile.rows],
      cols: [...ev.tile.cols],
      flushed: 0,
      sMaxErr: NaN,
      pMaxErr: NaN,
      qkStep: -1,
      expStep: -1,
    };
    tiles.set(k, t);
  } else {
    // FA3's consumer warpgroups each record their slice of the tile's rows: the tile spans them all.
    t.rows = [Math.min(t.rows[0], ev.tile.rows[0]), Math.max(t.rows[1], ev.tile.rows[1])];
    t.cols = [Math.min(t.cols[0], ev.tile.cols[0]), Math.max(t.cols[1], ev.tile.cols[1])];
  }
  return t;
}

const nonEmpty = (ev: TraceEvent) => ev.tile.rows[1] > ev.tile.rows[0] && ev.tile.cols[1] > ev.tile.cols[0];

/** The per-tile scales, saturations and flushed P values of head (b, h): no reference needed. */
export function precisionMarks(p: AttentionProblem, events: readonly TraceEvent[], b: number, h: number): PrecisionMarks {
  if (!(b >= 0 && b < p.batch && h >= 0 && h < p.hq)) throw new Error(`no head (${b}, ${h}) in this problem`);
  const flushedAt = new Int32Array(p.nq * p.nk).fill(-1);
  const tiles = new Map<string, TilePrecision>();
  // Load scales are per block of Q (qBlock) or of K/V (kvBlock); a load event of K names the
  // block in its tile's kvBlock. They are copied onto the tiles once all events are read.
  const qLoad = new Map<number, { scale: number; saturated: number }>();
  const kLoad = new Map<number, { scale: number; saturated: number }>();
  const vLoad = new Map<number, { scale: number; saturated: number }>();
  let flushed = 0;
  for (const ev of events) {
    if (ev.b !== b || ev.h !== h || ev.pass === 'backward') continue;
    if (ev.kind === 'load' && ev.quant) {
      if (ev.tensors.includes('Q')) qLoad.set(ev.tile.qBlock, ev.quant);
      if (ev.tensors.includes('K')) kLoad.set(ev.tile.kvBlock, ev.quant);
      if (ev.tensors.includes('V')) vLoad.set(ev.tile.kvBlock, ev.quant);
      continue;
    }
    if (!nonEmpty(ev)) continue;
    if (ev.kind === 'qk') {
      const t = tileOf(tiles, ev);
      if (t.qkStep < 0) t.qkStep = ev.step;
      if (ev.qScale !== undefined) t.qScale = ev.qScale;
      if (ev.kScale !== undefined) t.kScale = ev.kScale;
    } else if (ev.kind === 'exp') {
      const t = tileOf(tiles, ev);
      if (t.expStep < 0) t.expStep = ev.step;
      if (ev.pScale !== undefined) t.pScale = ev.pScale;
      if (ev.flushed) {
        const [r0] = ev.tile.rows;
        const [c0, c1] = ev.tile.cols;
        const cols = c1 - c0;
        for (const i of ev.flushed) flushedAt[(r0 + Math.floor(i / cols)) * p.nk + c0 + (i % cols)] = ev.step;
        t.flushed += ev.flushed.length;
        flushed += ev.flushed.length;
      }
    } else if (ev.kind === 'pv') {
      const t = tileOf(tiles, ev);
      if (ev.vScale !== undefined) t.vScale = ev.vScale;
    }
  }
  for (const t of tiles.values()) {
    const q = qLoad.get(t.qBlock);
    const k = kLoad.get(t.kvBlock);
    const v = vLoad.get(t.kvBlock);
    if (q) {
      t.qScale ??= q.scale;
      t.qSaturated = q.saturated;
    }
    if (k) {
      t.kScale ??= k.scale;
      t.kSaturated = k.saturated;
    }
    if (v) {
      t.vScale ??= v.scale;
      t.vSaturated = v.saturated;
    }
  }
  const list = [...tiles.values()].sort((x, y) => x.qBlock - y.qBlock || x.kvBlock - y.kvBlock);
  return { b, h, nq: p.nq, nk: p.nk, flushedAt, flushed, tiles: list };
}

/** Float64 dot product of query row i of head h and key row j (the stored inputs, no rounding). */
function dot64(p: AttentionProblem, x: AttentionInputs, b: number, h: number, i: number, j: number): number {
  const qo = qOffset(p, b, h, i);
  const ko = kOffset(p, b, kvHead(p, h), j);
  let s = 0;
  for (let c = 0; c < p.d; c++) s += x.q[qo + c] * x.k[ko + c];
  return s;
}

/** S and P of head (b, h) against float64, cell by cell, from the events that wrote them. */
export function scoreErrors(
  p: AttentionProblem,
  x: AttentionInputs,
  events: readonly TraceEvent[],
  b: number,
  h: number,
  marks: PrecisionMarks,
): Pick<PrecisionHead, 'sErr' | 'pErr' | 's64' | 'p64'> {
  const n = p.nq * p.nk;
  const sm = scoreModel(p);
  // S64 of every cell, computed once: the exp steps need it as well.
  // A row whose scores the algorithm shifted before its kernel (sage's K smoothing: the
  // normalize event's scoreShift) is compared with float64 scores shifted alike: the softmax
  // ignores the shift, and leaving it in would show it as error in every cell of the row.
  const shift = new Float64Array(p.nq);
  for (const ev of events) {
    if (ev.kind !== 'normalize' || ev.b !== b || ev.h !== h || !ev.scoreShift) continue;
    ev.scoreShift.forEach((v, r) => (shift[ev.tile.rows[0] + r] = v));
  }
  const s64 = new Float64Array(n);
  for (let i = 0; i < p.nq; i++)
    for (let j = 0; j < p.nk; j++) s64[i * p.nk + j] = modifyScore(sm, h, i, j, dot64(p, x, b, h, i, j), b) - shift[i];
  const sErr = new Float32Array(n).fill(NaN);
  const pErr = new Float32Array(n).fill(NaN);
  const p64 = new Float64Array(n).fill(NaN);
  const tiles = new Map(marks.tiles.map((t) => [tileKey(t.qBlock, t.kvBlock), t]));
  for (const t of tiles.values()) {
    t.sMaxErr = NaN;
    t.pMaxErr = NaN;
  }
  const bump = (t: TilePrecision | undefined, f: 'sMaxErr' | 'pMaxErr', e: number) => {
    if (t && Number.isFinite(e) && !(t[f] >= e)) t[f] = e;
  };
  for (const ev of events) {
    if (ev.b !== b || ev.h !== h || ev.pass === 'backward' || (ev.kind !== 'qk' && ev.kind !== 'exp') || !nonEmpty(ev)) continue;
    const [r0, r1] = ev.tile.rows;
    const [c0, c1] = ev.tile.cols;
    const cols = c1 - c0;
    const tile = tiles.get(tileKey(ev.tile.qBlock, ev.tile.kvBlock));
    // FA4 keeps scores in log2 units and exponentiates in base 2.
    const unit = ev.base2 ? Math.LOG2E : 1;
    for (let r = r0; r < r1; r++) {
      for (let c = c0; c < c1; c++) {
        const at = r * p.nk + c;
        const exact = s64[at];
        const k = (r - r0) * cols + (c - c0);
        if (ev.kind === 'qk') {
          // A masked cell has no exact score to miss; the mask event sets it to −∞ later.
          if (exact === -Infinity) continue;
          const e = Math.abs(ev.s[k] - exact * unit);
          sErr[at] = e;
          bump(tile, 'sMaxErr', e);
        } else {
          const m = ev.m[r - r0];
          const ref = exact === -Infinity || m === -Infinity ? 0 : ev.base2 ? 2 ** (exact * unit - m) : Math.exp(exact - m);
          p64[at] = ref;
          if (exact === -Infinity) continue;
          const e = Math.abs(ev.p[k] - ref);
          pErr[at] = e;
          bump(tile, 'pMaxErr', e);
        }
      }
    }
  }
  return { sErr, pErr, s64, p64 };
}

/** |O − O64| of head (b, h) and that head's error totals. */
export function headOutputError(
  p: AttentionProblem,
  output: ArrayLike<number>,
  o64: Float64Array,
  b: number,
  h: number,
): { oErr: Float32Array; oError: OutputError } {
  const n = p.nq * p.dv;
  const base = (b * p.hq + h) * n;
  const oErr = new Float32Array(n);
  for (let i = 0; i < n; i++) oErr[i] = Math.abs(output[base + i] - o64[base + i]);
  const mine = Array.prototype.slice.call(output, base, base + n) as number[];
  return { oErr, oError: outputError(mine, o64.subarray(base, base + n)) };
}

/** The run-wide part: totals against float64 and the cast steps' flush counts. */
export function precisionRun(
  p: AttentionProblem,
  output: ArrayLike<number>,
  o64: Float64Array,
  events: readonly TraceEvent[],
  stats?: Record<string, number>,
): PrecisionRun {
  const steps: number[] = [];
  const counts: number[] = [];
  let quantized = false;
  let flushedTotal = 0;
  for (const ev of events) {
    if (ev.pass === 'backward') continue;
    if (ev.kind === 'exp' && ev.flushed) {
      steps.push(ev.step);
      counts.push(ev.flushed.length);
      flushedTotal += ev.flushed.length;
    }
    if (
      !quantized &&
      ((ev.kind === 'load' && ev.quant) || (ev.kind === 'qk' && ev.qScale !== undefined) || (ev.kind === 'pv' && ev.vScale !== undefined))
    )
      quantized = true;
  }
  return {
    total: outputError(output, o64),
    castSteps: Int32Array.from(steps),
    castFlushed: Int32Array.from(counts),
    flushedTotal,
    quantized,
    ...(stats ? { stats: { ...stats } } : {}),
    macs: referenceMacs(p),
  };
}

/** Float64 output of the whole problem (engine/core/reference.ts), refused above PRECISION_MAX_MACS. */
export function referenceOutput(p: AttentionProblem, x: AttentionInputs): Float64Array {
  const why = precisionRefusal(p);
  if (why) throw new RangeError(why);
  return referenceAttention(p, x).o;
}

/** The whole response for head (b, h); `o64` is the cached reference output, when there is one. */
export function precisionFor(
  p: AttentionProblem,
  x: AttentionInputs,
  output: ArrayLike<number>,
  events: readonly TraceEvent[],
  b: number,
  h: number,
  o64: Float64Array,
  stats?: Record<string, number>,
): { run: PrecisionRun; head: PrecisionHead } {
  const marks = precisionMarks(p, events, b, h);
  const scores = scoreErrors(p, x, events, b, h, marks);
  const out = headOutputError(p, output, o64, b, h);
  return { run: precisionRun(p, output, o64, events, stats), head: { ...marks, dv: p.dv, ...out, ...scores } };
}
