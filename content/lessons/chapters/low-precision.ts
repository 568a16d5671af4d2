// The measurements chapter 12 quotes, run on the engine when the lesson asks for them (in
// the lesson worker): FA3's FP8 error against float64 on outlier inputs, what the Hadamard
// rotation does to the quantization and score errors, and how many non-sink P values the
// e4m3 cast flushes on a sink pattern. Fixed problems, so the text around them holds; the
// chapter's tests assert what the text says about them.

import {
  fa3,
  type LoadRequest,
  randomInputs,
  SINK_KEYS,
  outputError,
  randomSigns,
  rotateRows,
  quantizeFp8Rows,
  DEFAULT_PROBLEM,
  softmaxScale,
  type AttentionProblem,
  type DType,
  referenceAttention,
  runToEnd,
  type TraceEvent,
} from '../../../engine/api.ts';
import type { EngineRun } from './types.ts';
import { lessonRequest, type EventOf } from './queries.ts';

/** The error experiment at a size the worker runs in about a second: the FA3 paper's d and tile, N = 256. */
export const ERROR_PROBLEM: AttentionProblem = { ...DEFAULT_PROBLEM, nq: 256, nk: 256, d: 128, dv: 128 };
export const ERROR_SEED = 3;
const ERROR_TILE = { blockM: 128, blockN: 128 };

export interface ErrorRow {
  id: 'fp16' | 'per-tensor' | 'block' | 'incoherent' | 'fa3';
  label: string;
  dtype: DType;
  features: Record<string, boolean>;
  rmse: number;
  maxAbs: number;
}

const ERROR_ROWS: Omit<ErrorRow, 'rmse' | 'maxAbs'>[] = [
  { id: 'fp16', label: 'FP16 FA3', dtype: 'fp16', features: {} },
  {
    id: 'per-tensor',
    label: 'FP8, per-tensor scales, no rotation (the shipped kernel)',
    dtype: 'fp8e4m3',
    features: { blockQuant: false, incoherent: false },
  },
  { id: 'block', label: 'FP8, block scales only', dtype: 'fp8e4m3', features: { blockQuant: true, incoherent: false } },
  { id: 'incoherent', label: 'FP8, incoherent processing only', dtype: 'fp8e4m3', features: { blockQuant: false, incoherent: true } },
  {
    id: 'fa3',
    label: "FP8, block scales + incoherent (the FA3 paper's experiment)",
    dtype: 'fp8e4m3',
    features: { blockQuant: true, incoherent: true },
  },
];

let errorMemo: ErrorRow[] | null = null;

/** RMSE and max abs error of O against float64 for each FP8 configuration of fa3 (and FP16). */
export function fp8ErrorTable(): ErrorRow[] {
  if (errorMemo) return errorMemo;
  const x = randomInputs(ERROR_PROBLEM, { seed: ERROR_SEED, distribution: 'fa3-outliers' });
  const ref = referenceAttention(ERROR_PROBLEM, x).o;
  errorMemo = ERROR_ROWS.map((r) => {
    const e = outputError(runToEnd(fa3, { ...ERROR_PROBLEM, dtype: r.dtype }, x, { ...ERROR_TILE, features: r.features }).o, ref);
    return { ...r, rmse: e.rmse, maxAbs: e.max_abs };
  });
  return errorMemo;
}

export const errorRow = (id: ErrorRow['id']): ErrorRow => fp8ErrorTable().find((r) => r.id === id)!;

export interface RotationEffect {
  /** RMS of (quantized − exact) over K's entries, per-tensor e4m3, without and with the rotation. */
  kQuantRms: [number, number];
  /** K's largest |entry| without and with the rotation (what sets the per-tensor scale). */
  kMax: [number, number];
  /** RMS and largest |error| of the scores τ·QKᵀ from per-tensor e4m3 Q and K, against float64. */
  sRms: [number, number];
  sMax: [number, number];
}

let rotationMemo: RotationEffect | null = null;

/** What incoherent processing changes in the error experiment's Q and K (per-tensor scales, to isolate it). */
export function rotationEffect(): RotationEffect {
  if (rotationMemo) return rotationMemo;
  const p = ERROR_PROBLEM;
  const x = randomInputs(p, { seed: ERROR_SEED, distribution: 'fa3-outliers' });
  const signs = randomSigns(p.d, 0); // fa3's default seed feature
  const tau = softmaxScale(p);
  const exact = new Float64Array(p.nq * p.nk);
  const dot = (a: ArrayLike<number>, b: ArrayLike<number>, out: Float64Array) => {
    for (let i = 0; i < p.nq; i++)
      for (let j = 0; j < p.nk; j++) {
        let s = 0;
        for (let c = 0; c < p.d; c++) s += a[i * p.d + c] * b[j * p.d + c];
        out[i * p.nk + j] = s * tau;
      }
  };
  dot(x.q, x.k, exact);
  const one = (rotate: boolean) => {
    const q = rotate ? rotateRows(x.q, p.d, signs) : x.q;
    const k = rotate ? rotateRows(x.k, p.d, signs) : x.k;
    const qq = quantizeFp8Rows(q, p.d, Infinity, 'e4m3').values;
    const kq = quantizeFp8Rows(k, p.d, Infinity, 'e4m3').values;
    let kErr = 0;
    let kMax = 0;
    for (let i = 0; i < k.length; i++) {
      kErr += (kq[i] - k[i]) ** 2;
      kMax = Math.max(kMax, Math.abs(k[i]));
    }
    const s = new Float64Array(p.nq * p.nk);
    dot(qq, kq, s);
    let sErr = 0;
    let sMax = 0;
    for (let i = 0; i < s.length; i++) {
      const e = Math.abs(s[i] - exact[i]);
      sErr += e * e;
      sMax = Math.max(sMax, e);
    }
    return { kq: Math.sqrt(kErr / k.length), kMax, sRms: Math.sqrt(sErr / s.length), sMax };
  };
  const a = one(false);
  const b = one(true);
  rotationMemo = { kQuantRms: [a.kq, b.kq], kMax: [a.kMax, b.kMax], sRms: [a.sRms, b.sRms], sMax: [a.sMax, b.sMax] };
  return rotationMemo;
}

/** The sink problem of the chapter's second pane: 4 sink keys first, forward K/V order, P cast at scale 1. */
export const SINK_PRESET: LoadRequest = lessonRequest(
  'fa3',
  { nq: 16, nk: 64, d: 32, dtype: 'fp8e4m3' },
  { blockM: 16, blockN: 16 },
  { seed: 1, distribution: 'sink', features: { blockQuant: true, incoherent: false, reverseKv: false, pScale: 1 } },
);

export interface FlushCount {
  /** Non-sink P values that were > 0 in fp32 and 0 after the e4m3 cast. */
  flushed: number;
  /** Non-sink P values > 0 in fp32 (what could flush). */
  positive: number;
}

/** Flushed and positive P values outside the sink keys, from a run's exp steps. */
export function nonSinkFlushes(events: readonly TraceEvent[]): FlushCount {
  let flushed = 0;
  let positive = 0;
  for (const e of events) {
    if (e.kind !== 'exp' || !e.flushed) continue;
    const cols = e.tile.cols[1] - e.tile.cols[0];
    const gone = new Set(e.flushed);
    for (let i = 0; i < e.p.length; i++) {
      const key = e.tile.cols[0] + (i % cols);
      if (key < SINK_KEYS) continue;
      if (gone.has(i)) {
        flushed++;
        positive++;
      } else if (e.p[i] > 0) positive++;
    }
  }
  return { flushed, positive };
}

export interface FlushRow {
  reverseKv: boolean;
  pScale: number;
  label: string;
  count: FlushCount;
}

/** The sink problem under both K/V orders and P scales 1 and 256. */
export function flushTable(run: (req: LoadRequest) => EngineRun, base: LoadRequest = SINK_PRESET): FlushRow[] {
  const rows: [boolean, number, string][] = [
    [false, 1, 'first to last (sinks first), pScale 1'],
    [true, 1, 'last to first (FA3’s order), pScale 1'],
    [false, 256, 'first to last, pScale 256'],
    [true, 256, 'last to first, pScale 256 (FA3’s kernel)'],
  ];
  return rows.map(([reverseKv, pScale, label]) => ({
    reverseKv,
    pScale,
    label,
    count: nonSinkFlushes(run({ ...base, features: { ...base.features, reverseKv, pScale } }).events),
  }));
}

/** The first exp step at which the e4m3 cast flushes a P value. */
export const firstFlush = (ev: readonly TraceEvent[]) => ev.findIndex((e) => e.kind === 'exp' && (e.flushed?.length ?? 0) > 0);

/** The run's largest K block scale: the block holding K's largest entry (after any rotation). */
function largestKScale(ev: readonly TraceEvent[]): number {
  let best = -Infinity;
  for (const e of ev) if (e.kind === 'qk' && e.kScale !== undefined) best = Math.max(best, e.kScale);
  return best;
}

/** The first S = QKᵀ step whose K block has the run's largest scale. */
export function outlierQk(ev: readonly TraceEvent[]): number {
  const best = largestKScale(ev);
  return ev.findIndex((e) => e.kind === 'qk' && e.kScale === best);
}

/** The load of the K block that outlierQk multiplies. */
export function outlierKLoad(ev: readonly TraceEvent[]): number {
  const i = outlierQk(ev);
  if (i < 0) return -1;
  const block = ev[i].tile.kvBlock;
  return ev.findIndex((e) => e.kind === 'load' && e.tensors.includes('K') && e.tile.kvBlock === block && e.quant !== undefined);
}

/** K block scales of a run, by block index (from its K loads). */
export function kBlockScales(ev: readonly TraceEvent[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const e of ev) if (e.kind === 'load' && e.tensors.includes('K') && e.quant) m.set(e.tile.kvBlock, e.quant.scale);
  return m;
}

export type QkEvent = EventOf<'qk'>;
