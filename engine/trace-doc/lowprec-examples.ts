// TRACE.md's FP8 examples ("Low precision"), generated like the others: fa3 with dtype
// fp8e4m3 on a tiny attention-sink problem, K/V blocks first to last and pScale 1, so the
// second block's P values fall under e4m3's range and the exp event lists them as flushed.
// Then SageAttention v2 on the same inputs in fp16: INT8 scales on the loads and qk, the
// 2^8.807 P scale and flushed P on exp, V's per-channel e4m3 scales on pv.

import { fa3 } from '../algorithms/fa3/forward.ts';
import { sage } from '../algorithms/sage/forward.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import type { TraceEvent } from '../trace/events.ts';
import { toJsonLine } from '../trace/jsonl.ts';

/** 2 queries, 8 keys (the first 4 are sinks), d = dv = 4, softmax scale 1, 2×4 tiles, seed 2. */
export const FP8_EXAMPLE_PROBLEM: AttentionProblem = {
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 2,
  nk: 8,
  d: 4,
  dv: 4,
  scale: 1,
  causal: false,
  dtype: 'fp8e4m3',
};
export const FP8_EXAMPLE_SEED = 2;
export const FP8_EXAMPLE_OPTIONS = { blockM: 2, blockN: 4, features: { reverseKv: false, pScale: 1, incoherent: false } };

/** SageAttention v2 on the same kind of sink problem, fp16 inputs, softmax scale 2 (so the second block's P falls under e4m3's range even after the 2^8.807 scaling). */
export const SAGE_EXAMPLE_PROBLEM: AttentionProblem = { ...FP8_EXAMPLE_PROBLEM, scale: 2, dtype: 'fp16' };
export const SAGE_EXAMPLE_OPTIONS = { blockM: 2, blockN: 4, features: { version: 2 } };

function sageExamples(): Record<string, string> {
  const evs: TraceEvent[] = [];
  const x = randomInputs(SAGE_EXAMPLE_PROBLEM, { seed: FP8_EXAMPLE_SEED, distribution: 'sink' });
  runToEnd(sage, SAGE_EXAMPLE_PROBLEM, x, { ...SAGE_EXAMPLE_OPTIONS, trace: true, onEvent: (e) => evs.push(e) });
  const pick = (what: string, pred: (e: TraceEvent) => boolean) => {
    const e = evs.find(pred);
    if (!e) throw new Error(`sage example problem produced no ${what} event`);
    return toJsonLine(e);
  };
  return {
    'sage.loadQ': pick('loadQ', (e) => e.line === 'sage.loadQ'),
    'sage.qk': pick('qk', (e) => e.kind === 'qk'),
    'sage.exp': pick('exp with flushed P', (e) => e.kind === 'exp' && (e.flushed?.length ?? 0) > 0),
    'sage.pv': pick('pv', (e) => e.kind === 'pv'),
  };
}

export function lowPrecisionTraceExamples(): Record<string, string> {
  const evs: TraceEvent[] = [];
  const x = randomInputs(FP8_EXAMPLE_PROBLEM, { seed: FP8_EXAMPLE_SEED, distribution: 'sink' });
  runToEnd(fa3, FP8_EXAMPLE_PROBLEM, x, { ...FP8_EXAMPLE_OPTIONS, trace: true, onEvent: (e) => evs.push(e) });
  const pick = (what: string, pred: (e: TraceEvent) => boolean) => {
    const e = evs.find(pred);
    if (!e) throw new Error(`FP8 example problem produced no ${what} event`);
    return toJsonLine(e);
  };
  return {
    'fa3-fp8.load': pick('loadK', (e) => e.line === 'fa3.loadK'),
    'fa3-fp8.qk': pick('qk', (e) => e.kind === 'qk'),
    'fa3-fp8.exp': pick('exp with flushed P', (e) => e.kind === 'exp' && (e.flushed?.length ?? 0) > 0),
    'fa3-fp8.pv': pick('pv', (e) => e.kind === 'pv'),
    ...sageExamples(),
  };
}
