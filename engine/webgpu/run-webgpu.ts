// Running one problem on the WebGPU backend from a host program: the CLI's
// `run --backend webgpu`, and anything else that has a WebGpuContext (Node or browser).

import type { AttentionInputs } from '../core/inputs.ts';
import { nominalFlops, type AttentionProblem } from '../core/problem.ts';
import type { WebGpuContext, WebGpuPath } from './device.ts';
import { AttentionRun, pathElem, type RunOptions } from './backend.ts';
import type { KernelTime } from './timer.ts';
import { timeSteady } from './steady-timing.ts';

export interface WebGpuRunOptions {
  path: WebGpuPath;
  /** FP8 problems: the switches of the emulated FA3 FP8 path (backend.ts). */
  fp8?: RunOptions['fp8'];
  /** Timed repetitions after the warm-up (steady-timing.ts); the median total is reported. */
  repeats?: number;
  /** Walk only the K/V tiles the block mask lists (backend.ts RunOptions.blockSparse). */
  blockSparse?: boolean;
}

export interface WebGpuRunResult {
  o: Float32Array;
  lse: Float32Array;
  /** Median total kernel time in ms, and the per-kernel times of that repetition. */
  ms: number;
  kernels: KernelTime[];
  tflops: number;
  /** Minimum HBM traffic (Q, K, V read once; O, LSE written once) over the time. */
  gbs: number;
  config: string;
  adapter: string;
}

export async function runWebGpu(
  ctx: WebGpuContext,
  problem: AttentionProblem,
  inputs: AttentionInputs,
  opts: WebGpuRunOptions,
): Promise<WebGpuRunResult> {
  const run = await AttentionRun.create(ctx, problem, { path: opts.path, fp8: opts.fp8, blockSparse: opts.blockSparse });
  try {
    run.upload(inputs);
    const mid = await timeSteady((b) => run.execute(b), { reps: opts.repeats ?? 3 });
    const { o, lse } = await run.read();
    const p = problem;
    const eb = pathElem(opts.path) === 'f16' ? 2 : 4;
    const bytes = p.batch * (p.hq * p.nq * p.d + p.hk * p.nk * (p.d + p.dv)) * eb + p.batch * p.hq * p.nq * (p.dv + 1) * 4;
    return {
      o,
      lse,
      ms: mid.ms,
      kernels: mid.kernels,
      tflops: nominalFlops(p) / (mid.ms * 1e9),
      gbs: bytes / (mid.ms * 1e6),
      config: run.config,
      adapter: ctx.adapterName,
    };
  } finally {
    run.destroy();
  }
}
