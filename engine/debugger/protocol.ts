// The debugger's worker RPC contract. The main thread holds a Comlink proxy typed as
// DebuggerApi; the worker (app/worker/debugger.worker.ts) implements it by wrapping one
// DebuggerSession (session.ts). Everything crossing the boundary is structured-cloneable
// plain data; the big per-frame arrays are typed arrays whose buffers the worker transfers
// (never copied), so stepping cost does not grow with the number of panes.
//
// Positions are trace step indices 0..total-1. Every navigation call returns a FrameUpdate
// for the new position: the receiver applies it (frames.ts applyUpdate) to the frame it
// holds, so one session serves one receiver at a time (one pane = one worker). A call made while a load or a breakpoint search is running waits for
// it; cancel() stops a running load / search / counters run at the next chunk boundary.

import type { Counters } from '../core/counters.ts';
import type { PhaseKind, Range, TraceEvent } from '../trace/events.ts';
import type { HardwareApi } from '../hw/api.ts';
import type { ErrorStats, Prediction } from '../compare/diff.ts';
import type { SyncAxis, SyncPoint } from '../compare/sync.ts';
import type { Pass } from '../pass.ts';
import type { LoadRequest } from '../request.ts';
import type { BackwardArrays, BackwardPatch } from './backward-state.ts';
import type { DqAdd } from './dq-accumulation.ts';
import type { PrecisionMarks, PrecisionResponse } from './precision.ts';

/** How far one "step" moves: one phase event, one inner-loop iteration, one outer-loop iteration. */
export type Granularity = 'phase' | 'inner' | 'outer';

export type BreakpointSpec =
  | { kind: 'tile'; qBlock: number; kvBlock: number }
  | { kind: 'rescale-row'; row: number }
  | { kind: 'nonfinite' }
  | { kind: 'm-jump'; threshold: number }
  | { kind: 'phase'; phase: PhaseKind }
  /** Backward pass: the first NaN/Inf in D, dP, dS, dQ, dK or dV. */
  | { kind: 'grad-nonfinite' }
  /** Backward pass: a dS step with an entry of magnitude above the threshold. */
  | { kind: 'ds-above'; threshold: number };

export type Breakpoint = BreakpointSpec & { id: string; enabled: boolean };

export interface LoadSummary {
  algorithm: string;
  algorithmName: string;
  total: number;
  blocks: { blockM: number; blockN: number };
  /** Number of K/V and Q blocks (column and row tiles). */
  tiles: { rows: number; cols: number };
  /**
   * Value ranges over the whole run, so colour scales stay fixed while stepping. `o` is the
   * range of the final normalized output where the algorithm has a normalize/combine step
   * (running unnormalized accumulators beyond it saturate), else of every O value shown.
   * `p` is likewise the normalized P's range where the run normalizes P (standard
   * attention), else that of exp(S − m); it always starts at 0.
   */
  ranges: { s: [number, number]; p: [number, number]; o: [number, number]; q: [number, number]; k: [number, number]; v: [number, number] };
  /** Which pass the trace steps through. */
  pass: Pass;
  /** A backward run: fixed colour ranges of its inputs and gradients over the whole run. */
  backward?: BackwardSummary;
  /**
   * Present when the trace carries low-precision fields (TRACE.md "Low precision"): some event
   * has a quantization scale (`quantized`), some exp event a `flushed` list (`cast`), and the
   * P values flushed over the run.
   */
  lowPrecision?: { quantized: boolean; cast: boolean; flushed: number };
  /**
   * True when the trace's qk events carry `base2` (fa4, sage): S and m are in log2 units
   * (logit × log₂e) and P = 2^(S − m). The views title S and P by it.
   */
  base2?: boolean;
  /** The algorithm's sentence on how its trace orders concurrent units (AlgorithmResult.schedule), shown beside the pseudo-code. */
  schedule?: string;
  /** Bytes the session holds for this trace: event payloads plus checkpoints. */
  memoryBytes: number;
  checkpointInterval: number;
  loadMs: number;
}

export interface BackwardSummary {
  ranges: Record<'dO' | 'D' | 'dP' | 'dS' | 'dQ' | 'dK' | 'dV', [number, number]>;
  /** Every add into dQ in trace order (the dQ accumulation view; see dq-accumulation.ts). */
  dqAdds: DqAdd[];
  /** Largest |P recomputed − P of a standard forward| over the run's heads, in the input dtype's rounding. */
  recomputeMaxDiff: number;
}

/** Statistics of the rows of the current Q tile, one entry per K/V block visited so far. */
export interface RowHistoryEntry {
  kvBlock: number;
  /** rowmax of this block's scores (FA1's m̃_ij). */
  tileMax?: number[];
  mBefore?: number[];
  mAfter?: number[];
  lAfter?: number[];
  /** exp(m_old - m_new) per row, present when the step rescaled. */
  factor?: number[];
  /** True when m is in log2 units (FA4): the factor is then 2^(m_old - m_new). */
  base2?: boolean;
}
export interface RowHistory {
  qBlock: number;
  rows: Range;
  /** flash-decoding: the split of the current step; the entries are then that split's blocks only, as m and ℓ restart per split. */
  split?: number;
  entries: RowHistoryEntry[];
  /** flash-decoding, once the splits of this Q tile are combined: each row's split LSEs and the merged LSE. */
  merged?: { splitLse: number[][]; lse: number[] };
}

export interface BreakpointHit {
  id: string;
  reason: string;
}

/** The state of the run after step `step`, for the head that step works on. */
export interface Frame {
  step: number;
  total: number;
  event: TraceEvent;
  b: number;
  h: number;
  nq: number;
  nk: number;
  dv: number;
  /** Scores [nq×nk]; NaN where not yet computed in this head, -Infinity where masked. */
  s: Float32Array;
  /** Probabilities [nq×nk]; NaN where not yet computed. */
  p: Float32Array;
  /** 1 where the mask phase hid the entry. */
  mask: Uint8Array;
  /** Output [nq×dv]: the running accumulator, or the normalized/written row; NaN before. */
  o: Float32Array;
  /** Per row: 0 untouched, 1 accumulating (unnormalized), 2 normalized, 3 written to HBM. */
  oState: Uint8Array;
  /** Running max / sum per row (NaN before the row's first statistics step). */
  m: Float64Array;
  l: Float64Array;
  history: RowHistory;
  counters: Counters;
  /** Set when this position was reached by stopping at a breakpoint. */
  hit?: BreakpointHit;
  /** A backward run: D, dP, dS and the gradients so far (S and the recomputed P are in s and p). */
  bwd?: BackwardArrays;
  /**
   * Increases with every update applied by the receiver: the big arrays are patched in
   * place, so views watch this number rather than the arrays' identity.
   */
  seq: number;
  /**
   * What the update that made this frame (seq) changed, when it was a patch: the S/P/mask cells
   * of rows×cols and the O rows. Absent after a full update: everything may have changed.
   */
  changed?: { rows: Range; cols: Range; oRows: Range };
}

/**
 * The arrays of a frame as they travel: everything after a seek, a head switch or a load
 * (`full`), otherwise only what changed since the previous update: the S/P/mask cells of
 * rows×cols (row-major) and the O/oState/m/l values of oRows. Stepping forward through a
 * 512×512 problem thus moves one tile, not two megabytes.
 */
export type FramePatch = (
  | {
      full: true;
      s: Float32Array;
      p: Float32Array;
      mask: Uint8Array;
      o: Float32Array;
      oState: Uint8Array;
      m: Float64Array;
      l: Float64Array;
    }
  | {
      full: false;
      rows: Range;
      cols: Range;
      oRows: Range;
      s: Float32Array;
      p: Float32Array;
      mask: Uint8Array;
      o: Float32Array;
      oState: Uint8Array;
      m: Float64Array;
      l: Float64Array;
    }
) & { bwd?: BackwardPatch };

/** What step/seek/runToBreakpoint return; frames.ts turns it into a Frame. */
export type FrameUpdate = Omit<Frame, 's' | 'p' | 'mask' | 'o' | 'oState' | 'm' | 'l' | 'seq' | 'bwd' | 'changed'> & { patch: FramePatch };

export interface HeadInputs {
  b: number;
  h: number;
  /** [nq×d] */
  q: Float32Array;
  /** [nk×d] (shown transposed as Kᵀ) */
  k: Float32Array;
  /** [nk×dv] */
  v: Float32Array;
  d: number;
  dv: number;
  nq: number;
  nk: number;
  /** A backward run: the incoming gradient [nq×dv] and the P a standard forward stores in HBM [nq×nk] (what the flash backward recomputes instead). */
  dO?: Float32Array;
  pForward?: Float32Array;
}

export interface CountersRun {
  counters: Counters;
  ms: number;
  cancelled: boolean;
}

export type Progress = (fraction: number, label: string) => void;

/** What compare mode needs from a loaded run (whole run, not the current step). */
export interface CompareData {
  counters: Counters;
  /** Final output [batch, hq, nq, dv]; a backward run's dQ [batch, hq, nq, d]. */
  output: Float32Array;
  /** Which tensor `output` is. */
  outputName: 'O' | 'dQ';
  /** Against float64: O, or a backward's dQ, dK and dV together. */
  error: ErrorStats;
  prediction: Prediction;
  /** Whether the 'time' sync axis is available (the algorithm has a hardware schedule on this GPU). */
  hasTimeline: boolean;
  /** Why not, when it is not. */
  timelineReason?: string;
}

export interface DebuggerApi extends HardwareApi {
  /** Generates the inputs and records the trace. Rejects with a message naming the field on bad input. */
  load(req: LoadRequest, onProgress?: Progress): Promise<LoadSummary>;
  /** Moves by `delta` units (negative = backward) of the given granularity. */
  step(delta: number, granularity: Granularity): Promise<FrameUpdate>;
  /** `full`: send the whole frame, for a receiver that holds none (after a load or a restart). */
  seek(step: number, full?: boolean): Promise<FrameUpdate>;
  /** Runs forward to the next position where an enabled breakpoint matches (or to the end). */
  runToBreakpoint(onProgress?: Progress): Promise<FrameUpdate>;
  setBreakpoints(bps: Breakpoint[]): Promise<void>;
  headInputs(b: number, h: number): Promise<HeadInputs>;
  /** Runs the whole problem with tracing reduced to counting, for problems too big to step. */
  runCounters(req: LoadRequest, onProgress?: Progress): Promise<CountersRun>;
  /** Stops a running load, breakpoint search or counters run. */
  cancel(): void;
  /** Totals, output, error vs float64 and the hardware model's prediction on a GPU. */
  compareData(gpu: string): Promise<CompareData>;
  /** The current position on every sync axis (simulated time on `gpu`). */
  syncPoint(gpu: string): Promise<SyncPoint>;
  /** Moves to this run's step at a leader's point; `used` is the axis actually applied. */
  seekSync(point: SyncPoint, axis: SyncAxis, gpu: string): Promise<{ frame: FrameUpdate; used: SyncAxis }>;
  /** Flushed P values and tile scales of head (b, h); no reference needed (TRACE.md "Precision view data"). */
  precisionMarks(b: number, h: number): Promise<PrecisionMarks>;
  /** The Precision view's errors against float64 for head (b, h), or why they are not computed. */
  precision(b: number, h: number): Promise<PrecisionResponse>;
  /** The whole trace as JSONL (TRACE.md), one event per line. */
  traceJsonl(): Promise<string>;
}
