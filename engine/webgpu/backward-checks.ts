// The WebGPU backward end to end (the f32 flash forward for O and LSE, then the backward
// kernels), and its check against the float64 reference gradients on every variant of
// variants.ts. Used by the benchmark's self-test, the CLI and the SwiftShader test.

import { randomInputs, type AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceBackward } from '../backward/reference-backward.ts';
import { AttentionRun } from './backend.ts';
import { BackwardRun, type BackwardGradients, type BackwardPath } from './backward-run.ts';
import type { MatrixBackwardPrefs } from './backward-matrix-kernel.ts';
import type { WebGpuContext } from './device.ts';
import type { KernelTime } from './timer.ts';
import { timeSteady, totalMs, type SteadyTime } from './steady-timing.ts';
import { KERNEL_VARIANTS } from './variants.ts';

export interface GpuBackwardResult extends BackwardGradients {
  o: Float32Array;
  lse: Float32Array;
  /** Backward kernels only (D, dK dV, dQ), median of the repetitions. */
  ms: number;
  kernels: KernelTime[];
  config: string;
  /** How the repetitions were timed (absent for one cold run). */
  timing?: SteadyTime;
}

/**
 * Forward then backward on the GPU, both on `path` (flash-f32, or flash-matrix: f16 inputs on
 * subgroup matrices); `repeats` > 0: the backward timed steadily (steady-timing.ts), else one cold run.
 */
export async function runGpuBackward(
  ctx: WebGpuContext,
  p: AttentionProblem,
  x: AttentionInputs,
  dO: Float32Array,
  repeats = 0,
  path: BackwardPath = 'flash-f32',
  prefs: MatrixBackwardPrefs = {},
): Promise<GpuBackwardResult> {
  const fwd = await AttentionRun.create(ctx, p, { path });
  let o: Float32Array;
  let lse: Float32Array;
  try {
    fwd.upload(x);
    await fwd.execute();
    ({ o, lse } = await fwd.read());
  } finally {
    fwd.destroy();
  }
  const bwd = await BackwardRun.create(ctx, p, path, prefs);
  try {
    bwd.upload({ ...x, o, lse, dO });
    // Without repetitions, one cold run (the self-tests); with them, timed as steady-timing.ts does.
    if (repeats > 0) {
      const timing = await timeSteady((b) => bwd.execute(b), { reps: repeats });
      return { ...(await bwd.read()), o, lse, ms: timing.ms, kernels: timing.kernels, config: bwd.config, timing };
    }
    const kernels = await bwd.execute();
    return { ...(await bwd.read()), o, lse, ms: totalMs(kernels), kernels, config: bwd.config };
  } finally {
    bwd.destroy();
  }
}

export interface BackwardCheck {
  variant: string;
  maxErrDq: number;
  maxErrDk: number;
  maxErrDv: number;
  /** The float64 gradients' largest |value|, for errors relative to them. */
  scaleDq: number;
  scaleDk: number;
  scaleDv: number;
  error?: string;
}

function maxMagnitude(a: Float64Array): number {
  let m = 0;
  for (const x of a) m = Math.max(m, Math.abs(x));
  return m;
}

function maxAbs(a: Float32Array, b: Float64Array): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) {
    const e = Math.abs(a[i] - b[i]);
    if (!(e <= m)) m = Number.isNaN(e) ? Infinity : e;
  }
  return m;
}

/** dO with the seed's own stream: values of the size real gradients have. */
export function randomDo(p: AttentionProblem, seed: number): Float32Array {
  const n = p.batch * p.hq * p.nq * p.dv;
  return randomInputs({ ...p, nk: p.nq, hk: p.hq, d: p.dv }, { seed: seed + 1000 }).v.slice(0, n);
}

/**
 * Every variant against float64. The flash-matrix path runs each problem as fp16, so that the
 * inputs and dO the reference sees are the ones the GPU holds.
 */
export async function checkBackward(
  ctx: WebGpuContext,
  variants = KERNEL_VARIANTS,
  path: BackwardPath = 'flash-f32',
  prefs: MatrixBackwardPrefs = {},
): Promise<BackwardCheck[]> {
  const out: BackwardCheck[] = [];
  for (const [n, { name, problem: given }] of variants.entries()) {
    const problem: AttentionProblem = path === 'flash-matrix' ? { ...given, dtype: 'fp16' } : given;
    try {
      const x = randomInputs(problem, { seed: 11 + n });
      const dO = randomDo(problem, 11 + n);
      const g = await runGpuBackward(ctx, problem, x, dO, 0, path, prefs);
      const ref = referenceBackward(problem, { ...x, dO });
      out.push({
        variant: name,
        maxErrDq: maxAbs(g.dq, ref.dq),
        maxErrDk: maxAbs(g.dk, ref.dk),
        maxErrDv: maxAbs(g.dv, ref.dv),
        scaleDq: maxMagnitude(ref.dq),
        scaleDk: maxMagnitude(ref.dk),
        scaleDv: maxMagnitude(ref.dv),
      });
    } catch (e) {
      out.push({
        variant: name,
        maxErrDq: Infinity,
        maxErrDk: Infinity,
        maxErrDv: Infinity,
        scaleDq: 1,
        scaleDk: 1,
        scaleDv: 1,
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }
  return out;
}
