// `run --backend webgpu` on the serving layouts: the CPU contract's flags and outputs
// (layout-run.ts), computed by the WebGPU kernels through Dawn under Node.
//   varlen: --q --k --v --cu-seqlens-q --cu-seqlens-k [--path flash-f32|flash-f16|flash-subgroups|flash-matrix]
//           → DIR/webgpu-<path>/o.npy [total_q, Hq, dv], lse.npy [Hq, total_q]
//   paged:  --q [B, Nq, Hq, d] (--layout bnhd, the default; bhnd) --k-cache --v-cache
//           --block-table --cache-seqlens   (flash-decoding; --path decode, the default)
//           → DIR/webgpu-decode/o.npy [B, Nq, Hq, dv] (bhnd: [B, Hq, Nq, dv]), lse.npy [B, Hq, Nq]
// plus stats.json (time, TFLOP/s or TB/s of unique K/V, kernel configuration, adapter). The
// files are checked by the same code as the CPU run (from-tensors.ts, then validateVarlen /
// validatePaged), so the same inputs are refused with the same messages, before the GPU is
// opened and before anything is written.

import { join } from 'node:path';
import { encodeNpy } from '../io/npy.ts';
import { nominalFlops } from '../core/problem.ts';
import { pagedFromTensors, pagedShape, varlenFromTensors, varlenShape } from '../layouts/from-tensors.ts';
import { validatePaged } from '../layouts/paged.ts';
import { sequenceProblem } from '../layouts/sequence-runner.ts';
import { seqLengths, validateVarlen } from '../layouts/varlen.ts';
import { WebGpuUnavailable, type WebGpuContext, type WebGpuPath } from '../webgpu/device.ts';
import { NO_ADAPTER_HELP, openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { PagedDecodeGpuRun, VARLEN_PATHS, VarlenGpuRun } from '../webgpu/serving-runs.ts';
import { timeSteady } from '../webgpu/steady-timing.ts';
import { ArgsError, num, parseArgs, str, type ParsedArgs } from './args.ts';
import { baseFields, LAYOUT_OPTIONS } from './layout-run.ts';
import { fromBhnd, parseLayout, PROBLEM_OPTIONS, refuseAttentionChunkOnWebGpu } from './problem-options.ts';
import { loadTensorFile } from './tensor-files.ts';
import { checkOutputs, writeOutputs } from './output-files.ts';
import { allNanWarnings, OUTPUT_OPTIONS, outputPlan } from './run-outputs.ts';
import { webGpuPathOption } from './webgpu-path-option.ts';

interface Output {
  o: { data: ArrayLike<number>; shape: number[] };
  lse: { data: ArrayLike<number>; shape: number[] };
  stats: Record<string, unknown>;
}

async function openGpu(): Promise<WebGpuContext | undefined> {
  try {
    return await openNodeWebGpu();
  } catch (e) {
    if (e instanceof WebGpuUnavailable) {
      console.error(`error: ${e.message}\n${NO_ADAPTER_HELP}`);
      return undefined;
    }
    throw e;
  }
}

async function varlen(a: ParsedArgs, path: WebGpuPath, repeats: number): Promise<Output | number> {
  for (const r of ['q', 'k', 'v', 'cu-seqlens-q', 'cu-seqlens-k']) if (!str(a, r)) throw new ArgsError(`varlen needs --${r}`);
  const layout = str(a, 'layout');
  if (layout !== undefined && layout !== 'bnhd')
    throw new ArgsError(`--layout ${layout}: varlen tensors are token-major [total, H, d] (bnhd); leave --layout out`);
  if (!VARLEN_PATHS.includes(path)) throw new ArgsError(`--path ${path}: the varlen forward runs on ${VARLEN_PATHS.join(', ')}`);
  const [qt, kt, vt, cqt, ckt] = await Promise.all(
    ['q', 'k', 'v', 'cu-seqlens-q', 'cu-seqlens-k'].map((r) =>
      loadTensorFile(str(a, r)!, { indices: r.startsWith('cu'), maxBytes: num(a, 'max-bytes') }),
    ),
  );
  const t = { q: qt, k: kt, v: vt, cuSeqlensQ: cqt, cuSeqlensK: ckt };
  const sh = varlenShape(t);
  const { vp, x } = varlenFromTensors(t, await baseFields(a, sh));
  validateVarlen(vp, x);
  const ctx = await openGpu();
  if (!ctx) return 2;
  const run = await VarlenGpuRun.create(ctx, vp, { path });
  try {
    run.upload(x);
    const { ms, kernels } = await timeSteady((b) => run.execute(b), { reps: repeats });
    const { o, lse } = await run.read();
    const tq = qt.info.shape[0];
    const lq = seqLengths(vp.cuSeqlensQ);
    const lk = seqLengths(vp.cuSeqlensK);
    const flops = lq.reduce((s, n, b) => s + (n && lk[b] ? nominalFlops(sequenceProblem(vp.base, n, lk[b])) : 0), 0);
    return {
      o: { data: o, shape: [tq, sh.hq, sh.dv] },
      lse: { data: lse, shape: [sh.hq, tq] },
      stats: {
        layout: 'varlen',
        seqlens_q: lq,
        seqlens_k: lk,
        time_ms: ms,
        tflops: flops / (ms * 1e9),
        nominal_flops: flops,
        kernels,
        config: run.config,
        adapter: ctx.adapterName,
      },
    };
  } finally {
    run.destroy();
  }
}

async function paged(a: ParsedArgs, path: WebGpuPath, repeats: number): Promise<Output | number> {
  for (const r of ['q', 'k-cache', 'v-cache', 'block-table', 'cache-seqlens'])
    if (!str(a, r)) throw new ArgsError(`a paged K/V cache needs --${r}`);
  for (const r of ['k', 'v', 'cu-seqlens-q', 'cu-seqlens-k'])
    if (str(a, r)) throw new ArgsError(`--${r} cannot be combined with a paged cache (--k-cache/--v-cache)`);
  if (path !== 'decode') throw new ArgsError(`--path ${path}: a paged cache runs on the decode path (paged flash-decoding)`);
  const layout = parseLayout(str(a, 'layout') ?? 'bnhd');
  const [qt, kct, vct, btt, cst] = await Promise.all(
    ['q', 'k-cache', 'v-cache', 'block-table', 'cache-seqlens'].map((r) =>
      loadTensorFile(str(a, r)!, { indices: r === 'block-table' || r === 'cache-seqlens', maxBytes: num(a, 'max-bytes') }),
    ),
  );
  const t = { q: qt, kCache: kct, vCache: vct, blockTable: btt, cacheSeqlens: cst };
  const sh = pagedShape(t, layout);
  const { pp, x } = pagedFromTensors(t, await baseFields(a, sh), layout);
  validatePaged(pp, x);
  const ctx = await openGpu();
  if (!ctx) return 2;
  const run = await PagedDecodeGpuRun.create(ctx, pp);
  try {
    run.upload(x);
    const { ms, kernels } = await timeSteady((b) => run.execute(b), { reps: repeats });
    const { o, lse } = await run.read();
    const oDims = [sh.B, sh.hq, sh.nq, sh.dv];
    const bytes = run.uniqueKvBytes();
    return {
      o: { data: fromBhnd(o, oDims, layout), shape: layout === 'bnhd' ? [sh.B, sh.nq, sh.hq, sh.dv] : oDims },
      lse: { data: lse, shape: [sh.B, sh.hq, sh.nq] },
      stats: {
        layout: 'paged',
        page_size: pp.pageSize,
        cache_seqlens: pp.cacheSeqlens,
        split_len: run.work.splitLen,
        time_ms: ms,
        unique_kv_bytes: bytes,
        kv_tbs: bytes / (ms * 1e9),
        kernels,
        config: run.config,
        adapter: ctx.adapterName,
      },
    };
  } finally {
    run.destroy();
  }
}

/** `run --backend webgpu` with --cu-seqlens-* or --k-cache/…: checks, runs on the GPU, then writes. */
export async function runWebGpuLayoutCli(argv: readonly string[]): Promise<number> {
  const a = parseArgs([...argv], { ...PROBLEM_OPTIONS, ...LAYOUT_OPTIONS, ...OUTPUT_OPTIONS, path: 'string', repeats: 'int' });
  const out = str(a, 'out');
  if (!out) throw new ArgsError('--out DIR is required');
  const isPaged = ['k-cache', 'v-cache', 'block-table', 'cache-seqlens'].some((r) => str(a, r) !== undefined);
  const path = webGpuPathOption(str(a, 'path') ?? (isPaged ? 'decode' : 'flash-f32'));
  const plan = outputPlan(a, out, [`webgpu-${path}`]);
  checkOutputs(plan);
  refuseAttentionChunkOnWebGpu(a);
  const repeats = num(a, 'repeats') ?? 3;
  const dt = str(a, 'dtype');
  if (dt === 'fp8e4m3' || dt === 'fp8e5m2')
    throw new ArgsError(
      `--dtype ${dt}: the WebGPU kernels have no FP8 path (WGSL has no 8-bit float type); run FP8 on the CPU with --algo fa3`,
    );
  const r = isPaged ? await paged(a, path, repeats) : await varlen(a, path, repeats);
  if (typeof r === 'number') return r;
  const dir = plan.targets[0];
  await writeOutputs(plan, [
    [join(dir, 'o.npy'), encodeNpy(r.o.data, r.o.shape)],
    [join(dir, 'lse.npy'), encodeNpy(r.lse.data, r.lse.shape)],
    [join(dir, 'stats.json'), JSON.stringify({ backend: 'webgpu', path, ...r.stats }, null, 2) + '\n'],
  ]);
  const rate =
    'tflops' in r.stats
      ? `${(r.stats.tflops as number).toFixed(2)} TFLOP/s`
      : `${(r.stats.kv_tbs as number).toFixed(3)} TB/s of unique K/V`;
  console.log(`webgpu ${path} (${r.stats.layout}): ${(r.stats.time_ms as number).toFixed(3)} ms, ${rate} [${r.stats.config}] -> ${dir}`);
  return allNanWarnings([{ id: `webgpu ${path}`, o: r.o.data }]);
}
