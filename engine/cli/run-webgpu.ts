// `run --backend webgpu`: the same problem options as `run`, executed by a WebGPU kernel
// through Dawn under Node. Writes DIR/webgpu-<path>/o.npy, lse.npy and stats.json (time,
// TFLOP/s, GB/s, per-kernel times, adapter). Random inputs are allowed (--b/--hq/--nq/...)
// because full-size problems rarely come from files.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeNpy } from '../io/npy.ts';
import { nominalFlops } from '../problem.ts';
import { PATH_LABELS, WebGpuUnavailable, type WebGpuPath } from '../webgpu/device.ts';
import { NO_ADAPTER_HELP, openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { runWebGpu } from '../webgpu/run-webgpu.ts';
import { isFp8 } from '../problem.ts';
import { ArgsError, num, parseArgs, str } from './args.ts';
import { cliProblem, fromBhnd, PROBLEM_OPTIONS, RANDOM_OPTIONS, shapeFor } from './problem-options.ts';
import { isLayoutRun } from './layout-run.ts';
import { loadGradOutput } from './backward-cli.ts';
import { runGpuBackward } from '../webgpu/backward-checks.ts';
import { backwardFlops } from '../webgpu/backward-run.ts';
import { runWebGpuLayoutCli } from './layout-run-webgpu.ts';

export const WEBGPU_RUN_HELP = `backend:
  --backend cpu|webgpu        webgpu runs the problem on the GPU through Dawn (npm 'webgpu')
  --path P                    with webgpu: ${Object.keys(PATH_LABELS).join(', ')} (default flash-f32)
  --repeats N                 with webgpu: timed repetitions after a warm-up (default 3)
  with webgpu, --algo is not used and random inputs (--b --hq --hk --nq --nk --d --dv --seed) are allowed;
  the serving layouts' flags run on it too: varlen on flash-f32 (default), flash-f16,
  flash-subgroups or flash-matrix, a paged cache on decode (paged flash-decoding); outputs
  as without --backend, in DIR/webgpu-<path>/;
  --do FILE with webgpu: the f32 backward kernels after the forward (--path flash-f32):
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
  const a = parseArgs(argv, { ...PROBLEM_OPTIONS, ...RANDOM_OPTIONS, out: 'string', path: 'string', repeats: 'int', do: 'string' });
  const out = str(a, 'out');
  if (!out) throw new ArgsError('--out DIR is required');
  const path = (str(a, 'path') ?? 'flash-f32') as WebGpuPath;
  if (!(path in PATH_LABELS)) throw new ArgsError(`--path must be one of ${Object.keys(PATH_LABELS).join(', ')}, got '${path}'`);
  const cp = await cliProblem(a, true);
  if (isFp8(cp.problem.dtype)) throw new ArgsError(`--dtype ${cp.problem.dtype}: the WebGPU kernels have no FP8 path (WGSL has no 8-bit float type); run FP8 on the CPU with --algo fa3`);
  const doFile = str(a, 'do');
  if (doFile !== undefined && path !== 'flash-f32') throw new ArgsError(`--do runs the f32 backward kernels after the flash-f32 forward; --path ${path} has no backward (use --path flash-f32)`);
  // dO is checked against O's shape before the GPU opens, so a wrong file writes nothing.
  const dO = doFile !== undefined ? await loadGradOutput(doFile, cp) : undefined;
  let ctx;
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
  if (dO) return runWebGpuBackwardCli(ctx, cp, dO, out, num(a, 'repeats') ?? 3);
  const r = await runWebGpu(ctx, p, cp.inputs, { path, repeats: num(a, 'repeats') ?? 3 });
  const dir = join(out, `webgpu-${path}`);
  await mkdir(dir, { recursive: true });
  const oDims = [p.batch, p.hq, p.nq, p.dv];
  await writeFile(join(dir, 'o.npy'), encodeNpy(fromBhnd(r.o, oDims, cp.layout), shapeFor(cp.rank, oDims, cp.layout)));
  await writeFile(join(dir, 'lse.npy'), encodeNpy(r.lse, [p.batch, p.hq, p.nq]));
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
  await writeFile(join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n');
  console.log(`webgpu ${path} on ${r.adapter}: ${r.ms.toFixed(3)} ms, ${r.tflops.toFixed(2)} TFLOP/s, ${r.gbs.toFixed(1)} GB/s [${r.config}] -> ${dir}`);
  return 0;
}

/** `run --backend webgpu --do`: forward and backward on the GPU, files as the CPU backward writes them. */
async function runWebGpuBackwardCli(ctx: Awaited<ReturnType<typeof openNodeWebGpu>>, cp: Awaited<ReturnType<typeof cliProblem>>, dO: Float32Array, out: string, repeats: number): Promise<number> {
  const p = cp.problem;
  const r = await runGpuBackward(ctx, p, cp.inputs, dO, repeats);
  const dir = join(out, 'webgpu-flash-f32');
  await mkdir(dir, { recursive: true });
  const files: [string, Float32Array, number[]][] = [
    ['o.npy', r.o, [p.batch, p.hq, p.nq, p.dv]],
    ['dq.npy', r.dq, [p.batch, p.hq, p.nq, p.d]],
    ['dk.npy', r.dk, [p.batch, p.hk, p.nk, p.d]],
    ['dv.npy', r.dv, [p.batch, p.hk, p.nk, p.dv]],
  ];
  for (const [name, data, dims] of files) await writeFile(join(dir, name), encodeNpy(fromBhnd(data, dims, cp.layout), shapeFor(cp.rank, dims, cp.layout)));
  await writeFile(join(dir, 'lse.npy'), encodeNpy(r.lse, [p.batch, p.hq, p.nq]));
  const tflops = backwardFlops(p) / (r.ms * 1e9);
  const stats = { backend: 'webgpu', path: 'flash-f32', adapter: ctx.adapterName, backward: { config: r.config, time_ms: r.ms, tflops, kernels: r.kernels, nominal_flops: backwardFlops(p) }, problem: p };
  await writeFile(join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n');
  console.log(`webgpu backward on ${ctx.adapterName}: ${r.ms.toFixed(3)} ms, ${tflops.toFixed(2)} TFLOP/s [${r.config}] -> ${dir}`);
  return 0;
}
