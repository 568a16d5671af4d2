// The worked examples of TRACE.md, generated from the engine: one event of every kind the
// engine's algorithms emit, from one tiny documented problem. trace-doc.test.ts checks that
// the JSON in TRACE.md is exactly what this produces, so the document cannot drift.

import { fa1 } from '../algorithms/fa1/forward.ts';
import { fa2 } from '../algorithms/fa2/forward.ts';
import { standard } from '../algorithms/standard/forward.ts';
import type { StepAlgorithm } from '../algorithms/types.ts';
import { randomInputs } from '../core/inputs.ts';
import { runToEnd } from '../run.ts';
import type { TraceEvent } from '../trace/events.ts';
import { toJsonLine } from '../trace/jsonl.ts';
import { backwardTraceExamples } from './backward-examples.ts';
import { EXAMPLE_BLOCKS, EXAMPLE_PROBLEM, EXAMPLE_SEED } from './example-problem.ts';
import { lowPrecisionTraceExamples } from './lowprec-examples.ts';

function events(algo: StepAlgorithm): TraceEvent[] {
  const out: TraceEvent[] = [];
  runToEnd(algo, EXAMPLE_PROBLEM, randomInputs(EXAMPLE_PROBLEM, { seed: EXAMPLE_SEED }), {
    ...EXAMPLE_BLOCKS,
    trace: true,
    onEvent: (e) => out.push(e),
  });
  return out;
}

/** Example name -> the JSONL line of that event. */
export function traceExamples(): Record<string, string> {
  const a = events(fa2);
  const one = (evs: TraceEvent[], pred: (e: TraceEvent) => boolean, what: string): string => {
    const e = evs.find(pred);
    if (!e) throw new Error(`example problem produced no ${what} event`);
    return toJsonLine(e);
  };
  const ex: Record<string, string> = {};
  for (const kind of ['load', 'qk', 'mask', 'rowmax', 'exp', 'rowsum', 'rescale', 'pv', 'normalize', 'write'] as const) {
    ex[`fa2.${kind}`] = one(a, (e) => e.kind === kind && (kind !== 'load' || e.inner >= 0), `fa2 ${kind}`);
  }
  const b = events(fa1);
  ex['fa1.pv'] = one(b, (e) => e.kind === 'pv', 'fa1 pv');
  ex['fa1.write'] = one(b, (e) => e.kind === 'write' && e.inner >= 0, 'fa1 write');
  ex['standard.normalize'] = one(events(standard), (e) => e.kind === 'normalize', 'standard normalize');
  return { ...ex, ...backwardTraceExamples(), ...lowPrecisionTraceExamples() };
}
