// `run` on the serving layouts (engine/layouts/):
//   varlen: --q [total_q, Hq, d] --k [total_k, Hk, d] --v [total_k, Hk, dv]
//           --cu-seqlens-q [B+1] --cu-seqlens-k [B+1]
//           → DIR/<algo>/o.npy [total_q, Hq, dv], lse.npy [Hq, total_q]
//   paged:  --q [B, Nq, Hq, d] (--layout bnhd, the default here; bhnd: [B, Hq, Nq, d])
//           --k-cache [num_pages, page_size, Hk, d] --v-cache [num_pages, page_size, Hk, dv]
//           --block-table [B, max_pages] --cache-seqlens [B]
//           → DIR/<algo>/o.npy [B, Nq, Hq, dv] (bhnd: [B, Hq, Nq, dv]), lse.npy [B, Hq, Nq]
// plus stats.json. Offsets and tables may be int32 or int64 (or integer-valued floats).
// Every tensor is checked and every algorithm run before the first file is written.

import { join } from 'node:path';
import { algorithmById } from '../algorithms/registry.ts';
import type { BlockOptions } from '../algorithms/types.ts';
import { countersToStats } from '../core/counters.ts';
import { encodeNpy } from '../io/npy.ts';
import { pagedOutput, runPaged } from '../layouts/paged.ts';
import { runLayoutToEnd, type LayoutBase, type LayoutRunResult } from '../layouts/sequence-runner.ts';
import { packedResult, runVarlen, seqLengths } from '../layouts/varlen.ts';
import { ProblemError, validateProblem, type ProblemDims } from '../core/problem.ts';
import { checkCliSize } from './size-limits.ts';
import { pagedFromTensors, pagedShape, varlenFromTensors, varlenShape, type LayoutShape } from '../layouts/from-tensors.ts';
import { roundArray } from '../core/dtype.ts';
import { runVarlenBackward } from '../layouts/varlen-backward.ts';
import { backwardsFor } from './backward-cli.ts';
import { ArgsError, flag, list, num, parseArgs, str, type OptionSpec, type ParsedArgs } from './args.ts';
import { algoIds, fromBhnd, parseDtype, parseFeatures, parseLayout, parseWindow, PROBLEM_OPTIONS, runTiles } from './problem-options.ts';
import { loadTensorFile, loadVector } from './tensor-files.ts';
import { checkOutputs, StagedOutputs } from './output-files.ts';
import { allNanWarnings, OUTPUT_OPTIONS, outputPlan } from './run-outputs.ts';

export const LAYOUT_OPTIONS: OptionSpec = {
  'cu-seqlens-q': 'string',
  'cu-seqlens-k': 'string',
  'k-cache': 'string',
  'v-cache': 'string',
  'block-table': 'string',
  'cache-seqlens': 'string',
  do: 'string',
};

export const LAYOUT_RUN_HELP = `serving layouts (instead of dense q/k/v):
  varlen: --q [total_q, Hq, d] --k [total_k, Hk, d] --v [total_k, Hk, dv]
          --cu-seqlens-q CQ --cu-seqlens-k CK   int32 offsets of length B+1 (0 … total)
          writes o.npy [total_q, Hq, dv] and lse.npy [Hq, total_q]; masks are per sequence,
          aligned bottom-right in each
          --do DO [total_q, Hq, dv] also runs the backward (standard, fa1, fa2, fa3, fa4) per
          sequence and writes dq.npy [total_q, Hq, d], dk.npy [total_k, Hk, d],
          dv.npy [total_k, Hk, dv] (stats.json gains "backward")
  paged:  --q [B, Nq, Hq, d] --layout bnhd --k-cache KC --v-cache VC --block-table BT
          --cache-seqlens CS   caches [num_pages, page_size, Hk, d|dv], table [B, max_pages]
          int32 (entries past a sequence's pages unused), lengths [B]; writes
          o.npy [B, Nq, Hq, dv] and lse.npy [B, Hq, Nq]; --causal and --window align
          bottom-right (query i sees keys j <= i + cache_seqlens[b] - Nq); Nq = 1 is a
          decode step. --layout bhnd reads q as [B, Hq, Nq, d] and writes o as
          [B, Hq, Nq, dv] (lse keeps [B, Hq, Nq]). No backward (--do is refused): a
          paged cache is an inference layout
  both:   dv (v's last dim) may differ from d; o's last dim is dv. Rows with no key to
          see (an empty sequence, or masked out) get o = 0 and lse = -inf; a sequence
          with no query rows writes nothing. Slots of the pool no sequence owns are
          never read
  stats.json adds cu_seqlens / block_table / cache_seqlens bytes and, paged, pages_touched`;

/** True when the arguments name a serving layout. */
export function isLayoutRun(argv: readonly string[]): boolean {
  return argv.some((a) => /^--(cu-seqlens-[qk]|k-cache|v-cache|block-table|cache-seqlens)(=|$)/.test(a));
}

export async function baseFields(a: ParsedArgs, { hq, hk, d, dv, dtype: fileDtype }: LayoutShape): Promise<LayoutBase> {
  if (str(a, 'mask-mod') !== undefined || str(a, 'score-mod') !== undefined) {
    throw new ArgsError(
      '--mask-mod/--score-mod run on the dense problem (run without --layout); the serving layouts take --causal, --window, --attention-chunk, --softcap',
    );
  }
  const base: LayoutBase = { hq, hk, d, dv, causal: flag(a, 'causal'), dtype: parseDtype(str(a, 'dtype')) ?? fileDtype };
  const window = parseWindow(str(a, 'window'));
  if (window) base.window = window;
  if (num(a, 'softcap') !== undefined) base.softcap = num(a, 'softcap');
  if (num(a, 'attention-chunk') !== undefined) base.attentionChunk = num(a, 'attention-chunk');
  if (num(a, 'scale') !== undefined) base.scale = num(a, 'scale');
  if (flag(a, 'alibi') && str(a, 'alibi-slopes')) throw new ArgsError('give --alibi or --alibi-slopes, not both');
  if (flag(a, 'alibi')) base.alibi = 'standard';
  const slopes = str(a, 'alibi-slopes');
  if (slopes) base.alibi = await loadVector(slopes, hq, '--alibi-slopes');
  const sink = str(a, 'sink');
  if (sink) base.sinks = await loadVector(sink, hq, '--sink');
  if (hq % hk !== 0) throw new ProblemError('hk', `query heads (${hq}) must be a multiple of key/value heads (${hk})`);
  validateProblem({ ...base, batch: 1, nq: 1, nk: 1 });
  return base;
}

/** The size model on a serving batch: its longest sequences, every sequence that long (an upper bound), on each algorithm's tile. */
function checkLayoutSize(a: ParsedArgs, dims: ProblemDims, blocks: BlockOptions): void {
  const p = { ...dims, causal: false, dtype: 'fp32' as const };
  const backward = str(a, 'do') !== undefined;
  for (const tile of runTiles(a, p, blocks, backward))
    checkCliSize(p, tile, { command: 'run', maxBytes: num(a, 'max-bytes'), algos: 1, backward }, true);
}

function blockOptions(a: ParsedArgs): BlockOptions {
  const blocks: BlockOptions = {};
  if (num(a, 'block-m') !== undefined) blocks.blockM = num(a, 'block-m');
  if (num(a, 'block-n') !== undefined) blocks.blockN = num(a, 'block-n');
  if (num(a, 'sram-bytes') !== undefined) blocks.sramBytes = num(a, 'sram-bytes');
  if (blocks.sramBytes !== undefined && (blocks.blockM !== undefined || blocks.blockN !== undefined)) {
    throw new ArgsError('give --block-m/--block-n or --sram-bytes, not both');
  }
  return blocks;
}

type Out = { data: ArrayLike<number>; shape: number[] };

interface Prepared {
  /** Runs one algorithm (tracing off); throws before anything is written. */
  run(id: string): {
    o: Out;
    lse: Out;
    result: LayoutRunResult;
    extra: Record<string, unknown>;
    files?: Record<string, Out>;
    backward?: Record<string, unknown>;
  };
}

/** A varlen batch's files (--q/--k/--v, --cu-seqlens-q/-k), checked and read under --max-bytes: for `run` and the hardware commands. */
export async function loadVarlenFiles(a: ParsedArgs) {
  for (const r of ['q', 'k', 'v', 'cu-seqlens-q', 'cu-seqlens-k']) if (!str(a, r)) throw new ArgsError(`varlen needs --${r}`);
  const layout = str(a, 'layout');
  if (layout !== undefined && layout !== 'bnhd')
    throw new ArgsError(`--layout ${layout}: varlen tensors are token-major [total, H, d] (bnhd); leave --layout out`);
  const [q, k, v, cuSeqlensQ, cuSeqlensK] = await Promise.all(
    ['q', 'k', 'v', 'cu-seqlens-q', 'cu-seqlens-k'].map((r) =>
      loadTensorFile(str(a, r)!, { indices: r.startsWith('cu'), maxBytes: num(a, 'max-bytes') }),
    ),
  );
  return { q, k, v, cuSeqlensQ, cuSeqlensK };
}

/** A paged cache's files (--q, --k-cache/--v-cache, --block-table, --cache-seqlens) and their layout, checked and read under --max-bytes. */
export async function loadPagedFiles(a: ParsedArgs) {
  for (const r of ['q', 'k-cache', 'v-cache', 'block-table', 'cache-seqlens'])
    if (!str(a, r)) throw new ArgsError(`a paged K/V cache needs --${r}`);
  for (const r of ['k', 'v', 'cu-seqlens-q', 'cu-seqlens-k'])
    if (str(a, r)) throw new ArgsError(`--${r} cannot be combined with a paged cache (--k-cache/--v-cache)`);
  const layout = parseLayout(str(a, 'layout') ?? 'bnhd');
  const [q, kCache, vCache, blockTable, cacheSeqlens] = await Promise.all(
    ['q', 'k-cache', 'v-cache', 'block-table', 'cache-seqlens'].map((r) =>
      loadTensorFile(str(a, r)!, { indices: r === 'block-table' || r === 'cache-seqlens', maxBytes: num(a, 'max-bytes') }),
    ),
  );
  return { t: { q, kCache, vCache, blockTable, cacheSeqlens }, layout };
}

async function prepareVarlen(a: ParsedArgs): Promise<Prepared> {
  const t = await loadVarlenFiles(a);
  const { q: qt, k: kt } = t;
  const sh = varlenShape(t);
  const { hq, dv } = sh;
  const { vp, x } = varlenFromTensors(t, await baseFields(a, sh));
  const blocks = blockOptions(a);
  const longest = (cu: readonly number[]) => seqLengths(cu).reduce((m, n) => Math.max(m, n), 1);
  checkLayoutSize(
    a,
    { batch: seqLengths(vp.cuSeqlensQ).length, hq, hk: sh.hk, nq: longest(vp.cuSeqlensQ), nk: longest(vp.cuSeqlensK), d: sh.d, dv },
    blocks,
  );
  const features = parseFeatures(list(a, 'feature'));
  const tq = qt.info.shape[0];
  const tk = kt.info.shape[0];
  const doFile = str(a, 'do');
  let dO: Float32Array | undefined;
  if (doFile) {
    const t = await loadTensorFile(doFile, { maxBytes: num(a, 'max-bytes') });
    const want = [tq, hq, dv];
    if (t.info.shape.length !== 3 || t.info.shape.some((n, i) => n !== want[i])) {
      throw new ProblemError(
        'dO',
        `${doFile}: expected shape [${want.join(', ')}] (the shape of o: [total_q, Hq, dv]), got [${t.info.shape.join(', ')}]`,
      );
    }
    dO = roundArray(vp.base.dtype, Float32Array.from(t.data));
  }
  return {
    run(id) {
      const r = runLayoutToEnd(runVarlen(algorithmById(id), vp, x, { trace: false, ...blocks, features }));
      const out = packedResult(vp, r);
      const extra = { layout: 'varlen', seqlens_q: seqLengths(vp.cuSeqlensQ), seqlens_k: seqLengths(vp.cuSeqlensK) };
      const o = { data: out.o, shape: [tq, hq, dv] };
      const lse = { data: out.lse, shape: [hq, tq] };
      if (!dO) return { o, lse, result: r, extra };
      const g = runVarlenBackward(id, vp, x, dO, { ...blocks, features });
      return {
        o,
        lse,
        result: r,
        extra,
        files: {
          'dq.npy': { data: g.dq, shape: [tq, hq, sh.d] },
          'dk.npy': { data: g.dk, shape: [tk, sh.hk, sh.d] },
          'dv.npy': { data: g.dv, shape: [tk, sh.hk, dv] },
        },
        backward: { ...countersToStats(g.counters), block_m: g.blocks?.blockM, block_n: g.blocks?.blockN },
      };
    },
  };
}

async function preparePaged(a: ParsedArgs): Promise<Prepared> {
  const { t, layout } = await loadPagedFiles(a);
  const sh = pagedShape(t, layout);
  const { B, hq, nq, dv } = sh;
  const { pp, x } = pagedFromTensors(t, await baseFields(a, sh), layout);
  const blocks = blockOptions(a);
  checkLayoutSize(a, { batch: B, hq, hk: sh.hk, nq, nk: pp.cacheSeqlens.reduce((m, n) => Math.max(m, n), 1), d: sh.d, dv }, blocks);
  const features = parseFeatures(list(a, 'feature'));
  return {
    run(id) {
      const run = runPaged(algorithmById(id), pp, x, { trace: false, ...blocks, features });
      const r = runLayoutToEnd(run.gen);
      const out = pagedOutput(pp, r);
      const oDims = [B, hq, nq, dv];
      return {
        o: { data: fromBhnd(out.o, oDims, layout), shape: layout === 'bnhd' ? [B, nq, hq, dv] : oDims },
        lse: { data: out.lse, shape: [B, hq, nq] },
        result: r,
        extra: {
          layout: 'paged',
          page_size: pp.pageSize,
          block_n_paged: run.blockN,
          pages_touched: run.touched.size,
          cache_seqlens: pp.cacheSeqlens,
        },
      };
    },
  };
}

/** `run` with --cu-seqlens-* or --k-cache/…: parses, validates, runs every algorithm, then writes. */
export async function runLayoutCli(argv: readonly string[]): Promise<number> {
  const a = parseArgs([...argv], { ...PROBLEM_OPTIONS, ...LAYOUT_OPTIONS, ...OUTPUT_OPTIONS });
  const out = str(a, 'out');
  if (!out) throw new ArgsError('--out DIR is required');
  const ids = algoIds(a);
  ids.forEach(algorithmById);
  const plan = outputPlan(a, out, ids);
  checkOutputs(plan);
  const paged =
    str(a, 'k-cache') !== undefined ||
    str(a, 'v-cache') !== undefined ||
    str(a, 'block-table') !== undefined ||
    str(a, 'cache-seqlens') !== undefined;
  if (str(a, 'do') !== undefined) {
    if (paged)
      throw new ArgsError(
        '--do: a paged K/V cache has no backward pass (it is an inference layout, as in flash_attn_with_kvcache); run the backward on a varlen batch (--cu-seqlens-q/--cu-seqlens-k)',
      );
    // An algorithm without a backward is refused before any file is read.
    backwardsFor(ids);
  }
  const prep = paged ? await preparePaged(a) : await prepareVarlen(a);
  const results = ids.map((id) => {
    const t0 = performance.now();
    const r = prep.run(id);
    return { id, r, seconds: (performance.now() - t0) / 1000 };
  });
  await StagedOutputs.write(plan, async (staged) => {
    for (const { id, r } of results) {
      const dir = join(out, id);
      await staged.writeFile(join(dir, 'o.npy'), encodeNpy(r.o.data, r.o.shape));
      await staged.writeFile(join(dir, 'lse.npy'), encodeNpy(r.lse.data, r.lse.shape));
      for (const [name, f] of Object.entries(r.files ?? {})) await staged.writeFile(join(dir, name), encodeNpy(f.data, f.shape));
      const c = r.result;
      const stats = {
        algo: id,
        ...countersToStats(c.counters),
        block_m: c.blocks?.blockM,
        block_n: c.blocks?.blockN,
        ...r.extra,
        algorithm_stats: c.stats,
        ...(r.backward ? { backward: r.backward } : {}),
      };
      await staged.writeFile(join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n');
    }
  });
  for (const { id, r, seconds } of results)
    console.log(`${id}: ${r.result.counters.steps} steps, ${seconds.toFixed(3)} s -> ${join(out, id)}`);
  return allNanWarnings(results.map(({ id, r }) => ({ id, o: r.o.data })));
}
