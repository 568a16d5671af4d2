// What every step algorithm looks like from outside: a generator of trace events that
// returns the output and counters. Runners, the worker, the CLI and the tests all drive
// algorithms through this one interface.

import type { Counters } from '../core/counters.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { TraceEvent } from '../trace/events.ts';
import type { EventAnnotator } from '../trace/tracer.ts';

export interface BlockOptions {
  /** Rows of a Q tile (Br). */
  blockM?: number;
  /** Columns of a K/V tile (Bc). */
  blockN?: number;
  /** On-chip memory M in bytes; block sizes follow the FA1 paper's rule when blockM/N are absent. */
  sramBytes?: number;
}

export interface RunOptions extends BlockOptions {
  /** false: no events are built or yielded (large problems); counters still count every step. */
  trace: boolean;
  /**
   * Switchable features of algorithms that model a real kernel (e.g. FA4 'lazyRescale',
   * 'exp2Emulation'; fmha_v2 'fp16Accumulation'; decoding 'splits'). Each algorithm
   * documents its own keys and defaults; unknown keys are rejected by the algorithm.
   */
  features?: Record<string, boolean | number>;
  /** Set by a serving layout (engine/layouts/) that runs the algorithm once per sequence; see EventAnnotator. */
  annotate?: EventAnnotator;
}

export interface AlgorithmResult {
  /** [batch, hq, nq, dv], rounded to the problem's dtype. */
  o: Float32Array;
  /** [batch, hq, nq], natural log; -Infinity for rows with nothing to attend to. */
  lse: Float32Array;
  counters: Counters;
  blocks: { blockM: number; blockN: number };
  /** FA1 only: the running max m and sum l it keeps in HBM ([batch, hq, nq], fp32), which its backward recomputes P from. */
  rowStats?: { m: Float32Array; l: Float32Array };
  /** Algorithm-specific tallies beyond the shared counters (e.g. skippedBlocks, splits, emulatedExp2). */
  stats?: Record<string, number>;
  /** How the trace orders the kernel's concurrent units for this problem, and why, in one or two sentences (fa3: its consumer warpgroups). */
  schedule?: string;
}

export type StepGenerator = Generator<TraceEvent, AlgorithmResult, void>;

export interface StepAlgorithm {
  id: string;
  /** Human name for menus. */
  name: string;
  /**
   * Quantizes its inputs whatever the dtype (sage: INT8 Q and K, FP16/FP8 P·V), so its output
   * is never within rounding of the float64 reference; the exactness checks that run every
   * algorithm skip it and test it against bounds of its own.
   */
  quantized?: boolean;
  /** The tile it runs for these options: the given one, else its kernel's own (or one sized from the on-chip memory). */
  blocks(p: AttentionProblem, o: BlockOptions): { blockM: number; blockN: number };
  run(problem: AttentionProblem, inputs: AttentionInputs, options: RunOptions): StepGenerator;
}
