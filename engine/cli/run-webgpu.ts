// `run --backend webgpu`: the same problem options as `run`, executed by a WebGPU kernel
// through Dawn under Node. Writes DIR/webgpu-<path>/o.npy, lse.npy and stats.json (time,
// TFLOP/s, GB/s, per-kernel times, adapter). Random inputs are allowed (--b/--hq/--nq/...)
// because full-size problems rarely come from files.

import { join } from 'node:path';
import { encodeNpy } from '../io/npy.ts';
import { isFp8, nominalFlops, type AttentionProblem } from '../core/problem.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import { readFeatures } from '../algorithms/features.ts';
import { FA3_FP8_FEATURES } from '../algorithms/fa3/fp8.ts';
import { outputError } from '../lowprec/error-metrics.ts';
import { referenceAttention } from '../core/reference.ts';
import { referenceRowOf, sampleSites } from '../webgpu/row-check.ts';
import { PATH_LABELS, WebGpuUnavailable, type WebGpuContext, type WebGpuPath } from '../webgpu/device.ts';
import { NO_ADAPTER_HELP, openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { runWebGpu } from '../webgpu/run-webgpu.ts';
import { ArgsError, flag, num, parseArgs, str } from './args.ts';
import { checkOutputs, writeOutputs, type OutputPlan } from './output-files.ts';
import { allNanWarnings, OUTPUT_OPTIONS, outputPlan } from './run-outputs.ts';
import { webGpuPathOption } from './webgpu-path-option.ts';
import { cliProblem, fromBhnd, PROBLEM_OPTIONS, RANDOM_OPTIONS, refuseAttentionChunkOnWebGpu, shapeFor } from './problem-options.ts';
import { isLayoutRun } from './layout-run.ts';
import { loadGradOutput } from './backward-cli.ts';
import { runGpuBackward } from '../webgpu/backward-checks.ts';
import { backwardFlops, type BackwardPath } from '../webgpu/backward-run.ts';
import { runWebGpuLayoutCli } from './layout-run-webgpu.ts';

export const WEBGPU_RUN_HELP = `backend:
  --backend cpu|webgpu        webgpu runs the problem on the GPU through Dawn (npm 'webgpu')
  --path P                    with webgpu: ${Object.keys(PATH_LABELS).join(', ')} (default flash-f32)
  --repeats N                 with webgpu: timed repetitions after a warm-up (default 3)
  --block-sparse              with webgpu, flash paths: visit only the K/V tiles the block mask lists
                              (mask tests on partial tiles only); --mask-mod/--score-mod run on every flash path
                              and on decode (which always walks the listed tiles, split by split),
                              and error.json then holds O's error against float64
  with webgpu, --algo is not used and random inputs (--b --hq --hk --nq --nk --d --dv --seed) are allowed;
  the serving layouts' flags run on it too: varlen on flash-f32 (default), flash-f16,
  flash-subgroups or flash-matrix, a paged cache on decode (paged flash-decoding, q and the cache stored
  as f16 like every decoding run); outputs
  as without --backend, in DIR/webgpu-<path>/;
  --do FILE with webgpu: the backward after the forward, on --path flash-f32 (f32 kernels) or
  flash-matrix (f16 Q, K, V, dO on subgroup matrices, dQ in a fixed-point accumulator):
  dq.npy, dk.npy, dv.npy beside o.npy and lse.npy, backward time and TFLOP/s in stats.json`;

/** Takes `--backend X` out of argv; 'cpu' when absent. */
export function splitBackend(argv: readonly string[]): { backend: 'cpu' | 'webgpu'; rest: string[] } {
  const i = argv.indexOf('--backend');
  if (i < 0) return { backend: 'cpu', rest: [...argv] };
  const b = argv[i + 1];
  if (b !== 'cpu' && b !== 'webgpu') throw new ArgsError(`--backend must be cpu or webgpu, got '${b ?? ''}'`);
  return { backend: b, rest: [...argv.slice(0, i), ...argv.slice(i + 2)] };
}

export async function runWebGpuCli(argv: string[]): Promise<number> {
  if (isLayoutRun(argv)) return runWebGpuLayoutCli(argv);
  const a = parseArgs(argv, {
    ...PROBLEM_OPTIONS,
    ...RANDOM_OPTIONS,
    ...OUTPUT_OPTIONS,
    path: 'string',
    repeats: 'int',
    do: 'string',
    'block-sparse': 'flag',
  });
  const out = str(a, 'out');
  if (!out) throw new ArgsError('--out DIR is required');
  const path = webGpuPathOption(str(a, 'path') ?? 'flash-f32');
  refuseAttentionChunkOnWebGpu(a);
  const plan = outputPlan(a, out, [`webgpu-${path}`]);
  checkOutputs(plan);
  const cp = await cliProblem(a, true, { command: 'run', maxBytes: num(a, 'max-bytes'), algos: 1, backward: str(a, 'do') !== undefined });
  // FP8: FA3's numerics emulated on the f32 flash path (WGSL has no 8-bit float type).
  const fp8 = isFp8(cp.problem.dtype) ? fp8Switches(cp.problem.dtype, path, cp.features) : undefined;
  const doFile = str(a, 'do');
  if (doFile !== undefined && path !== 'flash-f32' && path !== 'flash-matrix') {
    throw new ArgsError(`--do runs the backward on --path flash-f32 or flash-matrix; --path ${path} has no backward`);
  }
  // dO is checked against O's shape before the GPU opens, so a wrong file writes nothing.
  const dO = doFile !== undefined ? await loadGradOutput(doFile, cp) : undefined;
  let ctx: WebGpuContext;
  try {
    ctx = await openNodeWebGpu();
  } catch (e) {
    if (e instanceof WebGpuUnavailable) {
      console.error(`error: ${e.message}\n${NO_ADAPTER_HELP}`);
      return 2;
    }
    throw e;
  }
  const p = cp.problem;
  if (dO) return runWebGpuBackwardCli(ctx, cp, dO, plan, num(a, 'repeats') ?? 3, path as BackwardPath);
  const r = await runWebGpu(ctx, p, cp.inputs, { path, repeats: num(a, 'repeats') ?? 3, fp8, blockSparse: flag(a, 'block-sparse') });
  const dir = plan.targets[0];
  const oDims = [p.batch, p.hq, p.nq, p.dv];
  const files: [string, Uint8Array | string][] = [
    [join(dir, 'o.npy'), encodeNpy(fromBhnd(r.o, oDims, cp.layout), shapeFor(cp.rank, oDims, cp.layout))],
    [join(dir, 'lse.npy'), encodeNpy(r.lse, [p.batch, p.hq, p.nq])],
  ];
  const stats = {
    backend: 'webgpu',
    path,
    adapter: r.adapter,
    config: r.config,
    time_ms: r.ms,
    tflops: r.tflops,
    gbs: r.gbs,
    kernels: r.kernels,
    nominal_flops: nominalFlops(p),
    problem: p,
  };
  files.push([join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n']);
  if (fp8 || p.mask !== undefined)
    files.push([
      join(dir, 'error.json'),
      JSON.stringify({ path, dtype: p.dtype, ...errorAgainstFloat64(p, cp.inputs, r.o) }, null, 2) + '\n',
    ]);
  await writeOutputs(plan, files);
  console.log(
    `webgpu ${path} on ${r.adapter}: ${r.ms.toFixed(3)} ms, ${r.tflops.toFixed(2)} TFLOP/s, ${r.gbs.toFixed(1)} GB/s [${r.config}] -> ${dir}`,
  );
  return allNanWarnings([{ id: `webgpu ${path}`, o: r.o }]);
}

function fp8Switches(dtype: string, path: WebGpuPath, given: Record<string, boolean | number>) {
  if (path !== 'flash-f32')
    throw new ArgsError(`--dtype ${dtype}: FP8 is emulated on --path flash-f32 only (WGSL has no 8-bit float type), got --path ${path}`);
  return readFeatures('the WebGPU FP8 path', FA3_FP8_FEATURES, given);
}

/**
 * error.json of a WebGPU FP8 or masked run: max abs, RMSE and relative L1 of O against float64, over
 * every row when the float64 reference is cheap (≤ 2 GFLOP), else over 256 sampled rows.
 */
function errorAgainstFloat64(p: AttentionProblem, x: AttentionInputs, o: Float32Array) {
  if (nominalFlops(p) <= 2e9) return { rows: 'all', ...outputError(o, referenceAttention(p, x).o) };
  const sites = sampleSites(p, 256);
  const got: number[] = [];
  const want: number[] = [];
  for (const { b, h, i } of sites) {
    const ref = referenceRowOf(p, x, b, h, i);
    const oo = ((b * p.hq + h) * p.nq + i) * p.dv;
    for (let e = 0; e < p.dv; e++) {
      got.push(o[oo + e]);
      want.push(ref.o[e]);
    }
  }
  return { rows: sites.length, ...outputError(got, want) };
}

/** `run --backend webgpu --do`: forward and backward on the GPU, files as the CPU backward writes them. */
async function runWebGpuBackwardCli(
  ctx: Awaited<ReturnType<typeof openNodeWebGpu>>,
  cp: Awaited<ReturnType<typeof cliProblem>>,
  dO: Float32Array,
  plan: OutputPlan,
  repeats: number,
  path: BackwardPath,
): Promise<number> {
  const p = cp.problem;
  const r = await runGpuBackward(ctx, p, cp.inputs, dO, repeats, path);
  const dir = plan.targets[0];
  const arrays: [string, Float32Array, number[]][] = [
    ['o.npy', r.o, [p.batch, p.hq, p.nq, p.dv]],
    ['dq.npy', r.dq, [p.batch, p.hq, p.nq, p.d]],
    ['dk.npy', r.dk, [p.batch, p.hk, p.nk, p.d]],
    ['dv.npy', r.dv, [p.batch, p.hk, p.nk, p.dv]],
  ];
  const files: [string, Uint8Array | string][] = arrays.map(([name, data, dims]) => [
    join(dir, name),
    encodeNpy(fromBhnd(data, dims, cp.layout), shapeFor(cp.rank, dims, cp.layout)),
  ]);
  files.push([join(dir, 'lse.npy'), encodeNpy(r.lse, [p.batch, p.hq, p.nq])]);
  const tflops = backwardFlops(p) / (r.ms * 1e9);
  const stats = {
    backend: 'webgpu',
    path,
    adapter: ctx.adapterName,
    backward: { config: r.config, time_ms: r.ms, tflops, kernels: r.kernels, nominal_flops: backwardFlops(p) },
    problem: p,
  };
  files.push([join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n']);
  await writeOutputs(plan, files);
  console.log(`webgpu backward on ${ctx.adapterName}: ${r.ms.toFixed(3)} ms, ${tflops.toFixed(2)} TFLOP/s [${r.config}] -> ${dir}`);
  return allNanWarnings([{ id: `webgpu ${path}`, o: r.o }]);
}
