// Runs a step algorithm over a serving layout one sequence at a time. A varlen or paged
// kernel launches its grid over (Q tile, sequence, head) and each CTA first looks up where
// its sequence lives (cu_seqlens, or the block table); from then on it runs the dense
// algorithm on that sequence's rows and keys, with tiles that start at the sequence's first
// row. So a serving layout is, per sequence, a batch-1 dense problem whose K/V rows come
// through an address map: the algorithms run unchanged, and the layout adds what only it
// knows through an EventAnnotator (the metadata bytes every CTA reads, the packed or paged
// position of every tile).
//
// Events keep the dense meaning of their fields with `b` = the sequence; `step` counts over
// the whole batch. A sequence with query rows but no keys runs no algorithm: its CTAs write
// O = 0 and LSE = −inf (one 'write' event per head, line `layout.emptyKeys`); a sequence
// with no query rows launches no work at all.

import { addDelta, emptyCounters, type Counters, type HbmTensor } from '../core/counters.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import { dtypeBytes, type AttentionProblem } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm } from '../algorithms/types.ts';
import type { TraceEvent } from '../trace/events.ts';
import type { EventAnnotator } from '../trace/tracer.ts';

/** One sequence of a serving-layout batch, ready to run as a dense batch-1 problem. */
export interface SequenceWork {
  /** Sequence index (the `b` of its events). */
  b: number;
  /** Query rows and keys of this sequence. */
  nq: number;
  nk: number;
  /** The dense problem (batch 1); undefined when nq = 0 or nk = 0 (nothing to run). */
  problem?: AttentionProblem;
  /** Gathers the sequence's Q, K, V into BHND (called only when `problem` is set). */
  inputs?: () => AttentionInputs;
  annotate: EventAnnotator;
  /** Feature overrides for this run (e.g. flash-decoding's page-aligned blocksPerSplit). */
  features?: Record<string, boolean | number>;
}

export interface SequenceOutput {
  /** [1, hq, nq, dv] and [1, hq, nq] of this sequence, as the algorithm returned them. */
  o: Float32Array;
  lse: Float32Array;
}

export interface LayoutRunResult {
  counters: Counters;
  /** Per sequence (index b): its output, undefined for a sequence with no query rows. */
  outputs: (SequenceOutput | undefined)[];
  blocks: { blockM: number; blockN: number } | undefined;
  /** The algorithm's stats summed over the sequences (splits etc. are per-sequence sums). */
  stats: Record<string, number>;
}

export type LayoutGenerator = Generator<TraceEvent, LayoutRunResult, void>;

/** Base problem fields shared by every sequence (everything but the shape). */
export type LayoutBase = Omit<AttentionProblem, 'batch' | 'nq' | 'nk'>;

/** The dense batch-1 problem of one sequence. */
export function sequenceProblem(base: LayoutBase, nq: number, nk: number): AttentionProblem {
  return { ...base, batch: 1, nq, nk };
}

/**
 * Drives `algo` over every sequence in order. With `opts.trace` the events of every
 * sequence are yielded, re-numbered; counters are summed either way and equal the sum of
 * the events' deltas.
 */
export function* runSequences(
  algo: StepAlgorithm,
  base: LayoutBase,
  work: readonly SequenceWork[],
  opts: Omit<RunOptions, 'annotate'>,
): LayoutGenerator {
  const counters = emptyCounters();
  const outputs: (SequenceOutput | undefined)[] = [];
  const stats: Record<string, number> = {};
  let blocks: LayoutRunResult['blocks'];
  const eb = dtypeBytes(base.dtype);
  for (const w of work) {
    if (w.nq === 0) {
      outputs[w.b] = undefined;
      continue;
    }
    if (!w.problem || !w.inputs) {
      // No keys: every row of every head is fully masked; the CTA writes zeros and −inf.
      const o = new Float32Array(base.hq * w.nq * base.dv);
      const lse = new Float32Array(base.hq * w.nq).fill(-Infinity);
      for (let h = 0; h < base.hq; h++) {
        const bytes: Partial<Record<HbmTensor, number>> = { O: w.nq * base.dv * eb, LSE: w.nq * 4 };
        const delta = { hbmWritten: bytes };
        addDelta(counters, delta);
        const step = counters.steps++;
        if (opts.trace) {
          yield {
            step,
            kind: 'write',
            b: w.b,
            h,
            outer: -1,
            inner: -1,
            tile: { qBlock: -1, kvBlock: -1, rows: [0, w.nq], cols: [0, 0] },
            line: 'layout.emptyKeys',
            delta,
            tensors: ['O', 'LSE'],
            ...w
              .annotate('write', {
                b: 0,
                h,
                outer: -1,
                inner: -1,
                tile: { qBlock: -1, kvBlock: -1, rows: [0, w.nq], cols: [0, 0] },
                line: 'layout.emptyKeys',
                delta,
              })
              ?.fields?.(),
          } as TraceEvent;
        }
      }
      outputs[w.b] = { o, lse };
      continue;
    }
    const features = { ...opts.features, ...w.features };
    const runOpts: RunOptions = { ...opts, features, annotate: w.annotate };
    let r: AlgorithmResult;
    if (opts.trace) {
      const gen = algo.run(w.problem, w.inputs(), runOpts);
      for (;;) {
        const n = gen.next();
        if (n.done) {
          r = n.value;
          break;
        }
        const ev = n.value;
        ev.step += counters.steps;
        ev.b = w.b;
        yield ev;
      }
    } else {
      r = runToEnd(algo, w.problem, w.inputs(), runOpts);
    }
    addCounters(counters, r.counters);
    for (const [k, v] of Object.entries(r.stats ?? {})) stats[k] = (stats[k] ?? 0) + v;
    blocks ??= r.blocks;
    outputs[w.b] = { o: r.o, lse: r.lse };
  }
  return { counters, outputs, blocks, stats };
}

function addCounters(into: Counters, c: Counters): void {
  addDelta(into, c);
  into.steps += c.steps;
}

/** Runs to the end with tracing off (CLI, tests). */
export function runLayoutToEnd(gen: LayoutGenerator): LayoutRunResult {
  for (;;) {
    const n = gen.next();
    if (n.done) return n.value;
  }
}
