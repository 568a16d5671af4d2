// One backward phase = one tile-grad.ts function + one trace event. The tiled backward
// algorithms (fa1-, fa2-, fa3-backward.ts) are written as sequences of these steps, so the
// payloads and counter deltas of a phase are the same whichever algorithm runs it.
// Counter conventions (TRACE.md, "The backward pass"): each of the five matmuls counts
// 2·M·N·K; element operations count one each.

import type { CounterDelta } from '../core/counters.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { ScoreModel } from '../core/scores.ts';
import type { BackwardRole, TraceEvent } from '../trace/events.ts';
import { tileValues, type Tracer } from '../trace/tracer.ts';
import * as g from './tile-grad.ts';
import type { BackwardInputs } from './types.ts';

type Gen = Generator<TraceEvent, void, void>;

export interface BwdContext {
  p: AttentionProblem;
  x: BackwardInputs;
  sm: ScoreModel;
  tr: Tracer;
  trace: boolean;
  /** Line id prefix, e.g. 'fa2bwd'. */
  prefix: string;
  rounder: ((x: number) => number) | undefined;
  tile: g.GradTile;
}

/** Where a step happens: loop indices, tile and (FA3) the warp role and ring stage. */
export interface Where {
  b: number;
  h: number;
  outer: number;
  inner: number;
  qBlock: number;
  kvBlock: number;
  at: g.TilePos;
  role?: BackwardRole;
  stage?: number;
}

/** Column block j of (b, h) in the K/V-outer loop: its keys [c0, c1) and where its K/V load happens. */
export function columnBlock(p: AttentionProblem, b: number, h: number, j: number, blockN: number) {
  const c0 = j * blockN;
  const c1 = Math.min(p.nk, c0 + blockN);
  const kv: Where = { b, h, outer: j, inner: -1, qBlock: -1, kvBlock: j, at: g.tilePos(p, b, h, 0, 0, c0, c1) };
  return { c0, c1, cols: c1 - c0, kv };
}

/** Row block i of (b, h) in the preprocess or postprocess kernel, which touch no K/V block; `at` holds its rows. */
export function rowBlock(p: AttentionProblem, b: number, h: number, i: number, blockM: number, role?: BackwardRole): Where {
  const r0 = i * blockM;
  const w: Where = { b, h, outer: -1, inner: i, qBlock: i, kvBlock: -1, at: g.tilePos(p, b, h, r0, Math.min(p.nq, r0 + blockM), 0, 0) };
  if (role !== undefined) w.role = role;
  return w;
}

/** The EmitBase of an event at `w`; `rowsOnly` for steps that concern no K/V block. */
export function base(ctx: BwdContext, w: Where, line: string, delta: CounterDelta, rowsOnly = false) {
  const { r0, rows, c0, cols } = w.at;
  return {
    b: w.b,
    h: w.h,
    outer: w.outer,
    inner: w.inner,
    tile: rowsOnly
      ? { qBlock: w.qBlock, kvBlock: -1, rows: [r0, r0 + rows] as [number, number], cols: [0, 0] as [number, number] }
      : { qBlock: w.qBlock, kvBlock: w.kvBlock, rows: [r0, r0 + rows] as [number, number], cols: [c0, c0 + cols] as [number, number] },
    line: `${ctx.prefix}.${line}`,
    delta,
  };
}

/** Fields every backward payload carries. */
export function tag(w: Where): { pass: 'backward'; role?: BackwardRole; stage?: number } {
  const t: { pass: 'backward'; role?: BackwardRole; stage?: number } = { pass: 'backward' };
  if (w.role !== undefined) t.role = w.role;
  if (w.stage !== undefined) t.stage = w.stage;
  return t;
}

const tileOf = (ctx: BwdContext, a: ArrayLike<number>, w: Where) => tileValues(a, w.at.rows, w.at.cols, ctx.tile.stride);

export function* qk(ctx: BwdContext, w: Where): Gen {
  const { rows, cols } = w.at;
  g.scores(ctx.p, ctx.sm, ctx.x, ctx.tile, w.at);
  const ev = ctx.tr.emit('qk', base(ctx, w, 'qk', { matmulFlops: 2 * rows * cols * ctx.p.d, nonMatmulFlops: rows * cols }), () => ({
    s: tileOf(ctx, ctx.tile.s, w),
    ...tag(w),
  }));
  if (ev) yield ev;
}

/** The mask phase, only when the tile has masked entries (no event otherwise). */
export function* mask(ctx: BwdContext, w: Where): Gen {
  if (!ctx.tile.anyMasked) return;
  const bits = ctx.trace ? new Array<number>(w.at.rows * w.at.cols) : undefined;
  g.mask(ctx.p, ctx.sm, ctx.tile, w.at, bits);
  const ev = ctx.tr.emit('mask', base(ctx, w, 'mask', {}), () => ({ masked: bits ?? [], s: tileOf(ctx, ctx.tile.s, w), ...tag(w) }));
  if (ev) yield ev;
}

/** P = exp(S − LSE) from ctx.tile.lse; with `stats`, FA1's diag(l)⁻¹ exp(S − m). */
export function* recompute(ctx: BwdContext, w: Where, stats?: { m: ArrayLike<number>; l: ArrayLike<number> }): Gen {
  const { rows, cols } = w.at;
  if (stats) g.recomputeFromStats(ctx.tile, w.at, stats.m, stats.l, ctx.rounder);
  else g.recompute(ctx.tile, w.at, ctx.rounder);
  const ops = stats ? 3 : 2; // subtract, exponentiate (FA1: and divide by l)
  const ev = ctx.tr.emit('recompute', base(ctx, w, 'recompute', { nonMatmulFlops: ops * rows * cols, expCount: rows * cols }), () => ({
    p: tileOf(ctx, ctx.tile.p16, w),
    lse: Array.from(ctx.tile.lse.subarray(0, rows)),
    ...tag(w),
  }));
  if (ev) yield ev;
}

export function* dv(ctx: BwdContext, w: Where, vAcc: Float32Array): Gen {
  const { rows, cols, hs, r0 } = w.at;
  const dvDim = ctx.p.dv;
  g.dvUpdate(ctx.p, ctx.x, ctx.tile, w.at, vAcc);
  const ev = ctx.tr.emit('dv', base(ctx, w, 'dv', { matmulFlops: 2 * rows * cols * dvDim }), () => ({
    dO: tileValues(ctx.x.dO.subarray(hs.oBase + r0 * dvDim), rows, dvDim, dvDim),
    dV: tileValues(vAcc, cols, dvDim, dvDim),
    ...tag(w),
  }));
  if (ev) yield ev;
}

export function* dp(ctx: BwdContext, w: Where): Gen {
  const { rows, cols } = w.at;
  g.dpCompute(ctx.p, ctx.x, ctx.tile, w.at);
  const ev = ctx.tr.emit('dp', base(ctx, w, 'dp', { matmulFlops: 2 * rows * cols * ctx.p.dv }), () => ({
    dP: tileOf(ctx, ctx.tile.dp, w),
    ...tag(w),
  }));
  if (ev) yield ev;
}

/** D_i = rowsum(dO_i ∘ O_i) of the rows of w.at into ctx.tile.D; O is the forward's output. */
export function* dsum(ctx: BwdContext, w: Where, o: Float32Array, line = 'dsum'): Gen {
  const { rows, hs, r0 } = w.at;
  const dvDim = ctx.p.dv;
  g.dsum(ctx.p, ctx.x, o, ctx.tile, hs, r0, rows);
  const ev = ctx.tr.emit('dsum', base(ctx, w, line, { nonMatmulFlops: 2 * rows * dvDim }, w.kvBlock < 0), () => ({
    dO: tileValues(ctx.x.dO.subarray(hs.oBase + r0 * dvDim), rows, dvDim, dvDim),
    o: tileValues(o.subarray(hs.oBase + r0 * dvDim), rows, dvDim, dvDim),
    D: Array.from(ctx.tile.D.subarray(0, rows)),
    ...tag(w),
  }));
  if (ev) yield ev;
}

/** `extraFlops`: work done for this phase beyond dS itself (standard attention forms D = rowsum(dP ∘ P) here). */
export function* ds(ctx: BwdContext, w: Where, pFor: 'p32' | 'p16' = 'p32', extraFlops = 0): Gen {
  const { rows, cols } = w.at;
  g.dsCompute(ctx.sm, ctx.tile, w.at, ctx.rounder, pFor);
  const cap = ctx.sm.softcap !== undefined;
  const ev = ctx.tr.emit('ds', base(ctx, w, 'ds', { nonMatmulFlops: (cap ? 4 : 2) * rows * cols + extraFlops }), () => {
    const payload = { dS: tileOf(ctx, ctx.tile.ds, w), D: Array.from(ctx.tile.D.subarray(0, rows)), ...tag(w) };
    return cap ? { ...payload, softcapGrad: tileOf(ctx, ctx.tile.capGrad, w) } : payload;
  });
  if (ev) yield ev;
}

export interface DqAddInfo {
  contributors: number[];
  atomic: boolean;
  collidesWith: number[];
  turn?: number;
  /** The HBM traffic of this add (FA1: the write of dQ_i; FA2/FA3: the atomic read-modify-write of dQaccum). */
  hbm: CounterDelta;
}

/** dQ_i += dS_ij K_j · scale into the fp32 accumulator `dq` in HBM. */
export function* dq(ctx: BwdContext, w: Where, dqHbm: Float32Array, scale: number, info: () => DqAddInfo): Gen {
  const { rows, cols, hs, r0 } = w.at;
  const d = ctx.p.d;
  g.dqPartial(ctx.p, ctx.x, ctx.tile, w.at, scale);
  g.dqAdd(ctx.p, ctx.tile, w.at, dqHbm);
  const meta = info();
  const ev = ctx.tr.emit('dq', base(ctx, w, 'dq', { matmulFlops: 2 * rows * cols * d, nonMatmulFlops: rows * d, ...meta.hbm }), () => {
    const payload = {
      dQ: tileValues(dqHbm.subarray(hs.qBase + r0 * d), rows, d, d),
      worker: w.kvBlock,
      contributors: meta.contributors,
      atomic: meta.atomic,
      collidesWith: meta.collidesWith,
      ...tag(w),
    };
    return meta.turn === undefined ? payload : { ...payload, turn: meta.turn };
  });
  if (ev) yield ev;
}

/** dQ_i from the fp32 accumulator `dqHbm`, converted to the input dtype (`eb` bytes an element). */
export function* dqConvert(ctx: BwdContext, w: Where, dqHbm: Float32Array, eb: number): Gen {
  const { rows, hs, r0 } = w.at;
  const d = ctx.p.d;
  const delta = { hbmRead: { dQaccum: rows * d * 4 }, hbmWritten: { dQ: rows * d * eb }, nonMatmulFlops: rows * d };
  const ev = ctx.tr.emit('dqconvert', base(ctx, w, 'convert', delta, true), () => {
    const vals = tileValues(dqHbm.subarray(hs.qBase + r0 * d), rows, d, d);
    return { dQ: ctx.rounder ? vals.map(ctx.rounder) : vals, ...tag(w) };
  });
  if (ev) yield ev;
}

export function* dk(ctx: BwdContext, w: Where, kAcc: Float32Array, scale: number): Gen {
  const { rows, cols } = w.at;
  const d = ctx.p.d;
  g.dkUpdate(ctx.p, ctx.x, ctx.tile, w.at, kAcc, scale);
  const ev = ctx.tr.emit('dk', base(ctx, w, 'dk', { matmulFlops: 2 * rows * cols * d }), () => ({
    dK: tileValues(kAcc, cols, d, d),
    ...tag(w),
  }));
  if (ev) yield ev;
}

/**
 * Stores an on-chip gradient block (dK_j or dV_j, `n` values, × `mul`) into HBM at `at`.
 * With Hq > Hk the K/V head's gradients are fp32 sums over its query heads: the group's
 * first head writes, the others read-modify-write (`atomic`: by atomic adds). Returns the
 * HBM traffic of the write.
 */
export function storeGrad(
  p: AttentionProblem,
  h: number,
  tensor: 'dK' | 'dV',
  src: Float32Array,
  dst: Float32Array,
  at: number,
  n: number,
  mul: number,
  eb: number,
  atomic: boolean,
): CounterDelta {
  const group = p.hq / p.hk;
  const first = h % group === 0;
  for (let e = 0; e < n; e++) dst[at + e] = (first ? 0 : dst[at + e]) + src[e] * mul;
  if (group === 1) return { hbmWritten: { [tensor]: n * eb } };
  if (first) return { hbmWritten: { [tensor]: n * 4 } };
  const rmw: CounterDelta = { hbmRead: { [tensor]: n * 4 }, hbmWritten: { [tensor]: n * 4 }, nonMatmulFlops: n };
  return atomic ? { ...rmw, atomicAdds: n } : rmw;
}

/** dK_j (× kScale) and dV_j of a column block into HBM; the traffic of both, merged. */
export function storeKV(
  p: AttentionProblem,
  hs: g.TilePos['hs'],
  c0: number,
  cols: number,
  kAcc: Float32Array,
  vAcc: Float32Array,
  dk: Float32Array,
  dvHbm: Float32Array,
  kScale: number,
  eb: number,
  atomic: boolean,
): CounterDelta {
  const a = storeGrad(p, hs.h, 'dK', kAcc, dk, hs.kBase + c0 * p.d, cols * p.d, kScale, eb, atomic);
  const b = storeGrad(p, hs.h, 'dV', vAcc, dvHbm, hs.vBase + c0 * p.dv, cols * p.dv, 1, eb, atomic);
  const out: CounterDelta = { hbmWritten: { ...a.hbmWritten, ...b.hbmWritten } };
  if (a.hbmRead) out.hbmRead = { ...a.hbmRead, ...b.hbmRead };
  if (a.nonMatmulFlops) out.nonMatmulFlops = a.nonMatmulFlops + (b.nonMatmulFlops ?? 0);
  if (a.atomicAdds) out.atomicAdds = a.atomicAdds + (b.atomicAdds ?? 0);
  return out;
}
