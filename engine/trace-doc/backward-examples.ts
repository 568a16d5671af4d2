// The worked examples of TRACE.md's backward section, generated from the engine on the
// forward examples' problem (example-problem.ts) with a dO drawn from the same seed: one event of
// every backward kind (FA2), FA1's plain dQ read-modify-write, and an FA3 producer load and
// deterministic dQ add. trace-doc.test.ts pins them.

import { randomGradOutput } from '../backward/grad-output.ts';
import { backwardById } from '../algorithms/backward-registry.ts';
import type { BackwardInputs } from '../backward/types.ts';
import { randomInputs } from '../core/inputs.ts';
import { runToEnd } from '../run.ts';
import type { TraceEvent } from '../trace/events.ts';
import { toJsonLine } from '../trace/jsonl.ts';
import { EXAMPLE_BLOCKS, EXAMPLE_PROBLEM, EXAMPLE_SEED } from './example-problem.ts';

function events(id: string, features?: Record<string, boolean>): TraceEvent[] {
  const p = EXAMPLE_PROBLEM;
  const x: BackwardInputs = { ...randomInputs(p, { seed: EXAMPLE_SEED }), dO: randomGradOutput(p, EXAMPLE_SEED) };
  const out: TraceEvent[] = [];
  runToEnd(backwardById(id), p, x, { ...EXAMPLE_BLOCKS, features, trace: true, onEvent: (e) => out.push(e) });
  return out;
}

function one(evs: TraceEvent[], pred: (e: TraceEvent) => boolean, what: string): string {
  const e = evs.find(pred);
  if (!e) throw new Error(`example problem produced no ${what} event`);
  return toJsonLine(e);
}

/** Example name -> the JSONL line of that event. */
export function backwardTraceExamples(): Record<string, string> {
  const ex: Record<string, string> = {};
  const a = events('fa2');
  for (const kind of ['dsum', 'recompute', 'dv', 'dp', 'ds', 'dk', 'dqconvert'] as const)
    ex[`fa2bwd.${kind}`] = one(a, (e) => e.kind === kind, `fa2 backward ${kind}`);
  // The dQ add of the second column block into a row block the first one already added into.
  ex['fa2bwd.dq'] = one(a, (e) => e.kind === 'dq' && e.contributors.length > 1, 'fa2 backward dq with two contributors');
  ex['fa1bwd.dq'] = one(events('fa1'), (e) => e.kind === 'dq', 'fa1 backward dq');
  const c = events('fa3', { deterministic: true });
  ex['fa3bwd.load'] = one(c, (e) => e.kind === 'load' && e.role === 'producer' && e.line === 'fa3bwd.loaddO', 'fa3 backward producer load');
  ex['fa3bwd.dq'] = one(c, (e) => e.kind === 'dq', 'fa3 backward dq');
  return ex;
}
