// The numeric phases that every tiled forward kernel is built from — S = QKᵀ, mask,
// running max, exponentials, running sum, rescale, O += PV, final normalization — as
// small generators that do the math for one set of query rows and emit one trace event
// each. The hardware-modelling algorithms (fa3, fa4, fmha-v2, cute-fa2, flash-decoding)
// differ in *which rows* form a unit of work (a CTA tile, a warpgroup's half, one warp's
// slice, a split of K/V) and in *the order* they call these phases; the per-kernel
// numeric details (log2 domain, lazy rescaling, software exp2, fp16 accumulators) are the
// knobs of StepContext. Counter deltas follow fa2.ts exactly, so totals stay comparable.

import { BLOCK_EMPTY, BLOCK_FULL, BLOCK_PARTIAL } from '../core/block-mask.ts';
import type { HbmTensor, SparsityTally } from '../core/counters.ts';
import { roundTo } from '../core/dtype.ts';
import { kOffset, qOffset, vOffset, type AttentionInputs } from '../core/inputs.ts';
import { dtypeBytes, requireNoFp8, type AttentionProblem } from '../core/problem.ts';
import type { Fp8Prepared } from './fp8-inputs.ts';
import { modifyScore, scoreModel, unmasked, visible, type ScoreModel } from '../core/scores.ts';
import type { TileRef, TraceEvent } from '../trace/events.ts';
import { Tracer, tileValues } from '../trace/tracer.ts';
import type { RunOptions } from './types.ts';
import { hasBlockMask, skippedTile, tileClasses, type TileClassOf } from './tile-classes.ts';

export const LOG2E = Math.LOG2E;

export interface StepContextOptions {
  /** Prefix of pseudo-code line ids, e.g. 'fa3' gives 'fa3.qk'. */
  prefix: string;
  /** Keep logits and the running max in log2 units and use exp2 (FA4). */
  base2?: boolean;
  /** Lazy rescaling threshold in log2 units (FA4); 0 rescales whenever the max grows. */
  lazyThreshold?: number;
  /** Rows that share one rescale decision (FA4's correction warp votes per 32 rows); 0 = per row. */
  rescaleGroup?: number;
  /** Exponential of (s - m) (or 2^(s - m) with base2); `emulable` says the element may use software exp2. */
  exp?: (arg: number, col: number, emulable: boolean) => number;
  /** Storage rounding of the output accumulator after every add (fp32 by default; fp16 for fmha_v2's half accumulation). */
  accRound?: (v: number) => number;
  /** Rounding of the QKᵀ partial sum after every add; undefined computes the dot exactly, then stores fp32. */
  dotRound?: (v: number) => number;
  /** An FP8 path: tile scales for the events and the cast of P (engine/algorithms/fp8-inputs.ts). Without it an fp8 problem is refused. */
  fp8?: Fp8Prepared;
  /** Rounding of the stored output (default: the problem's dtype; FP8 kernels write bf16). */
  outRound?: (v: number) => number;
  /** Quantized Q·Kᵀ (SageAttention's INT8 path): logits come from integer codes, not from x.q and x.k. */
  scores?: QuantizedScores;
  /** The cast of P before P·V when it is not FA3's FP8 one (SageAttention: fp16 in v1, e4m3 with a static scale in v2). */
  pCast?: PCast;
  /**
   * Rounding of one K/V block's P·V partial sum (SageAttention v1: the fp16 accumulator of
   * mma.f16, added to the fp32 O once per block); `chunk` keys are summed before each rounding
   * (the MMA's K depth). Undefined: every product goes straight into the O accumulator.
   */
  pvBlock?: { round: (v: number) => number; chunk: number };
  /** Per-channel V scales of a (batch, kv head) for the pv events (SageAttention v2's per-channel FP8 V). */
  vScales?: (b: number, hk: number) => number[];
}

/** Scores from quantized codes: the logit in the context's units (scales folded in) and the scales for the events. */
export interface QuantizedScores {
  logit: (b: number, h: number, hk: number, i: number, j: number) => number;
  qScale: (b: number, h: number, row: number) => number;
  kScale: (b: number, hk: number, key: number) => number;
}

/** A cast of P before P·V: `cast(p)` is P as P·V reads it (scaled, cast and scaled back), pScale the static factor. */
export interface PCast {
  pScale: number;
  cast: (p: number) => number;
}

/** Precision events of a run: P values the FP8 cast flushed to zero among the P values > 0 it cast. */
export interface PrecisionTally {
  flushedP: number;
  castP: number;
}

export interface StepContext {
  p: AttentionProblem;
  x: AttentionInputs;
  sm: ScoreModel;
  /** The same modifiers without masks, to show a masked logit's value before the mask phase. */
  smOpen: ScoreModel;
  tr: Tracer;
  trace: boolean;
  eb: number;
  prefix: string;
  base2: boolean;
  lazyThreshold: number;
  rescaleGroup: number;
  exp: (arg: number, col: number, emulable: boolean) => number;
  accRound: (v: number) => number;
  dotRound: ((v: number) => number) | undefined;
  fp8: Fp8Prepared | undefined;
  outRound: (v: number) => number;
  tally: PrecisionTally;
  scores: QuantizedScores | undefined;
  pCast: PCast | undefined;
  pvBlock: { round: (v: number) => number; chunk: number } | undefined;
  vScales: ((b: number, hk: number) => number[]) | undefined;
  /** Class of tile (Q tile, K/V tile) at blockM × blockN; every tile runs the mask until walkBlockMask. */
  tileClass: TileClassOf;
  blockM: number;
  blockN: number;
  /** Whether a mask can hide keys: only then are the block mask's tallies reported. */
  sparse: boolean;
}

export function makeContext(
  p: AttentionProblem,
  x: AttentionInputs,
  opts: Pick<RunOptions, 'trace' | 'annotate'>,
  o: StepContextOptions,
): StepContext {
  if (!o.fp8) requireNoFp8(p, o.prefix);
  const trace = opts.trace;
  const sm = scoreModel(p);
  const base2 = o.base2 ?? false;
  return {
    p,
    x,
    sm,
    smOpen: unmasked(sm),
    tr: new Tracer(trace, opts.annotate),
    trace,
    eb: dtypeBytes(p.dtype),
    prefix: o.prefix,
    base2,
    lazyThreshold: o.lazyThreshold ?? 0,
    rescaleGroup: o.rescaleGroup ?? 0,
    exp: o.exp ?? (base2 ? (a) => 2 ** a : (a) => Math.exp(a)),
    accRound: o.accRound ?? Math.fround,
    dotRound: o.dotRound,
    fp8: o.fp8,
    outRound: o.outRound ?? ((v) => roundTo(p.dtype, v)),
    tally: { flushedP: 0, castP: 0 },
    scores: o.scores,
    pCast: o.pCast ?? (o.fp8 ? { pScale: o.fp8.pScale, cast: o.fp8.castP } : undefined),
    pvBlock: o.pvBlock,
    vScales: o.vScales,
    tileClass: () => BLOCK_PARTIAL,
    blockM: 0,
    blockN: 0,
    sparse: false,
  };
}

/** Builds the block mask at the kernel's tile size once, before the loops, as upstream builds its cnt/idx tensors. */
export function walkBlockMask(ctx: StepContext, blockM: number, blockN: number): void {
  ctx.tileClass = tileClasses(ctx.p, ctx.sm, blockM, blockN);
  ctx.blockM = blockM;
  ctx.blockN = blockN;
  ctx.sparse = hasBlockMask(ctx.p);
}

/**
 * The K/V tiles among [j0, j1) that a CTA of Q tiles `qBlocks` visits, ascending: those not
 * empty for at least one of its Q tiles. Each empty tile it passes over is one skip step
 * (never loaded, no matmul), as FA2's.
 */
export function* visitedKv(ctx: StepContext, at: At, qBlocks: number[], j0: number, j1: number): Generator<TraceEvent, number[], void> {
  const list: number[] = [];
  for (let j = j0; j < j1; j++) {
    if (qBlocks.some((i) => ctx.tileClass(at.b, at.h, i, j) !== BLOCK_EMPTY)) list.push(j);
    else for (const i of qBlocks) yield* skip(ctx, at, i, j);
  }
  return list;
}

/** Tile (Q tile i, K/V tile j) passed over: one step that loads nothing and counts what it spared. */
export function* skip(ctx: StepContext, at: At, i: number, j: number): Gen {
  const { p, blockM, blockN } = ctx;
  const r0 = i * blockM;
  const r1 = Math.min(p.nq, r0 + blockM);
  const c0 = j * blockN;
  const c1 = Math.min(p.nk, c0 + blockN);
  const tile: TileRef = { qBlock: i, kvBlock: j, rows: [r0, r1], cols: [c0, c1] };
  const delta = { sparsity: skippedTile(p, r1 - r0, c1 - c0, ctx.eb) };
  const ev = ctx.tr.emit('skip', { ...place(ctx, { ...at, inner: j }, 'skip'), tile, delta }, () => ({}));
  if (ev) yield ev;
}

/** Where a step happens: batch, head, loop indices, Q block, and optional hardware placement. */
export interface At {
  b: number;
  h: number;
  outer: number;
  inner: number;
  qBlock: number;
  warp?: number;
  warpgroup?: number;
  split?: number;
}

/** On-chip state of one unit of query rows: running max m, sum l, unnormalized O. */
export class RowState {
  readonly m: Float64Array;
  readonly l: Float64Array;
  /** fp32 storage: every store rounds to fp32 as the kernels' fp32 accumulators do (fp16 accumulators round further before storing). */
  readonly acc: Float32Array;
  readonly factor: Float64Array;
  /** 1 where the last rowmax decided the row's accumulator must be multiplied by factor. */
  readonly rescaleRow: Uint8Array;
  /** Number of S tiles whose row max has been folded in. */
  seen = 0;
  /** Rows that the last rowmax marked for rescaling. */
  pendingRescale = 0;
  constructor(
    readonly hk: number,
    readonly r0: number,
    readonly rows: number,
    readonly dv: number,
  ) {
    this.m = new Float64Array(rows).fill(-Infinity);
    this.l = new Float64Array(rows);
    this.acc = new Float32Array(rows * dv);
    this.factor = new Float64Array(rows).fill(1);
    this.rescaleRow = new Uint8Array(rows);
  }
}

/** One S/P tile buffer (FA3's overlap keeps two: S_cur and S_next). */
export class ScoreTile {
  readonly s: Float64Array;
  readonly pt: Float64Array;
  readonly sum: Float64Array;
  /** 1 where qk found the entry masked: the mask phase reads it instead of asking the mask again. */
  readonly hidden: Uint8Array;
  c0 = 0;
  cols = 0;
  kvBlock = -1;
  anyMasked = false;
  /** The block needed no mask at all and is full width: FA4 may use software exp2 on it. */
  emulable = false;
  constructor(
    readonly maxRows: number,
    readonly stride: number,
  ) {
    this.s = new Float64Array(maxRows * stride);
    this.pt = new Float64Array(maxRows * stride);
    this.sum = new Float64Array(maxRows);
    this.hidden = new Uint8Array(maxRows * stride);
  }
}

function tileRef(at: At, st: RowState, t?: ScoreTile): TileRef {
  return {
    qBlock: at.qBlock,
    kvBlock: t ? t.kvBlock : -1,
    rows: [st.r0, st.r0 + st.rows],
    cols: t ? [t.c0, t.c0 + t.cols] : [0, 0],
  };
}

function place(ctx: StepContext, at: At, line: string) {
  return { b: at.b, h: at.h, outer: at.outer, inner: at.inner, line: `${ctx.prefix}.${line}` };
}

/** Optional per-event fields (warp, warpgroup, split, base2) merged into payloads. */
function extra(ctx: StepContext, at: At, units: boolean) {
  const e: { warp?: number; warpgroup?: number; split?: number; base2?: boolean } = {};
  if (at.warp !== undefined) e.warp = at.warp;
  if (at.warpgroup !== undefined) e.warpgroup = at.warpgroup;
  if (at.split !== undefined) e.split = at.split;
  if (units && ctx.base2) e.base2 = true;
  return e;
}

type Gen = Generator<TraceEvent, void, void>;

/** An HBM -> chip transfer of the given bytes per tensor. */
export function* load(
  ctx: StepContext,
  at: At,
  line: string,
  rows: [number, number],
  cols: [number, number],
  kvBlock: number,
  bytes: Partial<Record<HbmTensor, number>>,
  quant?: () => { scale: number; saturated: number },
): Gen {
  const tile: TileRef = { qBlock: at.qBlock, kvBlock, rows, cols };
  const ev = ctx.tr.emit('load', { ...place(ctx, at, line), tile, delta: { hbmRead: bytes } }, () => ({
    tensors: Object.keys(bytes) as HbmTensor[],
    ...(quant ? { quant: quant() } : {}),
    ...extra(ctx, at, false),
  }));
  if (ev) yield ev;
}

/** A chip -> HBM transfer of the given bytes per tensor. */
export function* write(ctx: StepContext, at: At, line: string, rows: [number, number], bytes: Partial<Record<HbmTensor, number>>): Gen {
  const tile: TileRef = { qBlock: at.qBlock, kvBlock: -1, rows, cols: [0, 0] };
  const ev = ctx.tr.emit('write', { ...place(ctx, at, line), tile, delta: { hbmWritten: bytes } }, () => ({
    tensors: Object.keys(bytes) as HbmTensor[],
    ...extra(ctx, at, false),
  }));
  if (ev) yield ev;
}

/**
 * S = Q Kᵀ for the rows of `st` against keys [c0, c0 + cols), with scale, softcap and
 * ALiBi applied. Entries the mask will hide keep their logit until the mask phase.
 */
export function* qk(ctx: StepContext, at: At, st: RowState, t: ScoreTile, kvBlock: number, c0: number, cols: number): Gen {
  const { p, x, sm } = ctx;
  t.c0 = c0;
  t.cols = cols;
  t.kvBlock = kvBlock;
  t.anyMasked = false;
  const stride = t.stride;
  const q = x.q;
  const k = x.k;
  const d = p.d;
  const rd = ctx.dotRound;
  const quant = ctx.scores;
  // A full tile of the block mask runs no mask at all; any other runs it once per entry.
  const full = ctx.tileClass(at.b, at.h, at.qBlock, kvBlock) === BLOCK_FULL;
  const open = ctx.smOpen;
  for (let r = 0; r < st.rows; r++) {
    const i = st.r0 + r;
    const qo = qOffset(p, at.b, at.h, i);
    for (let c = 0; c < cols; c++) {
      const j = c0 + c;
      const shown = full || visible(sm, i, j, at.b, at.h);
      t.hidden[r * stride + c] = shown ? 0 : 1;
      if (!shown) t.anyMasked = true;
      if (quant) {
        // Integer Q̂·K̂ᵀ dequantized with the scales folded in: already a logit in working units.
        t.s[r * stride + c] = quant.logit(at.b, at.h, st.hk, i, j);
        continue;
      }
      const ko = kOffset(p, at.b, st.hk, j);
      let dot = 0;
      if (rd) for (let e = 0; e < d; e++) dot = rd(dot + q[qo + e] * k[ko + e]);
      else for (let e = 0; e < d; e++) dot += q[qo + e] * k[ko + e];
      const logit = modifyScore(open, at.h, i, j, dot, at.b);
      t.s[r * stride + c] = Math.fround(ctx.base2 ? logit * LOG2E : logit);
    }
  }
  // A ragged tail block is masked by the kernel's sequence-length predicate too.
  t.emulable = !t.anyMasked && cols === stride;
  const rows = st.rows;
  const delta = { matmulFlops: 2 * rows * cols * p.d, nonMatmulFlops: rows * cols };
  const ev = ctx.tr.emit(
    'qk',
    {
      ...place(ctx, at, 'qk'),
      tile: tileRef(at, st, t),
      delta: ctx.sparse ? { ...delta, sparsity: tileTally(ctx, at, st, full, cols) } : delta,
    },
    () => ({ s: tileValues(t.s, rows, cols, stride), ...fp8Scales(ctx, at, st, t), ...extra(ctx, at, true) }),
  );
  if (ev) yield ev;
}

/**
 * One unit's share of the block mask's tallies: its mask checks, and the tile's class counted
 * once, by the unit that holds the tile's first row (FA3's warpgroups split a tile's rows).
 */
function tileTally(ctx: StepContext, at: At, st: RowState, full: boolean, cols: number): Partial<SparsityTally> {
  const leads = st.r0 === at.qBlock * ctx.blockM ? 1 : 0;
  return full ? { tilesFull: leads } : { tilesPartial: leads, maskEvals: st.rows * cols };
}

/** The FP8 tile scales an S tile was computed with (its Q tile's and its K block's). */
function fp8Scales(ctx: StepContext, at: At, st: RowState, t: ScoreTile): { qScale?: number; kScale?: number } {
  const f = ctx.fp8 ?? ctx.scores;
  return f ? { qScale: f.qScale(at.b, at.h, st.r0), kScale: f.kScale(at.b, st.hk, t.c0) } : {};
}

/** Masked entries of S (as qk found them) set to -inf; no event when the block has none. */
export function* mask(ctx: StepContext, at: At, st: RowState, t: ScoreTile): Gen {
  if (!t.anyMasked) return;
  const { rows } = st;
  const { cols, stride } = t;
  const bits = new Array<number>(ctx.trace ? rows * cols : 0);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      const hidden = t.hidden[r * stride + c] === 1;
      if (hidden) t.s[r * stride + c] = -Infinity;
      if (ctx.trace) bits[r * cols + c] = hidden ? 1 : 0;
    }
  const ev = ctx.tr.emit('mask', { ...place(ctx, at, 'mask'), tile: tileRef(at, st, t), delta: {} }, () => ({
    masked: bits,
    s: tileValues(t.s, rows, cols, stride),
    ...extra(ctx, at, true),
  }));
  if (ev) yield ev;
}

/**
 * m_new = max(m_old, rowmax(S)) and the rescale factor exp(m_old - m_new). With a lazy
 * threshold, a row whose max grew by at most the threshold keeps its stale max (factor 1):
 * P may then exceed 1 (up to 2^threshold) but numerator and denominator stay consistent,
 * so the final O / l is still exact.
 */
export function* rowmax(ctx: StepContext, at: At, st: RowState, t: ScoreTile): Gen {
  const { rows } = st;
  const { cols, stride } = t;
  const first = st.seen === 0;
  const mBefore = ctx.trace ? Array.from(st.m) : [];
  const tileMax = ctx.trace ? new Array<number>(rows) : [];
  const expb = ctx.base2 ? (a: number) => 2 ** a : Math.exp;
  for (let r = 0; r < rows; r++) {
    let mx = -Infinity;
    for (let c = 0; c < cols; c++) if (t.s[r * stride + c] > mx) mx = t.s[r * stride + c];
    if (ctx.trace) tileMax[r] = mx;
    const mOld = st.m[r];
    let mNew = Math.max(mOld, mx);
    let f = 1;
    // Rows that have seen no visible key keep m = -inf; their factor is 1 (nothing to rescale).
    if (!first && mNew !== -Infinity) {
      const diff = mOld - mNew; // <= 0
      if (ctx.lazyThreshold > 0 && diff >= -ctx.lazyThreshold) mNew = mOld;
      else f = expb(diff);
    }
    st.factor[r] = f;
    st.m[r] = mNew;
  }
  // Which rows the rescale phase will touch: all rows after the first tile (FA2-style
  // kernels rescale unconditionally), or — with a rescale group — every row of a group in
  // which some row's factor is not 1 (FA4's correction warp votes, then scales its 32 rows).
  st.pendingRescale = 0;
  st.rescaleRow.fill(0);
  if (!first) {
    if (ctx.rescaleGroup > 0) {
      for (let g0 = 0; g0 < rows; g0 += ctx.rescaleGroup) {
        const g1 = Math.min(rows, g0 + ctx.rescaleGroup);
        let any = false;
        for (let r = g0; r < g1; r++) if (st.factor[r] !== 1) any = true;
        if (any) for (let r = g0; r < g1; r++) st.rescaleRow[r] = 1;
      }
    } else st.rescaleRow.fill(1);
    for (let r = 0; r < rows; r++) st.pendingRescale += st.rescaleRow[r];
  }
  st.seen++;
  const ev = ctx.tr.emit(
    'rowmax',
    {
      ...place(ctx, at, 'rowmax'),
      tile: tileRef(at, st, t),
      delta: { nonMatmulFlops: rows * cols + rows + (first ? 0 : 2 * rows), expCount: first ? 0 : rows },
    },
    () => ({ tileMax, mBefore, mAfter: Array.from(st.m), ...extra(ctx, at, true) }),
  );
  if (ev) yield ev;
}

/** P = exp(S - m) (2^(S - m) in log2 units); P stored rounded to the input dtype, the row sums keep full precision. */
export function* exp(ctx: StepContext, at: At, st: RowState, t: ScoreTile): Gen {
  const { rows } = st;
  const { cols, stride } = t;
  const cast = ctx.pCast?.cast;
  const flushed: number[] = [];
  for (let r = 0; r < rows; r++) {
    // A row with no visible key so far subtracts 0 (the kernels' "safe" max) and gets P = 0.
    const mr = st.m[r] === -Infinity ? 0 : st.m[r];
    let sum = 0;
    for (let c = 0; c < cols; c++) {
      const sv = t.s[r * stride + c];
      const v = sv === -Infinity ? 0 : ctx.exp(ctx.base2 ? Math.fround(sv - mr) : sv - mr, c, t.emulable);
      sum += v;
      if (cast) {
        // The row sum keeps the fp32 P; P·V reads the e4m3 cast.
        const pc = cast(Math.fround(v));
        if (v > 0) {
          ctx.tally.castP++;
          if (pc === 0) {
            ctx.tally.flushedP++;
            flushed.push(r * cols + c);
          }
        }
        t.pt[r * stride + c] = pc;
      } else t.pt[r * stride + c] = roundTo(ctx.p.dtype, v);
    }
    t.sum[r] = sum;
  }
  const pc = ctx.pCast;
  const ev = ctx.tr.emit(
    'exp',
    { ...place(ctx, at, 'exp'), tile: tileRef(at, st, t), delta: { nonMatmulFlops: 2 * rows * cols, expCount: rows * cols } },
    () => ({
      p: tileValues(t.pt, rows, cols, stride),
      m: Array.from(st.m),
      ...(pc ? { pScale: pc.pScale, flushed } : {}),
      ...extra(ctx, at, true),
    }),
  );
  if (ev) yield ev;
}

/** l = factor · l + rowsum(P). */
export function* rowsum(ctx: StepContext, at: At, st: RowState, t: ScoreTile): Gen {
  const { rows } = st;
  const lBefore = ctx.trace ? Array.from(st.l) : [];
  for (let r = 0; r < rows; r++) st.l[r] = Math.fround(st.factor[r] * st.l[r] + t.sum[r]);
  const ev = ctx.tr.emit(
    'rowsum',
    { ...place(ctx, at, 'rowsum'), tile: tileRef(at, st, t), delta: { nonMatmulFlops: rows * t.cols + 2 * rows } },
    () => ({ tileSum: Array.from(t.sum.subarray(0, rows)), lBefore, lAfter: Array.from(st.l), ...extra(ctx, at, true) }),
  );
  if (ev) yield ev;
}

/** O *= factor on the rows the last rowmax marked; no event when none is marked (first tile, or lazy FA4 skipping). */
export function* rescale(ctx: StepContext, at: At, st: RowState, t: ScoreTile, mOld?: number[]): Gen {
  const n = st.pendingRescale;
  if (n === 0) return;
  const { rows, dv } = st;
  for (let r = 0; r < rows; r++) {
    if (!st.rescaleRow[r] || st.factor[r] === 1) continue;
    const f = st.factor[r];
    for (let e = 0; e < dv; e++) st.acc[r * dv + e] = ctx.accRound(st.acc[r * dv + e] * f);
  }
  st.pendingRescale = 0;
  const logb = ctx.base2 ? Math.log2 : Math.log;
  const ev = ctx.tr.emit(
    'rescale',
    { ...place(ctx, at, 'rescale'), tile: tileRef(at, st, t), delta: { nonMatmulFlops: n * dv, rescaleCount: n } },
    () => {
      const f = Array.from(st.factor);
      const mNew = Array.from(st.m);
      return {
        factor: f,
        mNew,
        mOld: mOld ?? mNew.map((mn, r) => (f[r] === 1 ? mn : mn + logb(f[r]))),
        ...extra(ctx, at, true),
      };
    },
  );
  if (ev) yield ev;
}

/** O += P V for the key block of `t`. */
export function* pv(ctx: StepContext, at: At, st: RowState, t: ScoreTile): Gen {
  const { p, x } = ctx;
  const { rows, dv } = st;
  const { cols, stride } = t;
  const round = ctx.accRound;
  const fp32 = round === Math.fround; // the Float32Array store already rounds: skip the call
  const acc = st.acc;
  const v = x.v;
  const pt = t.pt;
  if (ctx.pvBlock) blockPv(ctx, at, st, t);
  else {
    for (let r = 0; r < rows; r++) {
      const ao = r * dv;
      for (let c = 0; c < cols; c++) {
        const w = pt[r * stride + c];
        if (w === 0) continue;
        const vo = vOffset(p, at.b, st.hk, t.c0 + c);
        if (fp32) for (let e = 0; e < dv; e++) acc[ao + e] += w * v[vo + e];
        else for (let e = 0; e < dv; e++) acc[ao + e] = round(acc[ao + e] + w * v[vo + e]);
      }
    }
  }
  const ev = ctx.tr.emit('pv', { ...place(ctx, at, 'pv'), tile: tileRef(at, st, t), delta: { matmulFlops: 2 * rows * cols * dv } }, () => ({
    o: tileValues(st.acc, rows, dv, dv),
    ...(ctx.fp8 ? { vScale: ctx.fp8.vScale(at.b, st.hk, t.c0) } : {}),
    ...(ctx.vScales ? { vScales: ctx.vScales(at.b, st.hk) } : {}),
    ...extra(ctx, at, false),
  }));
  if (ev) yield ev;
}

/**
 * One block's P·V in a narrow accumulator (ctx.pvBlock): `chunk` products summed exactly, the
 * running partial rounded after each chunk, then the partial added once to the fp32 O.
 */
function blockPv(ctx: StepContext, at: At, st: RowState, t: ScoreTile): void {
  const { p, x } = ctx;
  const { rows, dv } = st;
  const { cols, stride } = t;
  const { round, chunk } = ctx.pvBlock!;
  const v = x.v;
  for (let r = 0; r < rows; r++) {
    for (let e = 0; e < dv; e++) {
      let part = 0;
      for (let c0 = 0; c0 < cols; c0 += chunk) {
        let sum = 0;
        for (let c = c0; c < Math.min(cols, c0 + chunk); c++) {
          const w = t.pt[r * stride + c];
          if (w !== 0) sum += w * v[vOffset(p, at.b, st.hk, t.c0 + c) + e];
        }
        part = round(part + sum);
      }
      st.acc[r * dv + e] += part;
    }
  }
}

/**
 * One K/V block of FA2's online softmax for one row unit, in the order FA2's kernel runs it:
 * S = Q·Kᵀ, mask, new max, P = exp(S − m), row sum, rescale of O and l, O += P·V. The
 * algorithms that follow this order (fmha_v2's warps, flash-decoding's splits, sage's units)
 * step through it as one call; the others interleave loads or reorder and call the steps.
 */
export function* softmaxBlock(ctx: StepContext, at: At, st: RowState, t: ScoreTile, kvBlock: number, c0: number, cols: number): Gen {
  yield* qk(ctx, at, st, t, kvBlock, c0, cols);
  yield* mask(ctx, at, st, t);
  yield* rowmax(ctx, at, st, t);
  yield* exp(ctx, at, st, t);
  yield* rowsum(ctx, at, st, t);
  yield* rescale(ctx, at, st, t);
  yield* pv(ctx, at, st, t);
}

/**
 * O = acc / l once at the end, LSE = m + log l (natural log whatever the working base).
 * A sink logit joins the denominator here with a max update, so it never overflows.
 * `useSink` is false for flash-decoding's partial results (the combine adds the sink once).
 */
export function* normalize(ctx: StepContext, at: At, st: RowState, lseOut: Float64Array, useSink = true, scoreShift?: number[]): Gen {
  const { rows, dv } = st;
  const sinkNat = useSink ? ctx.p.sinks?.[at.h] : undefined;
  const sink = sinkNat === undefined ? undefined : ctx.base2 ? sinkNat * LOG2E : sinkNat;
  const expb = ctx.base2 ? (a: number) => 2 ** a : Math.exp;
  const lFinal = new Array<number>(rows);
  const sinkRows = sink === undefined ? 0 : rows;
  for (let r = 0; r < rows; r++) {
    let mr = st.m[r];
    let lr = st.l[r];
    let scaleAcc = 1;
    if (sink !== undefined) {
      const mFin = Math.max(mr, sink);
      scaleAcc = mr === -Infinity ? 0 : expb(mr - mFin);
      lr = lr * scaleAcc + expb(sink - mFin);
      mr = mFin;
    }
    const inv = lr > 0 ? scaleAcc / lr : 0;
    for (let e = 0; e < dv; e++) st.acc[r * dv + e] = Math.fround(st.acc[r * dv + e] * inv);
    lFinal[r] = lr;
    lseOut[r] = lr > 0 ? (ctx.base2 ? (mr + Math.log2(lr)) * Math.LN2 : mr + Math.log(lr)) : -Infinity;
  }
  const ev = ctx.tr.emit(
    'normalize',
    // As fa2.ts: a multiply per element, reciprocal + log + add per row; a sink adds 2 exps and 7 ops per row.
    {
      ...place(ctx, at, 'normalize'),
      tile: tileRef(at, st),
      delta: { nonMatmulFlops: rows * dv + 3 * rows + 7 * sinkRows, expCount: 2 * sinkRows },
    },
    () => ({
      o: tileValues(st.acc, rows, dv, dv),
      l: lFinal,
      lse: Array.from(lseOut.subarray(0, rows)),
      ...(scoreShift ? { scoreShift } : {}),
      ...extra(ctx, at, false),
    }),
  );
  if (ev) yield ev;
}

/** Copies the normalized rows of `st` into the output, rounded to the problem's dtype. */
export function storeRows(ctx: StepContext, at: At, st: RowState, lse: Float64Array, o: Float32Array, lseOut: Float32Array): void {
  const { p } = ctx;
  for (let r = 0; r < st.rows; r++) {
    const i = st.r0 + r;
    const oo = ((at.b * p.hq + at.h) * p.nq + i) * p.dv;
    for (let e = 0; e < p.dv; e++) o[oo + e] = ctx.outRound(st.acc[r * st.dv + e]);
    lseOut[(at.b * p.hq + at.h) * p.nq + i] = lse[r];
  }
}
