// Drives a step algorithm to completion. Used by the CLI, tests and benchmarks with
// tracing off; the worker drives the same generators step by step with tracing on.

import { checkInputs, type AttentionInputs } from './core/inputs.ts';
import { validateProblem, type AttentionProblem } from './core/problem.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm } from './algorithms/types.ts';
import type { TraceEvent } from './trace/events.ts';

export function runToEnd(
  algo: StepAlgorithm,
  p: AttentionProblem,
  x: AttentionInputs,
  opts: Omit<RunOptions, 'trace'> & { trace?: boolean; onEvent?: (e: TraceEvent) => void } = {},
): AlgorithmResult {
  validateProblem(p);
  checkInputs(p, x);
  const { onEvent: _onEvent, ...runOpts } = opts;
  const gen = algo.run(p, x, { ...runOpts, trace: opts.trace ?? false });
  for (;;) {
    const r = gen.next();
    if (r.done) return r.value;
    opts.onEvent?.(r.value);
  }
}
