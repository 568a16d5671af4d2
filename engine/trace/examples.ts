// The worked examples of TRACE.md, generated from the engine: one event of every kind the
// engine's algorithms emit, from one tiny documented problem. trace-doc.test.ts checks that
// the JSON in TRACE.md is exactly what this produces, so the document cannot drift.

import { fa1 } from '../algorithms/fa1/forward.ts';
import { fa2 } from '../algorithms/fa2/forward.ts';
import { standard } from '../algorithms/standard/forward.ts';
import type { StepAlgorithm } from '../algorithms/types.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import type { TraceEvent } from './events.ts';
import { toJsonLine } from './jsonl.ts';
import { backwardTraceExamples } from './backward-examples.ts';
import { lowPrecisionTraceExamples } from './lowprec-examples.ts';

/** 3 queries, 4 keys, d = dv = 2, causal (bottom-right), 2×2 tiles, seed 3 (chosen so the second K/V block raises a row max and the rescale factor is not 1). */
export const EXAMPLE_PROBLEM: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 3, nk: 4, d: 2, dv: 2, causal: true, dtype: 'fp32' };
export const EXAMPLE_BLOCKS = { blockM: 2, blockN: 2 };
export const EXAMPLE_SEED = 3;

function events(algo: StepAlgorithm): TraceEvent[] {
  const out: TraceEvent[] = [];
  runToEnd(algo, EXAMPLE_PROBLEM, randomInputs(EXAMPLE_PROBLEM, { seed: EXAMPLE_SEED }), { ...EXAMPLE_BLOCKS, trace: true, onEvent: (e) => out.push(e) });
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
