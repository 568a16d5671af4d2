// One debugger session: a problem, its inputs, the recorded trace and a cursor into it.
// Pure TS (no DOM): the worker wraps it with Comlink, the benchmark and unit tests drive it
// directly in Node.
//
// Time travel. Generators cannot be cloned or rewound, so the session records the whole
// trace once (the run is deterministic: same request, same events) and keeps the derived
// view state (HeadState) as checkpoints every `interval` steps. Seeking restores the
// nearest checkpoint at or before the target and applies at most `interval` events; the
// algorithm is never re-run. Problems whose trace would not fit the memory budget are
// refused up front with a suggestion (counters-only run or the WebGPU backend).

import { algorithmById } from '../algorithms/registry.ts';
import type { AlgorithmResult } from '../algorithms/types.ts';
import { blockCount, type Tile } from '../algorithms/blocks.ts';
import { addDelta, emptyCounters } from '../core/counters.ts';
import { checkInputs, kvHead, randomInputs, type AttentionInputs } from '../core/inputs.ts';
import { validateProblem, type AttentionProblem } from '../core/problem.ts';
import { checkSize, RUN_BUDGET_BYTES, SizeError, type SizeDim } from '../core/size-model.ts';
import type { TraceEvent } from '../trace/events.ts';
import { toJsonLine } from '../trace/jsonl.ts';
import { BlobSource } from '../io/byte-source.ts';
import { importRun, listTensors } from '../import/tensor-import.ts';
import { runComparison, runHwViewRequest, timesFor, type RunGradients } from '../compare/session-compare.ts';
import type { HwViewRequest } from '../hw/sm-view.ts';
import type { BackwardResult } from '../backward/types.ts';
import { pointOf, stepFor, type SyncAxis, type SyncPoint } from '../compare/sync.ts';
import { describeBreakpoint, matchBreakpoint } from './breakpoints.ts';
import { cloneCounters, HeadState } from './head-state.ts';
import { passBlocks, startPass, type PassRun } from '../request.ts';
import { storedForwardP, summarizeBackward } from './backward-summary.ts';
import {
  precisionFor,
  precisionMarks,
  precisionRefusal,
  referenceOutput,
  type PrecisionMarks,
  type PrecisionResponse,
} from './precision.ts';
import type {
  Breakpoint,
  BreakpointHit,
  CompareData,
  CountersRun,
  FrameUpdate,
  Granularity,
  HeadInputs,
  LoadSummary,
  Progress,
  RowHistory,
  RowHistoryEntry,
} from './protocol.ts';
import type { LoadRequest } from '../request.ts';

/** Trace payload and per-head inputs the session agrees to hold (bytes, estimated before running). */
export const TRACE_BUDGET_BYTES = 200 * 1024 * 1024;
export { RUN_BUDGET_BYTES } from '../core/size-model.ts';
/** Memory spent on checkpoints; the interval follows from it. */
export const CHECKPOINT_BUDGET_BYTES = 48 * 1024 * 1024;
/** A busy loop yields to the event loop this often, so cancel() and other calls get through. */
const SLICE_MS = 25;

export class TooLargeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TooLargeError';
  }
}

export class CancelledError extends Error {
  constructor() {
    super('cancelled');
    this.name = 'CancelledError';
  }
}

const yieldToLoop = () => new Promise<void>((r) => setTimeout(r, 0));

function eventNumbers(ev: TraceEvent): number {
  let n = 0;
  for (const v of Object.values(ev)) if (Array.isArray(v)) n += v.length;
  return n;
}

function updateRange(r: [number, number], values: ArrayLike<number>): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    if (v < r[0]) r[0] = v;
    if (v > r[1]) r[1] = v;
  }
}

function finishRange(r: [number, number]): [number, number] {
  if (r[0] > r[1]) return [0, 1];
  if (r[0] === r[1]) return [r[0] - 1, r[1] + 1];
  return r;
}

/** Run-length groups of consecutive events sharing a key: group id per step and each group's first step. */
function groupRuns(events: TraceEvent[], key: (e: TraceEvent) => string): { of: Int32Array; starts: number[] } {
  const of = new Int32Array(events.length);
  const starts: number[] = [];
  let last = '';
  for (let i = 0; i < events.length; i++) {
    const k = key(events[i]);
    if (i === 0 || k !== last) starts.push(i);
    of[i] = starts.length - 1;
    last = k;
  }
  return { of, starts };
}

/** Panel labels of the dimensions, for the size model's advice. */
const PANEL_NAMES: Partial<Record<SizeDim, string>> = {
  batch: 'B',
  hq: 'Hq',
  hk: 'Hk',
  nq: 'Nq',
  nk: 'Nk',
  d: 'd',
  dv: 'dv',
  blockM: 'Br',
  blockN: 'Bc',
};

/** Refuses, with what to do instead, a problem whose trace would not fit the stepping budget. */
function checkTraceSize(problem: AttentionProblem, blocks: Tile, req: LoadRequest): void {
  try {
    checkSize(
      { ...problem, ...blocks, pass: req.pass === 'backward' ? 'backward' : 'forward' },
      { measure: (s) => s.steppingBytes, budget: TRACE_BUDGET_BYTES, what: 'its trace', names: PANEL_NAMES },
    );
  } catch (e) {
    if (!(e instanceof SizeError)) throw e;
    throw new TooLargeError(
      `This problem is too large to step through: ${e.message}. Or run it counters-only (totals of HBM traffic, ` +
        `FLOPs and rescales without the step-by-step trace), or use the WebGPU backend for full-size inputs.`,
    );
  }
}

/** Refuses a counters-only run whose inputs alone would not fit the worker's memory. */
function checkRunSize(problem: AttentionProblem, blocks: Tile): void {
  try {
    checkSize({ ...problem, ...blocks }, { measure: (s) => s.runBytes, budget: RUN_BUDGET_BYTES, what: 'this run', names: PANEL_NAMES });
  } catch (e) {
    if (!(e instanceof SizeError)) throw e;
    throw new TooLargeError(`This problem is too large to run here: ${e.message}. The WebGPU backend runs full-size inputs.`);
  }
}

/**
 * The run's problem and inputs: random from the seed, or read from the person's files
 * (the chosen batch and head only), which fixes the shapes and dtype.
 */
export async function inputsFor(
  req: LoadRequest,
  admit?: (problem: AttentionProblem) => void,
): Promise<{ problem: AttentionProblem; inputs: AttentionInputs }> {
  const base = validateProblem(structuredClone(req.problem));
  if (!req.tensors) {
    if (!Number.isInteger(req.seed) || req.seed < 0) throw new Error(`seed: must be a non-negative integer, got ${req.seed}`);
    return { problem: base, inputs: randomInputs(base, { seed: req.seed, distribution: req.distribution, outlierRow: req.outlierRow }) };
  }
  const t = req.tensors;
  const sources = t.files.map((f, i) => new BlobSource(f, t.names[i]));
  const listings = await Promise.all(sources.map(listTensors));
  const run = await importRun(sources, listings, t, base, admit && ((p) => admit(validateProblem(p))));
  return { problem: validateProblem(run.problem), inputs: run.inputs };
}

interface Loaded {
  req: LoadRequest;
  /** Final output of the run [batch, hq, nq, dv] (a backward run: its dQ). */
  output: Float32Array;
  /** A backward run's gradients, for compare mode's error against float64. */
  grads?: RunGradients;
  /** Simulated step times per GPU (compare mode's 'time' axis), computed on first use. */
  times: Map<string, Float64Array | null>;
  problem: AttentionProblem;
  inputs: AttentionInputs;
  events: TraceEvent[];
  interval: number;
  checkpoints: HeadState[];
  inner: { of: Int32Array; starts: number[] };
  outer: { of: Int32Array; starts: number[] };
  /** Steps of rowmax/rowsum/rescale events per "b,h,qBlock". */
  stats: Map<string, number[]>;
  summary: LoadSummary;
  /** A backward run: its dO [batch, hq, nq, dv] and the P a standard forward stores [batch, hq, nq, nk]. */
  backward?: { dO: Float32Array; pForward: Float32Array };
  /** The algorithm's precision totals (AlgorithmResult.stats), when it reports them. */
  precisionStats?: Record<string, number>;
  /** The float64 reference output, computed on the Precision view's first request. */
  o64?: Float64Array;
}

export class DebuggerSession {
  private loaded: Loaded | undefined;
  private cur: HeadState | undefined;
  private pos = 0;
  private breakpoints: Breakpoint[] = [];
  private cancelRequested = false;
  /** Calls run one after another; cancel() alone bypasses the queue. */
  private queue: Promise<unknown> = Promise.resolve();

  private serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  cancel(): void {
    this.cancelRequested = true;
  }

  get position(): number {
    return this.pos;
  }

  get summary(): LoadSummary | undefined {
    return this.loaded?.summary;
  }

  load(req: LoadRequest, onProgress?: Progress): Promise<LoadSummary> {
    return this.serial(() => this.doLoad(req, onProgress));
  }

  private async doLoad(req: LoadRequest, onProgress?: Progress): Promise<LoadSummary> {
    const t0 = performance.now();
    this.cancelRequested = false;
    const algo = algorithmById(req.algorithm);
    // The tile is resolved once, from the problem the run will have: random inputs of a huge
    // problem are refused before they are generated, imported tensors from their headers' shapes.
    let blocks: Tile | undefined;
    const admit = (p: AttentionProblem) => {
      blocks = passBlocks(req, p);
      checkTraceSize(p, blocks, req);
    };
    if (!req.tensors) admit(validateProblem(structuredClone(req.problem)));
    const { problem, inputs } = await inputsFor(req, admit);
    blocks ??= passBlocks(req, problem);
    checkInputs(problem, inputs);

    const events: TraceEvent[] = [];
    const run: PassRun = startPass(req, problem, inputs, { ...req.blocks, ...blocks, features: req.features, trace: true });
    const gen = run.gen;
    const estSteps = Math.max(
      1,
      problem.batch * problem.hq * blockCount(problem.nq, blocks.blockM) * blockCount(problem.nk, blocks.blockN) * (run.dO ? 12 : 7),
    );
    let sliceStart = performance.now();
    let result: AlgorithmResult;
    for (;;) {
      const r = gen.next();
      if (r.done) {
        result = r.value;
        break;
      }
      events.push(r.value);
      if ((events.length & 63) === 0 && performance.now() - sliceStart > SLICE_MS) {
        onProgress?.(Math.min(0.95, events.length / estSteps) * 0.8, `recording trace: ${events.length} steps`);
        await yieldToLoop();
        if (this.cancelRequested) throw new CancelledError();
        sliceStart = performance.now();
      }
    }
    if (events.length === 0) throw new Error('the algorithm produced no steps for this problem');

    // Second pass: view-state checkpoints, value ranges and navigation indexes.
    const probe = new HeadState(problem.nq, problem.nk, problem.dv, run.dO ? problem.d : undefined);
    const interval = Math.max(8, Math.ceil(events.length / Math.max(1, Math.floor(CHECKPOINT_BUDGET_BYTES / probe.bytes))));
    const checkpoints: HeadState[] = [];
    const ranges = {
      s: [Infinity, -Infinity] as [number, number],
      p: [Infinity, -Infinity] as [number, number],
      o: [Infinity, -Infinity] as [number, number],
      q: [Infinity, -Infinity] as [number, number],
      k: [Infinity, -Infinity] as [number, number],
      v: [Infinity, -Infinity] as [number, number],
    };
    // The final output's range, when the algorithm normalizes at the end (FA2 and later): an
    // unnormalized accumulator can be many times larger, and a scale spanning it would leave
    // the finished O almost colourless. Accumulator values beyond it saturate instead.
    const oFinal: [number, number] = [Infinity, -Infinity];
    // Likewise P where the run normalizes it (standard attention's softmax pass): exp(S − m)
    // reaches 1 in every row, the normalized P only about 1/Nk, so a scale spanning the
    // former would leave the finished P dark. The unnormalized values saturate instead.
    const pFinal: [number, number] = [Infinity, -Infinity];
    const stats = new Map<string, number[]>();
    const lowPrecision = { quantized: false, cast: false, flushed: 0 };
    let base2 = false;
    let numbers = 0;
    sliceStart = performance.now();
    for (let i = 0; i < events.length; i++) {
      const ev = events[i];
      probe.apply(ev);
      if (i % interval === 0) checkpoints.push(probe.clone());
      numbers += eventNumbers(ev);
      // Low-precision fields (FA3's FP8 path, SageAttention's INT8): the views that mark them look here.
      if ((ev.kind === 'load' && ev.quant) || (ev.kind === 'qk' && ev.qScale !== undefined)) lowPrecision.quantized = true;
      if (ev.kind === 'exp' && ev.flushed) {
        lowPrecision.cast = true;
        lowPrecision.flushed += ev.flushed.length;
      }
      if (ev.kind === 'qk') {
        updateRange(ranges.s, ev.s);
        if (ev.base2) base2 = true;
      } else if (ev.kind === 'exp' || ev.kind === 'recompute') updateRange(ranges.p, ev.p);
      else if (ev.kind === 'pv' || ev.kind === 'normalize' || ev.kind === 'combine') {
        updateRange(ranges.o, ev.o);
        if (ev.kind !== 'pv') updateRange(oFinal, ev.o);
        if (ev.kind === 'normalize' && ev.p) updateRange(pFinal, ev.p);
      }
      if (ev.kind === 'rowmax' || ev.kind === 'rowsum' || ev.kind === 'rescale' || ev.kind === 'combine') {
        const key = `${ev.b},${ev.h},${ev.tile.qBlock}`;
        let list = stats.get(key);
        if (!list) stats.set(key, (list = []));
        list.push(i);
      }
      if ((i & 255) === 0 && performance.now() - sliceStart > SLICE_MS) {
        onProgress?.(0.8 + (0.2 * i) / events.length, 'building checkpoints');
        await yieldToLoop();
        if (this.cancelRequested) throw new CancelledError();
        sliceStart = performance.now();
      }
    }
    updateRange(ranges.q, inputs.q);
    updateRange(ranges.k, inputs.k);
    updateRange(ranges.v, inputs.v);
    if (oFinal[0] <= oFinal[1]) ranges.o = oFinal;
    if (pFinal[0] <= pFinal[1]) ranges.p = pFinal;
    for (const k of Object.keys(ranges) as (keyof typeof ranges)[]) ranges[k] = finishRange(ranges[k]);
    // P is a probability: anchor its scale at 0 so "small" reads as small.
    ranges.p = [0, Math.max(ranges.p[1], 1e-30)];
    let backward: Loaded['backward'];
    let grads: RunGradients | undefined;
    if (run.dO) {
      const r = result as BackwardResult;
      grads = { dO: run.dO, dq: r.dq, dk: r.dk, dv: r.dv };
      onProgress?.(0.97, 'computing the P a standard forward stores');
      await yieldToLoop();
      backward = { dO: run.dO, pForward: storedForwardP(problem, inputs) };
    }

    const summary: LoadSummary = {
      algorithm: algo.id,
      algorithmName: algo.name,
      pass: backward ? 'backward' : 'forward',
      ...(backward ? { backward: summarizeBackward(problem, events, backward.dO, backward.pForward) } : {}),
      ...(lowPrecision.quantized || lowPrecision.cast ? { lowPrecision } : {}),
      ...(base2 ? { base2 } : {}),
      ...(result.schedule ? { schedule: result.schedule } : {}),
      total: events.length,
      blocks: result.blocks,
      tiles: { rows: blockCount(problem.nq, result.blocks.blockM), cols: blockCount(problem.nk, result.blocks.blockN) },
      ranges,
      memoryBytes:
        numbers * 8 +
        events.length * 160 +
        checkpoints.length * probe.bytes +
        (backward ? backward.dO.byteLength + backward.pForward.byteLength : 0),
      checkpointInterval: interval,
      loadMs: performance.now() - t0,
    };
    this.loaded = {
      req: { ...structuredClone({ ...req, tensors: undefined }), tensors: req.tensors },
      output: grads ? grads.dq : result.o,
      grads,
      times: new Map(),
      problem,
      inputs,
      events,
      interval,
      checkpoints,
      inner: groupRuns(events, (e) => `${e.b},${e.h},${e.outer},${e.inner}`),
      outer: groupRuns(events, (e) => `${e.b},${e.h},${e.outer}`),
      stats,
      summary,
      backward,
      ...(!run.dO && 'stats' in result && result.stats ? { precisionStats: result.stats } : {}),
    };
    this.cur = checkpoints[0].clone();
    this.pos = 0;
    onProgress?.(1, 'ready');
    return summary;
  }

  private need(): Loaded {
    if (!this.loaded || !this.cur) throw new Error('no problem is loaded');
    return this.loaded;
  }

  /** Moves the cursor to `k` (clamped) without building a frame. */
  private moveTo(k: number): void {
    const L = this.need();
    const cur = this.cur!;
    const target = Math.max(0, Math.min(L.events.length - 1, Math.floor(k)));
    if (target === this.pos) return;
    const cpIndex = Math.floor(target / L.interval);
    const cpStep = cpIndex * L.interval;
    // Replay from the cursor when that is shorter than replaying from the checkpoint.
    if (target > this.pos && this.pos >= cpStep) {
      for (let i = this.pos + 1; i <= target; i++) cur.apply(L.events[i]);
      this.pos = target;
      return;
    }
    const from = this.pos;
    const pending = cur.saveChanges();
    cur.copyFrom(L.checkpoints[cpIndex]);
    for (let i = cpStep + 1; i <= target; i++) cur.apply(L.events[i]);
    this.pos = target;
    // Going back within one head, the receiver only needs the cells the undone steps wrote.
    if (target < from && pending[0] === 0) {
      const ev = L.events[target];
      let sameHead = true;
      for (let i = target + 1; i <= from && sameHead; i++) sameHead = L.events[i].b === ev.b && L.events[i].h === ev.h;
      if (sameHead) {
        cur.restoreChanges(pending);
        for (let i = target + 1; i <= from; i++) cur.markChanged(L.events[i]);
      }
    }
  }

  private history(L: Loaded, ev: TraceEvent): RowHistory {
    const list = L.stats.get(`${ev.b},${ev.h},${ev.tile.qBlock}`) ?? [];
    const entries: RowHistoryEntry[] = [];
    let merged: RowHistory['merged'];
    for (const i of list) {
      if (i > this.pos) break;
      const e = L.events[i];
      if (e.kind === 'combine') {
        merged = { splitLse: e.splitLse, lse: e.lse };
        continue;
      }
      if (ev.split !== undefined && e.split !== ev.split) continue;
      let entry = entries[entries.length - 1];
      if (!entry || entry.kvBlock !== e.tile.kvBlock) entries.push((entry = { kvBlock: e.tile.kvBlock }));
      if (e.kind === 'rowmax') {
        entry.tileMax = e.tileMax;
        entry.mBefore = e.mBefore;
        entry.mAfter = e.mAfter;
        if (e.base2) entry.base2 = true;
      } else if (e.kind === 'rowsum') entry.lAfter = e.lAfter;
      else if (e.kind === 'rescale') entry.factor = e.factor;
    }
    return {
      qBlock: ev.tile.qBlock,
      rows: ev.tile.rows,
      ...(ev.split === undefined ? {} : { split: ev.split }),
      entries,
      ...(merged ? { merged } : {}),
    };
  }

  /** The update to the cursor's frame since the previous one. Arrays are fresh copies, safe to transfer. */
  frame(hit?: BreakpointHit): FrameUpdate {
    const L = this.need();
    const c = this.cur!;
    const ev = L.events[this.pos];
    return {
      step: this.pos,
      total: L.events.length,
      event: ev,
      b: c.b,
      h: c.h,
      nq: c.nq,
      nk: c.nk,
      dv: c.dv,
      patch: c.takeChanges(),
      history: this.history(L, ev),
      counters: cloneCounters(c.counters),
      hit,
    };
  }

  seek(k: number, full = false): Promise<FrameUpdate> {
    return this.serial(() => {
      this.moveTo(k);
      if (full) this.cur!.markAllChanged();
      return this.frame();
    });
  }

  /** Where `delta` units of `g` from the cursor lands. */
  targetOf(delta: number, g: Granularity): number {
    const L = this.need();
    const last = L.events.length - 1;
    if (g === 'phase') return Math.max(0, Math.min(last, this.pos + delta));
    const grp = g === 'inner' ? L.inner : L.outer;
    const gi = grp.of[this.pos] + delta;
    if (gi >= grp.starts.length) return last;
    return grp.starts[Math.max(0, gi)];
  }

  step(delta: number, g: Granularity): Promise<FrameUpdate> {
    return this.serial(() => {
      const L = this.need();
      const target = this.targetOf(delta, g);
      // Forward moves stop at breakpoints on the way, as a debugger's "continue" would.
      if (target > this.pos) {
        for (let i = this.pos + 1; i <= target; i++) {
          const hit = this.hitAt(L, i);
          if (hit) {
            this.moveTo(i);
            return this.frame(hit);
          }
        }
      }
      this.moveTo(target);
      return this.frame();
    });
  }

  private hitAt(L: Loaded, i: number): BreakpointHit | undefined {
    for (const bp of this.breakpoints) {
      if (!bp.enabled) continue;
      const reason = matchBreakpoint(bp, L.events[i], L.events[i - 1]);
      if (reason) return { id: bp.id, reason: `${describeBreakpoint(bp)}: ${reason}` };
    }
    return undefined;
  }

  runToBreakpoint(onProgress?: Progress): Promise<FrameUpdate> {
    return this.serial(async () => {
      const L = this.need();
      this.cancelRequested = false;
      let sliceStart = performance.now();
      for (let i = this.pos + 1; i < L.events.length; i++) {
        const hit = this.hitAt(L, i);
        if (hit) {
          this.moveTo(i);
          return this.frame(hit);
        }
        if ((i & 1023) === 0 && performance.now() - sliceStart > SLICE_MS) {
          onProgress?.(i / L.events.length, `searching step ${i}`);
          await yieldToLoop();
          if (this.cancelRequested) {
            this.moveTo(i);
            return this.frame();
          }
          sliceStart = performance.now();
        }
      }
      this.moveTo(L.events.length - 1);
      return this.frame();
    });
  }

  setBreakpoints(bps: Breakpoint[]): Promise<void> {
    return this.serial(() => {
      this.breakpoints = structuredClone(bps);
    });
  }

  headInputs(b: number, h: number): Promise<HeadInputs> {
    return this.serial(() => {
      const { problem: p, inputs: x, backward } = this.need();
      if (!(b >= 0 && b < p.batch && h >= 0 && h < p.hq)) throw new Error(`no head (${b}, ${h}) in this problem`);
      const hk = kvHead(p, h);
      const qs = (b * p.hq + h) * p.nq * p.d;
      const ks = (b * p.hk + hk) * p.nk * p.d;
      const vs = (b * p.hk + hk) * p.nk * p.dv;
      const os = (b * p.hq + h) * p.nq * p.dv;
      const ps = (b * p.hq + h) * p.nq * p.nk;
      return {
        ...(backward ? { dO: backward.dO.slice(os, os + p.nq * p.dv), pForward: backward.pForward.slice(ps, ps + p.nq * p.nk) } : {}),
        b,
        h,
        q: x.q.slice(qs, qs + p.nq * p.d),
        k: x.k.slice(ks, ks + p.nk * p.d),
        v: x.v.slice(vs, vs + p.nk * p.dv),
        d: p.d,
        dv: p.dv,
        nq: p.nq,
        nk: p.nk,
      };
    });
  }

  /** A hardware view's request made to the loaded run: its problem and kernel switches (session-compare.ts). */
  hwViewRequest(view: HwViewRequest): HwViewRequest {
    const L = this.need();
    return runHwViewRequest(L.req, L.problem, view);
  }

  /** Every event as recorded (tests and the benchmark compare against this). */
  events(): readonly TraceEvent[] {
    return this.need().events;
  }

  compareData(gpu: string): Promise<CompareData> {
    return this.serial(() => {
      const L = this.need();
      return runComparison(L.req, L.problem, L.inputs, L.output, L.events, gpu, L.grads);
    });
  }

  private timesOn(L: Loaded, gpu: string): Float64Array | null {
    if (!L.times.has(gpu)) L.times.set(gpu, timesFor(L.req, L.problem, L.events, gpu).times);
    return L.times.get(gpu) ?? null;
  }

  syncPoint(gpu: string): Promise<SyncPoint> {
    return this.serial(() => {
      const L = this.need();
      return pointOf(L.events, this.pos, this.timesOn(L, gpu));
    });
  }

  seekSync(point: SyncPoint, axis: SyncAxis, gpu: string): Promise<{ frame: FrameUpdate; used: SyncAxis }> {
    return this.serial(() => {
      const L = this.need();
      const { step, used } = stepFor(L.events, point, axis, axis === 'time' ? this.timesOn(L, gpu) : null);
      this.moveTo(step);
      return { frame: this.frame(), used };
    });
  }

  /** Flushed P values and tile scales of head (b, h) (no reference): the P heatmap's marks. */
  precisionMarks(b: number, h: number): Promise<PrecisionMarks> {
    return this.serial(() => {
      const L = this.need();
      return precisionMarks(L.problem, L.events, b, h);
    });
  }

  /**
   * The Precision view's data for head (b, h): the run's output against float64 (computed on
   * the first request, then kept), and the head's S, P and O errors. A backward run, or a
   * problem whose reference is too big to compute here, gets a reason instead.
   */
  precision(b: number, h: number): Promise<PrecisionResponse> {
    return this.serial(() => {
      const L = this.need();
      if (L.backward)
        return { ok: false, reason: 'The Precision view measures a forward output against float64; this run steps the backward pass.' };
      const why = precisionRefusal(L.problem);
      if (why) return { ok: false, reason: why };
      L.o64 ??= referenceOutput(L.problem, L.inputs);
      return { ok: true, ...precisionFor(L.problem, L.inputs, L.output, L.events, b, h, L.o64, L.precisionStats) };
    });
  }

  traceJsonl(): Promise<string> {
    return this.serial(() => this.need().events.map(toJsonLine).join('\n') + '\n');
  }

  runCounters(req: LoadRequest, onProgress?: Progress): Promise<CountersRun> {
    return this.serial(async () => {
      const t0 = performance.now();
      this.cancelRequested = false;
      algorithmById(req.algorithm);
      let blocks: Tile | undefined;
      if (!req.tensors) {
        const p = validateProblem(structuredClone(req.problem));
        blocks = passBlocks(req, p);
        checkRunSize(p, blocks);
      }
      const { problem, inputs } = await inputsFor(req);
      blocks ??= passBlocks(req, problem);
      // Tracing stays on so the generator yields and the run can be sliced and cancelled;
      // the events are dropped at once.
      const gen = startPass(req, problem, inputs, { ...req.blocks, ...blocks, features: req.features, trace: true }).gen;
      const estSteps = Math.max(
        1,
        problem.batch * problem.hq * blockCount(problem.nq, blocks.blockM) * blockCount(problem.nk, blocks.blockN) * 7,
      );
      let n = 0;
      // Summed from the events' deltas so a cancelled run can still report what it counted.
      const partial = emptyCounters();
      let sliceStart = performance.now();
      for (;;) {
        const r = gen.next();
        if (r.done) return { counters: cloneCounters(r.value.counters), ms: performance.now() - t0, cancelled: false };
        n++;
        addDelta(partial, r.value.delta);
        partial.steps = n;
        if ((n & 255) === 0 && performance.now() - sliceStart > SLICE_MS) {
          onProgress?.(Math.min(0.99, n / estSteps), `≈ ${Math.round(Math.min(99, (100 * n) / estSteps))}%: ${n} steps`);
          await yieldToLoop();
          if (this.cancelRequested) return { counters: partial, ms: performance.now() - t0, cancelled: true };
          sliceStart = performance.now();
        }
      }
    });
  }
}
