// The measurements of chapter 12's INT8 section: SageAttention (version 1) on keys whose
// channels carry a large common offset, with and without K smoothing. Run in the lesson worker
// when the chapter shows them; fixed inputs, so the text around them holds, and the chapter's
// test checks them against a float64 attention of its own.

import {
  sage,
  SAGE_TILE,
  type LoadRequest,
  randomInputs,
  type AttentionInputs,
  outputError,
  prepareSage,
  DEFAULT_PROBLEM,
  type AttentionProblem,
  mulberry32,
  referenceAttention,
  runToEnd,
  type TraceEvent,
} from '../../../engine/api.ts';
import { lessonRequest } from './queries.ts';

/** Small enough for the lesson worker (sage's integer dot products are per element), two K blocks of the kernel's 64 keys. */
export const SMOOTH_PROBLEM: AttentionProblem = { ...DEFAULT_PROBLEM, nq: 128, nk: 128, d: 64, dv: 64, dtype: 'fp16' };
/** Every channel of K is shifted by a constant drawn uniformly from ±K_OFFSET (BENCHMARKS.md uses the same ±20). */
export const K_OFFSET = 20;
export const SMOOTH_SEED = 1;
const OFFSET_SEED = 3;

let inputsMemo: AttentionInputs | null = null;

/** N(0,1) Q, K and V, then K[j, c] += offset[c]: the per-channel offset trained keys often have. */
export function offsetKInputs(): AttentionInputs {
  if (inputsMemo) return inputsMemo;
  const p = SMOOTH_PROBLEM;
  const rnd = mulberry32(OFFSET_SEED);
  const offset = Array.from({ length: p.d }, () => K_OFFSET * (2 * rnd() - 1));
  const x = randomInputs(p, { seed: SMOOTH_SEED });
  inputsMemo = { ...x, k: Float32Array.from(x.k, (v, i) => v + offset[i % p.d]) };
  return inputsMemo;
}

export interface SmoothRow {
  smoothK: boolean;
  label: string;
  /** The largest K block scale, max|K (− mean)| / 127: the INT8 step of the coarsest K block. */
  kStep: number;
  /** RMS of (code·scale + mean − K) over K's entries: what the INT8 codes lose of K. */
  kRms: number;
  /** O against the float64 reference of the unquantized inputs. */
  rmse: number;
  maxAbs: number;
}

let tableMemo: SmoothRow[] | null = null;

/** sage v1 on the offset keys, smoothing off and on. */
export function smoothingTable(): SmoothRow[] {
  if (tableMemo) return tableMemo;
  const p = SMOOTH_PROBLEM;
  const x = offsetKInputs();
  const ref = referenceAttention(p, x).o;
  tableMemo = [false, true].map((smoothK) => {
    const prep = prepareSage(p, x, { version: 1, smoothK, qRows: SAGE_TILE.blockM, kRows: SAGE_TILE.blockN });
    const scales = prep.kScales[0];
    const mean = prep.kMean[0];
    let err = 0;
    for (let i = 0; i < x.k.length; i++) {
      const key = Math.floor(i / p.d);
      const back = prep.kCodes[i] * scales[Math.floor(key / prep.kRows)] + mean[i % p.d];
      err += (back - x.k[i]) ** 2;
    }
    const e = outputError(runToEnd(sage, p, x, { features: { version: 1, smoothK } }).o, ref);
    return {
      smoothK,
      label: smoothK ? 'smoothK on: K − mean(K) quantized' : 'smoothK off: K quantized as it is',
      kStep: Math.max(...scales),
      kRms: Math.sqrt(err / x.k.length),
      rmse: e.rmse,
      maxAbs: e.max_abs,
    };
  });
  return tableMemo;
}

export const smoothingRow = (smoothK: boolean): SmoothRow => smoothingTable().find((r) => r.smoothK === smoothK)!;

/**
 * The chapter's third pane: SageAttention v1 stepping an fp16 problem, 2 × 2 tiles. Smoothing
 * off: the Precision view's float64 scores are those of the unsmoothed K, so with smoothing on
 * its S error would be each row's shift q·mean(K)·τ, not what INT8 lost ("try this" shows that).
 */
export const SAGE_PRESET: LoadRequest = lessonRequest(
  'sage',
  { nq: 128, nk: 128, d: 64, dtype: 'fp16' },
  { blockM: 64, blockN: 64 },
  { seed: 1, features: { version: 1, smoothK: false } },
);

/** The first S = QKᵀ step (an exact integer dot product, dequantized by the Q and K scales). */
export const firstQk = (ev: readonly TraceEvent[]) => ev.findIndex((e) => e.kind === 'qk');

/** The S = QKᵀ step of the second K block (the first tile row's second column). */
export const secondBlockQk = (ev: readonly TraceEvent[]) => ev.findIndex((e) => e.kind === 'qk' && e.tile.kvBlock === 1);
