// Why a figure from the WebGPU panel and one from the benchmark can differ on the same kernel:
// the same runs timed four ways, in one process (Node + Dawn, or a page in a browser), so the
// two can be compared line by line. Per shape:
//   once   — one warm-up run, then one timed run;
//   steady — steady-timing.ts (warm-up until runs stop getting faster, short kernels back to back, median of 5);
//   single — right after `steady`, one run alone in its submission (warm GPU, no batching);
//   idle   — the same after the GPU has idled for a second;
//   wall   — the host's clock around `steady`'s batch size of runs in one submission, per run
//            (with GPU timestamps right, close to `steady`).
// The configuration string shows which kernel ran; two sampled rows are checked against float64.
// Entry points: `npm run bench:webgpu -- --timing-study` and scripts/timing-study-page.ts.

import { nominalFlops, type AttentionProblem } from '../core/problem.ts';
import { AttentionRun } from '../webgpu/backend.ts';
import type { WebGpuContext, WebGpuPath } from '../webgpu/device.ts';
import { checkSampledRows } from '../webgpu/row-check.ts';
import { timeSteady, totalMs } from '../webgpu/steady-timing.ts';

export interface StudyShape {
  name: string;
  path: WebGpuPath;
  problem: AttentionProblem;
}

export interface StudyRow {
  name: string;
  path: WebGpuPath;
  /** ms per run for each way of timing (see the file's head). */
  once: number;
  steady: number;
  single: number;
  idle: number;
  wall: number;
  batch: number;
  /** How long `steady`'s warm-up ran (ms). */
  warmMs: number;
  /** TFLOP/s of `steady` (4·B·H·Nq·Nk·d, halved when causal). */
  tflops: number;
  err: number;
  config: string;
}

const dense = (n: number, d: number, causal: boolean): AttentionProblem => ({
  batch: 4,
  hq: 16,
  hk: 16,
  nq: n,
  nk: n,
  d,
  dv: d,
  causal,
  dtype: 'fp32',
});
/** The benches' decoding shape: B 4, one query row, d 128. */
export const decodeProblem = (hq: number, hk: number, nk: number): AttentionProblem => ({
  batch: 4,
  hq,
  hk,
  nq: 1,
  nk,
  d: 128,
  dv: 128,
  causal: false,
  dtype: 'fp32',
});

/** The shapes of BENCHMARKS.md's browser table, plus one non-matrix path for contrast. */
export function studyShapes(paths: readonly WebGpuPath[], quick = false): StudyShape[] {
  const n = quick ? 256 : 4096;
  const shapes: StudyShape[] = [];
  const matrix = paths.includes('flash-matrix');
  const flash: WebGpuPath = matrix ? 'flash-matrix' : 'flash-f32';
  shapes.push({ name: `forward N${n} d64`, path: flash, problem: dense(n, 64, false) });
  shapes.push({ name: `forward N${n} d128`, path: flash, problem: dense(n, 128, false) });
  shapes.push({ name: `forward N${n} d128 causal`, path: flash, problem: dense(n, 128, true) });
  if (!quick) shapes.push({ name: 'forward N8192 d128', path: flash, problem: dense(8192, 128, false) });
  if (paths.includes('flash-subgroups')) shapes.push({ name: `forward N${n} d64`, path: 'flash-subgroups', problem: dense(n, 64, false) });
  for (const nk of quick ? [1024] : [8192, 32768]) {
    shapes.push({ name: `decode Hq16 Nk${nk}`, path: 'decode', problem: decodeProblem(16, 16, nk) });
    shapes.push({ name: `decode Hq32 Hk8 Nk${nk}`, path: 'decode', problem: decodeProblem(32, 8, nk) });
  }
  return shapes;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function timingStudy(ctx: WebGpuContext, shapes: StudyShape[], log: (row: StudyRow | string) => void): Promise<StudyRow[]> {
  const rows: StudyRow[] = [];
  for (const s of shapes) {
    let run: AttentionRun | undefined;
    try {
      run = await AttentionRun.create(ctx, s.problem, { path: s.path });
      await run.fillRandom(1234);
      await sleep(1000); // every shape starts from an idle GPU, as a click in the panel does
      await run.execute();
      const once = totalMs(await run.execute());
      const steady = await timeSteady((b) => run!.execute(b));
      const single = totalMs(await run.execute());
      const t0 = performance.now();
      await run.execute(steady.batch);
      const wall = (performance.now() - t0) / steady.batch;
      await sleep(1000);
      const idle = totalMs(await run.execute());
      const check = await checkSampledRows(run, 2);
      const row: StudyRow = {
        name: s.name,
        path: s.path,
        once,
        steady: steady.ms,
        single,
        idle,
        wall,
        batch: steady.batch,
        warmMs: steady.warmMs,
        tflops: nominalFlops(s.problem) / (steady.ms * 1e9),
        err: Math.max(check.maxAbsErrO, check.maxAbsErrLse),
        config: run.config,
      };
      rows.push(row);
      log(row);
    } catch (e) {
      log(`${s.name} ${s.path}: FAILED ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      run?.destroy();
    }
  }
  return rows;
}
