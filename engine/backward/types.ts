// What a backward algorithm looks like from outside. It is a StepAlgorithm like the
// forward ones — a generator of TraceEvents — so the debugger session, time travel,
// breakpoints and compare drive it unchanged; its inputs carry dO as well, and its result
// carries the gradients next to the forward's O and LSE (computed first, untraced).

import type { AlgorithmResult, RunOptions, StepAlgorithm } from '../algorithms/types.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { TraceEvent } from '../trace/events.ts';

export interface BackwardInputs extends AttentionInputs {
  /** The gradient of the loss with respect to O: [batch, hq, nq, dv], rounded to the dtype. */
  dO: Float32Array;
}

export interface BackwardResult extends AlgorithmResult {
  /** [batch, hq, nq, d], [batch, hk, nk, d], [batch, hk, nk, dv], rounded to the problem's dtype. */
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
  /** The forward run whose O and LSE the backward used (its counters are the forward's own). */
  forward: AlgorithmResult;
}

export type BackwardGenerator = Generator<TraceEvent, BackwardResult, void>;

export interface BackwardAlgorithm extends StepAlgorithm {
  /** Same id as the forward algorithm it differentiates (standard, fa1, fa2, fa3, fa4). */
  id: string;
  pass: 'backward';
  /** Prefix of its pseudo-code line ids, e.g. 'fa2bwd'. */
  linePrefix: string;
  /** `x` must be BackwardInputs (a ProblemError names dO when it is missing or mis-sized). */
  run(problem: AttentionProblem, x: AttentionInputs, options: RunOptions): BackwardGenerator;
}
