// The trace contract in types. TRACE.md beside this file is the prose specification;
// keep the two in step. Everything here is plain JSON-able data (numbers, strings,
// arrays), so events cross postMessage and JSONL unchanged. Non-finite numbers are
// written to JSONL as the strings "Infinity", "-Infinity" and "NaN" (see jsonl.ts).

import type { CounterDelta, HbmTensor } from '../counters.ts';

export type PhaseKind =
  | 'load' // a tile moves HBM -> on-chip
  | 'qk' // S = Q_i K_j^T (scaled, modifiers applied)
  | 'mask' // masked entries of S set to -inf
  | 'rowmax' // running row max updated
  | 'exp' // P = exp(S - m)
  | 'rowsum' // running row sum l updated
  | 'rescale' // running output multiplied by exp(m_old - m_new)
  | 'pv' // O += P V_j
  | 'normalize' // O / l (and LSE)
  | 'write' // a tile moves on-chip -> HBM
  | 'combine'; // split partial results merged (flash-decoding)

/** Half-open index range [start, end). */
export type Range = [number, number];

export interface TileRef {
  /** Q block index (row tile). */
  qBlock: number;
  /** K/V block index (column tile); -1 when the event concerns no K/V block. */
  kvBlock: number;
  /** Query rows covered, [start, end). */
  rows: Range;
  /** Key columns covered, [start, end); [0, 0] when none. */
  cols: Range;
}

interface EventBase {
  /** 0-based position in the trace. */
  step: number;
  kind: PhaseKind;
  /** Batch and query head this event works on. */
  b: number;
  h: number;
  /** Loop position: outer and inner loop index as the algorithm's pseudo-code names them. */
  outer: number;
  inner: number;
  tile: TileRef;
  /** Id of the pseudo-code line (content/ maps ids to text), e.g. "fa2.rowmax". */
  line: string;
  /** What this step added to the run's counters. */
  delta: CounterDelta;
  /** Hardware-modelling algorithms: the warp (fmha_v2) or warpgroup (FA3 consumer, FA4 softmax stage) doing this step. */
  warp?: number;
  warpgroup?: number;
  /** flash-decoding: the K/V split this step belongs to. */
  split?: number;
  /**
   * true when s, m, tileMax, mBefore/mAfter, mOld/mNew are in log2 units (logit × log2 e) and the
   * exponentials are base 2 (P = 2^(s − m), factor = 2^(mOld − mNew)), as FA4 keeps them. LSE stays natural.
   */
  base2?: boolean;
  /**
   * Packed variable-length batches (engine/layouts/varlen.ts): `b` is the sequence and
   * tile.rows / tile.cols are positions inside it; these are the same ranges in the packed
   * total_q / total_k index (offset by cu_seqlens).
   */
  packed?: { rows: Range; cols: Range };
  /** Paged K/V cache (engine/layouts/paged.ts): the physical pages tile.cols lie in, in logical order. */
  pages?: number[];
}

export interface LoadEvent extends EventBase {
  kind: 'load';
  tensors: HbmTensor[];
}
export interface WriteEvent extends EventBase {
  kind: 'write';
  tensors: HbmTensor[];
}
/** S tile after the matmul and the score modifiers (scale, softcap, ALiBi), row-major rows×cols. */
export interface QkEvent extends EventBase {
  kind: 'qk';
  s: number[];
}
export interface MaskEvent extends EventBase {
  kind: 'mask';
  /** Row-major rows×cols, 1 where the entry is masked. */
  masked: number[];
  s: number[];
}
/** Row statistics are indexed by the rows of tile.rows. */
export interface RowMaxEvent extends EventBase {
  kind: 'rowmax';
  tileMax: number[];
  mBefore: number[];
  mAfter: number[];
}
export interface ExpEvent extends EventBase {
  kind: 'exp';
  /** P tile, row-major rows×cols, as stored (rounded to the input dtype for 16-bit problems). */
  p: number[];
  /** The max each row's P was computed against. */
  m: number[];
}
export interface RowSumEvent extends EventBase {
  kind: 'rowsum';
  tileSum: number[];
  lBefore: number[];
  lAfter: number[];
}
export interface RescaleEvent extends EventBase {
  kind: 'rescale';
  /** exp(m_old - m_new) per row; 1 where the max did not change. */
  factor: number[];
  mOld: number[];
  mNew: number[];
}
/** Output accumulator of the current Q rows after this step, row-major rows×dv. */
export interface PvEvent extends EventBase {
  kind: 'pv';
  o: number[];
  /** FA1 only: per row, the coefficient e^(m~ - m_new) / l_new that P~V was added with. */
  weight?: number[];
}
export interface NormalizeEvent extends EventBase {
  kind: 'normalize';
  /** The normalized output tile, rows×dv; empty when the event normalizes P only (standard attention's softmax pass). */
  o: number[];
  /** Standard attention only: rows×cols of P = exp(S - m) / l as written to HBM (rounded to the input dtype). */
  p?: number[];
  l: number[];
  lse: number[];
}
export interface CombineEvent extends EventBase {
  kind: 'combine';
  /** Per row: the LSE of each split, and the merged LSE. */
  splitLse: number[][];
  lse: number[];
  o: number[];
}

export type TraceEvent =
  | LoadEvent
  | WriteEvent
  | QkEvent
  | MaskEvent
  | RowMaxEvent
  | ExpEvent
  | RowSumEvent
  | RescaleEvent
  | PvEvent
  | NormalizeEvent
  | CombineEvent;
