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
import { ArgsError, num, parseArgs, str } from './args.ts';
import { cliProblem, fromBhnd, PROBLEM_OPTIONS, RANDOM_OPTIONS, shapeFor } from './problem-options.ts';
import { isLayoutRun } from './layout-run.ts';
import { runWebGpuLayoutCli } from './layout-run-webgpu.ts';

export const WEBGPU_RUN_HELP = `backend:
  --backend cpu|webgpu        webgpu runs the problem on the GPU through Dawn (npm 'webgpu')
  --path P                    with webgpu: ${Object.keys(PATH_LABELS).join(', ')} (default flash-f32)
  --repeats N                 with webgpu: timed repetitions after a warm-up (default 3)
  with webgpu, --algo is not used and random inputs (--b --hq --hk --nq --nk --d --dv --seed) are allowed;
  the serving layouts' flags run on it too: varlen on flash-f32 (default), flash-f16,
  flash-subgroups or flash-matrix, a paged cache on decode (paged flash-decoding); outputs
  as without --backend, in DIR/webgpu-<path>/`;

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
  const a = parseArgs(argv, { ...PROBLEM_OPTIONS, ...RANDOM_OPTIONS, out: 'string', path: 'string', repeats: 'int' });
  const out = str(a, 'out');
  if (!out) throw new ArgsError('--out DIR is required');
  const path = (str(a, 'path') ?? 'flash-f32') as WebGpuPath;
  if (!(path in PATH_LABELS)) throw new ArgsError(`--path must be one of ${Object.keys(PATH_LABELS).join(', ')}, got '${path}'`);
  const cp = await cliProblem(a, true);
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
