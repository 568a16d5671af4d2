// What the serving-layouts page of the browser runs (in its worker): a generated or loaded
// varlen / paged problem, stepped once with tracing on, reduced to what the views draw —
// per step the tile, its packed rows/columns or physical pages, the split — plus the
// layout itself, the counters, the dense padded batch's counters for comparison, and the
// error against the per-sequence float64 reference. Pure TS; tested in Node.

import { algorithmById, descriptorOf } from '../algorithms/registry.ts';
import type { Counters } from '../core/counters.ts';
import { totalBytes } from '../core/counters.ts';
import { randomInputs } from '../core/inputs.ts';
import { mulberry32, normalSource } from '../core/random.ts';
import { ProblemError, type AttentionProblem, type DType } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import type { Range, TraceEvent } from '../trace/events.ts';
import { pagedOutput, pagesOf, referencePaged, runPaged, type PagedInputs, type PagedProblem } from './paged.ts';
import type { LayoutBase, LayoutRunResult } from './sequence-runner.ts';
import { pagedKernelShape, servingHardware, varlenKernelShape, type ServingHardware } from './serving-hardware.ts';
import { packedResult, referenceVarlen, runVarlen, type VarlenInputs, type VarlenProblem } from './varlen.ts';

export { DEFAULT_SERVING_FORM, SERVING_LIMITS, type ServingForm, type ServingLayout } from './serving-form.ts';
import { SERVING_LIMITS, type ServingForm, type ServingLayout } from './serving-form.ts';

export type ServingProblem =
  | { layout: 'varlen'; vp: VarlenProblem; x: VarlenInputs }
  | { layout: 'paged'; pp: PagedProblem; x: PagedInputs };

/** One step as the views need it. */
export interface ServingStep {
  step: number;
  kind: TraceEvent['kind'];
  b: number;
  h: number;
  line: string;
  qBlock: number;
  kvBlock: number;
  rows: Range;
  cols: Range;
  packed?: { rows: Range; cols: Range };
  pages?: number[];
  split?: number;
  /** Bytes read / written by the step, all tensors. */
  read: number;
  written: number;
  tensors?: string[];
}

export interface ServingRun {
  layout: ServingLayout;
  algorithm: string;
  algorithmName: string;
  hq: number;
  hk: number;
  d: number;
  dv: number;
  causal: boolean;
  /** Input precision (generated runs are fp32; files bring their own). */
  dtype: DType;
  blocks: { blockM: number; blockN: number };
  /** varlen */
  cuSeqlensQ?: number[];
  cuSeqlensK?: number[];
  /** paged */
  nq?: number;
  pageSize?: number;
  numPages?: number;
  maxPages?: number;
  blockTable?: number[];
  cacheSeqlens?: number[];
  pagesTouched?: number;
  /** flash-decoding: K/V blocks per split (the same ranges for every sequence). */
  blocksPerSplit?: number;
  steps: ServingStep[];
  counters: Counters;
  /** varlen: the same algorithm on the batch padded to the longest sequence (dense, counters only). */
  padded?: { counters: Counters; nq: number; nk: number };
  /** Max |O − O_ref| against the per-sequence float64 reference. */
  maxError: number;
  /** The configuration upstream's FA3 and FA4 pick for this problem and their simulated figures. */
  hardware: ServingHardware;
  /** Packed Q [total_q, Hq, d] and K [total_k, Hk, d] (varlen), or q [B, Hq, Nq, d] (paged): the heatmaps' values. */
  q: Float32Array;
  k: Float32Array;
}

function checkForm(f: ServingForm): void {
  const L = SERVING_LIMITS;
  const intIn = (field: string, v: number, lo: number, hi: number) => {
    if (!Number.isInteger(v) || v < lo || v > hi) throw new ProblemError(field, `must be an integer in [${lo}, ${hi}], got ${v}`);
  };
  const lens = (field: string, a: number[]) => {
    if (a.length < 1 || a.length > L.sequences)
      throw new ProblemError(field, `needs 1 to ${L.sequences} sequence lengths, got ${a.length}`);
    a.forEach((v, i) => intIn(`${field}[${i}]`, v, 0, L.seqlen));
  };
  if (f.layout === 'varlen') {
    lens('seqlensQ', f.seqlensQ);
    lens('seqlensK', f.seqlensK);
    if (f.seqlensQ.length !== f.seqlensK.length)
      throw new ProblemError('seqlensK', `needs one key length per sequence (${f.seqlensQ.length}), got ${f.seqlensK.length}`);
  } else {
    lens('seqlensK', f.seqlensK);
    intIn('nq', f.nq, 1, L.nq);
    intIn('pageSize', f.pageSize, 1, L.pageSize);
  }
  intIn('hq', f.hq, 1, L.heads);
  intIn('hk', f.hk, 1, L.heads);
  intIn('d', f.d, 1, L.d);
  intIn('seed', f.seed, 0, 2 ** 31 - 1);
  intIn('splits', f.splits, 0, 64);
  if (f.hq % f.hk !== 0) throw new ProblemError('hk', `query heads (${f.hq}) must be a multiple of key/value heads (${f.hk})`);
  algorithmById(f.algorithm);
}

const baseOf = (f: ServingForm): LayoutBase => ({ hq: f.hq, hk: f.hk, d: f.d, dv: f.d, causal: f.causal, dtype: 'fp32' });

/**
 * Random inputs for the form. Paged: the sequences' pages are scattered over a shuffled
 * pool with two spare pages, and every slot no sequence owns holds NaN, so a read of one
 * would show up in the output.
 */
export function generateServing(f: ServingForm): ServingProblem {
  checkForm(f);
  const base = baseOf(f);
  const rnd = mulberry32(f.seed);
  const gauss = normalSource(rnd);
  const normal = (n: number) => Float32Array.from({ length: n }, gauss);
  if (f.layout === 'varlen') {
    const cq = [0];
    const ck = [0];
    f.seqlensQ.forEach((n, b) => {
      cq.push(cq[b] + n);
      ck.push(ck[b] + f.seqlensK[b]);
    });
    const tq = cq[cq.length - 1];
    const tk = ck[ck.length - 1];
    return {
      layout: 'varlen',
      vp: { base, cuSeqlensQ: cq, cuSeqlensK: ck },
      x: { q: normal(tq * f.hq * f.d), k: normal(tk * f.hk * f.d), v: normal(tk * f.hk * f.d) },
    };
  }
  const B = f.seqlensK.length;
  const need = f.seqlensK.map((L) => Math.ceil(L / f.pageSize));
  const maxPages = Math.max(1, ...need);
  const numPages = need.reduce((a, b) => a + b, 0) + 2;
  const order = Array.from({ length: numPages }, (_, i) => i);
  for (let i = numPages - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const blockTable = new Array<number>(B * maxPages).fill(0);
  let next = 0;
  need.forEach((n, b) => {
    for (let j = 0; j < n; j++) blockTable[b * maxPages + j] = order[next++];
  });
  const slots = numPages * f.pageSize * f.hk * f.d;
  const kCache = new Float32Array(slots).fill(NaN);
  const vCache = new Float32Array(slots).fill(NaN);
  const pp: PagedProblem = {
    base,
    batch: B,
    nq: f.nq,
    numPages,
    pageSize: f.pageSize,
    maxPages,
    blockTable,
    cacheSeqlens: [...f.seqlensK],
  };
  f.seqlensK.forEach((L, b) => {
    if (L === 0) return;
    const kv = normal(L * f.hk * f.d * 2);
    for (let j = 0; j < L; j++) {
      const slot = blockTable[b * maxPages + Math.floor(j / f.pageSize)] * f.pageSize + (j % f.pageSize);
      const row = kv.subarray(j * f.hk * f.d * 2, (j + 1) * f.hk * f.d * 2);
      kCache.set(row.subarray(0, f.hk * f.d), slot * f.hk * f.d);
      vCache.set(row.subarray(f.hk * f.d), slot * f.hk * f.d);
    }
  });
  return { layout: 'paged', pp, x: { q: normal(B * f.hq * f.nq * f.d), kCache, vCache } };
}

function toStep(e: TraceEvent): ServingStep {
  const s: ServingStep = {
    step: e.step,
    kind: e.kind,
    b: e.b,
    h: e.h,
    line: e.line,
    qBlock: e.tile.qBlock,
    kvBlock: e.tile.kvBlock,
    rows: e.tile.rows,
    cols: e.tile.cols,
    read: totalBytes(e.delta.hbmRead ?? {}),
    written: totalBytes(e.delta.hbmWritten ?? {}),
  };
  if (e.packed) s.packed = e.packed;
  if (e.pages) s.pages = e.pages;
  if (e.split !== undefined) s.split = e.split;
  if (e.kind === 'load' || e.kind === 'write') s.tensors = e.tensors;
  return s;
}

function drain(gen: Generator<TraceEvent, LayoutRunResult, void>, steps: ServingStep[], maxSteps: number): LayoutRunResult {
  for (;;) {
    const n = gen.next();
    if (n.done) return n.value;
    if (steps.length >= maxSteps) {
      throw new ProblemError(
        'seqlens',
        `this run takes more than ${maxSteps} steps to trace; make the sequences shorter, or use fewer heads or larger tiles`,
      );
    }
    steps.push(toStep(n.value));
  }
}

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

export const SERVING_MAX_STEPS = 400_000;

/** Steps `algorithm` over the problem; throws ProblemError naming the field or tensor on bad input. */
export function runServing(
  sp: ServingProblem,
  algorithm: string,
  opts: { splits?: number; blockM?: number; blockN?: number } = {},
): ServingRun {
  const algo = algorithmById(algorithm);
  const serving = descriptorOf(algo.id).serving;
  const features = serving.splits && opts.splits ? { splits: opts.splits } : undefined;
  const runOpts = { trace: true, features, blockM: opts.blockM, blockN: opts.blockN };
  const steps: ServingStep[] = [];
  // The split count the person gave reaches the kernels too (0 = upstream's heuristic); otherwise each kernel's default.
  const numSplits = serving.splits ? (opts.splits ?? 0) : undefined;
  const head = (b: LayoutBase) => ({ hq: b.hq, hk: b.hk, d: b.d, dv: b.dv, causal: b.causal, dtype: b.dtype });
  if (sp.layout === 'varlen') {
    const { vp, x } = sp;
    const r = drain(runVarlen(algo, vp, x, runOpts), steps, SERVING_MAX_STEPS);
    const out = packedResult(vp, r);
    const ref = referenceVarlen(vp, x);
    const lq = vp.cuSeqlensQ.slice(1).map((c, b) => c - vp.cuSeqlensQ[b]);
    const lk = vp.cuSeqlensK.slice(1).map((c, b) => c - vp.cuSeqlensK[b]);
    const nq = Math.max(1, ...lq);
    const nk = Math.max(1, ...lk);
    const pp: AttentionProblem = { ...vp.base, batch: lq.length, nq, nk };
    const padded = runToEnd(algo, pp, randomInputs(pp, { seed: 0 }), { blockM: r.blocks?.blockM, blockN: r.blocks?.blockN, features });
    const fd = steps.find((s) => s.split !== undefined);
    return {
      layout: 'varlen',
      algorithm: algo.id,
      algorithmName: algo.name,
      ...head(vp.base),
      blocks: r.blocks ?? { blockM: 1, blockN: 1 },
      cuSeqlensQ: [...vp.cuSeqlensQ],
      cuSeqlensK: [...vp.cuSeqlensK],
      blocksPerSplit: fd ? r.stats.blocksPerSplit / Math.max(1, lq.filter((n, b) => n > 0 && lk[b] > 0).length) : undefined,
      steps,
      counters: r.counters,
      padded: { counters: padded.counters, nq, nk },
      maxError: maxAbs(out.o, ref.o),
      hardware: servingHardware(varlenKernelShape(vp, numSplits), vp.base.dtype),
      q: x.q,
      k: x.k,
    };
  }
  const { pp, x } = sp;
  const run = runPaged(algo, pp, x, runOpts);
  const r = drain(run.gen, steps, SERVING_MAX_STEPS);
  const out = pagedOutput(pp, r);
  const ref = referencePaged(pp, x);
  const ran = pp.cacheSeqlens.filter((L) => L > 0).length;
  return {
    layout: 'paged',
    algorithm: algo.id,
    algorithmName: algo.name,
    ...head(pp.base),
    blocks: { blockM: r.blocks?.blockM ?? 1, blockN: run.blockN },
    nq: pp.nq,
    pageSize: pp.pageSize,
    numPages: pp.numPages,
    maxPages: pp.maxPages,
    blockTable: [...pp.blockTable],
    cacheSeqlens: [...pp.cacheSeqlens],
    pagesTouched: run.touched.size,
    blocksPerSplit: serving.splits && ran > 0 ? r.stats.blocksPerSplit / ran : undefined,
    steps,
    counters: r.counters,
    maxError: maxAbs(out.o, ref.o),
    hardware: servingHardware(pagedKernelShape(pp, numSplits), pp.base.dtype),
    q: x.q,
    k: x.kCache,
  };
}

/** Pages a paged sequence owns (for the block-table view). */
export const ownedPages = (r: ServingRun, b: number): number => Math.ceil((r.cacheSeqlens?.[b] ?? 0) / (r.pageSize ?? 1));
export { pagesOf };
