// The trace contract in types. TRACE.md beside this file is the prose specification;
// keep the two in step. Everything here is plain JSON-able data (numbers, strings,
// arrays), so events cross postMessage and JSONL unchanged. Non-finite numbers are
// written to JSONL as the strings "Infinity", "-Infinity" and "NaN" (see jsonl.ts).

import type { CounterDelta, HbmTensor } from '../core/counters.ts';

export type ForwardPhaseKind =
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

/** The backward pass's own phases (load, qk, mask and write are shared with the forward). */
export type BackwardPhaseKind =
  | 'dsum' // D_i = rowsum(dO_i ∘ O_i) (FA2/FA3 preprocessing; FA1 every inner step)
  | 'recompute' // P_ij recomputed from the saved statistics: exp(S_ij − LSE_i)
  | 'dv' // dV_j += P_ijᵀ dO_i
  | 'dp' // dP_ij = dO_i V_jᵀ
  | 'ds' // dS_ij = P_ij ∘ (dP_ij − D_i) (times the softcap derivative)
  | 'dq' // dQ_i += dS_ij K_j · scale (read-modify-write or atomic add into HBM)
  | 'dk' // dK_j += dS_ijᵀ Q_i · scale
  | 'dqconvert'; // the fp32 dQ accumulator converted to the output dQ (postprocess)

/** A K/V tile the block mask marks empty: the kernel moves to the next tile without loading it. */
export type SkipPhaseKind = 'skip';

export type PhaseKind = ForwardPhaseKind | BackwardPhaseKind | SkipPhaseKind;

/** FA3 backward: the warp role doing a step (producer warp, MMA consumer warpgroup, the dQ writer warp, the postprocess kernel). */
export type BackwardRole = 'producer' | 'mma' | 'dqwriter' | 'preprocess' | 'postprocess';

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
  /** Present (and 'backward') on every event of a backward pass; absent on forward events. */
  pass?: 'backward';
  /** FA3 backward: the warp role of this step. */
  role?: BackwardRole;
  /** FA3 backward: the ring stage a producer load fills (Q/LSE and dO/D rings). */
  stage?: number;
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
  /** FP8 runs (fa3 with dtype fp8*): the quantization scale of the loaded tile (or tensor) and its entries at ±max of the format. */
  quant?: { scale: number; saturated: number };
}
export interface WriteEvent extends EventBase {
  kind: 'write';
  tensors: HbmTensor[];
}
/** S tile after the matmul and the score modifiers (scale, softcap, ALiBi), row-major rows×cols. */
export interface QkEvent extends EventBase {
  kind: 'qk';
  s: number[];
  /** Quantized runs: the scales of the Q tile and the K block this S was computed from (S = Q̂K̂ᵀ · qScale · kScale · softmax scale). */
  qScale?: number;
  kScale?: number;
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
  /** FP8 runs: P is multiplied by pScale, cast to e4m3 and divided back; `p` holds that cast value. */
  pScale?: number;
  /** FP8 runs: row-major tile indices (r·cols + c) whose P was > 0 in fp32 and became 0 in the cast. */
  flushed?: number[];
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
  /** FP8 runs: the quantization scale of the V block multiplied in. */
  vScale?: number;
  /** SageAttention v2: V's per-channel FP8 scales (one per output column, the same for every block of the head). */
  vScales?: number[];
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
  /**
   * sage with K smoothing: per row, what the algorithm took out of every score of the row
   * before its kernel ran (q·mean(K)·scale, natural-log units). The kernel's S, P, m and this
   * event's lse are those of the shifted scores; the written LSE adds the shift back.
   */
  scoreShift?: number[];
}
/** An empty tile of the block mask (no key visible to any query of the Q tile): nothing loaded or computed. */
export interface SkipEvent extends EventBase {
  kind: 'skip';
}
export interface CombineEvent extends EventBase {
  kind: 'combine';
  /** Per row: the LSE of each split, and the merged LSE. */
  splitLse: number[][];
  lse: number[];
  o: number[];
}

// ---- Backward pass. Tiles are row-major; "rows" are tile.rows (query rows of block i),
// "cols" tile.cols (keys of block j). Gradients are in the units of the tensors they
// belong to (dQ, dK include the softmax scale).

/** D_i = rowsum(dO_i ∘ O_i), one value per query row of the block. */
export interface DsumEvent extends EventBase {
  kind: 'dsum';
  /** rows×dv: the dO tile and the forward's output tile the sum is taken over. */
  dO: number[];
  o: number[];
  D: number[];
}
/** P_ij recomputed from the forward's statistics; standard attention reads the P its forward stored. */
export interface RecomputeEvent extends EventBase {
  kind: 'recompute';
  /** rows×cols, as fed to the dV matmul (rounded to the input dtype for 16-bit problems). */
  p: number[];
  /** Per row: the log-sum-exp P was computed against (FA1: m + log l from its stored m and l). */
  lse: number[];
}
export interface DvEvent extends EventBase {
  kind: 'dv';
  /** rows×dv: the dO tile of this step. */
  dO: number[];
  /** cols×dv: the dV accumulator of the K/V block after this step (fp32). */
  dV: number[];
}
export interface DpEvent extends EventBase {
  kind: 'dp';
  /** rows×cols: dP_ij = dO_i V_jᵀ (fp32 accumulator). */
  dP: number[];
}
export interface DsEvent extends EventBase {
  kind: 'ds';
  /** rows×cols: P ∘ (dP − D) times the softcap derivative, as fed to the dQ and dK matmuls (16-bit problems: rounded). */
  dS: number[];
  /** Per row: the D_i subtracted. */
  D: number[];
  /** Softcap only, rows×cols: 1 − tanh²(s/c), the factor of the chain rule through the cap. */
  softcapGrad?: number[];
}
export interface DqEvent extends EventBase {
  kind: 'dq';
  /** rows×d: the row block's dQ accumulator in HBM after this add (fp32). */
  dQ: number[];
  /** The column block (K/V-outer worker) whose add this is: tile.kvBlock. */
  worker: number;
  /** Column blocks that have added into this dQ row block so far, in order, this one last. */
  contributors: number[];
  /** true when the add is an atomic add (FA2, FA3), false for FA1's plain read-modify-write. */
  atomic: boolean;
  /**
   * Other workers that, if every column block ran at once in lockstep (one worker per
   * column block, each at its own n-th row block), would add into this same row block at
   * this same iteration: the adds the atomics serialize.
   */
  collidesWith: number[];
  /** FA3 deterministic mode: this add's position in the row block's fixed order of workers. */
  turn?: number;
}
export interface DkEvent extends EventBase {
  kind: 'dk';
  /** cols×d: the dK accumulator of the K/V block after this step (fp32). */
  dK: number[];
}
export interface DqConvertEvent extends EventBase {
  kind: 'dqconvert';
  /** rows×d: the output dQ of the row block (rounded to the input dtype for 16-bit problems). */
  dQ: number[];
}

export type BackwardEvent = DsumEvent | RecomputeEvent | DvEvent | DpEvent | DsEvent | DqEvent | DkEvent | DqConvertEvent;

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
  | CombineEvent
  | SkipEvent
  | BackwardEvent;
