// Why a figure from the WebGPU panel and one from the benchmark can differ on the same kernel:
// the same runs timed four ways, in one process (Node + Dawn, or a page in a browser), so the
// two can be compared line by line. Per shape:
//   once   — one warm-up run, then one timed run;
//   steady — steady-timing.ts (warm-up until runs stop getting faster, short kernels back to back, median of 5);
//   single — right after `steady`, one run alone in its submission (warm GPU, no batching);
//   idle   — the same after the GPU has idled for a second;
//   wall   — the host's clock around `steady`'s batch size of runs in one submission, per run
//            (with GPU timestamps right, close to `steady`).
// The configuration string shows which kernel ran; sampled rows are checked against float64.
// Entry points: `npm run bench:webgpu -- --timing-study` and scripts/timing-study-page.ts.

import { nominalFlops, type AttentionProblem } from '../core/problem.ts';
import type { PagedProblem } from '../layouts/paged.ts';
import { AttentionRun } from '../webgpu/backend.ts';
import type { WebGpuContext, WebGpuPath } from '../webgpu/device.ts';
import { checkSampledRows } from '../webgpu/row-check.ts';
import { PagedDecodeGpuRun } from '../webgpu/serving-runs.ts';
import { timeSteady, totalMs } from '../webgpu/steady-timing.ts';
import { benchPagedProblem, checkPagedRows, logUniformLengths } from './serving-bench.ts';

/** A dense problem on one path, or the serving bench's paged decode (its own kernels). */
export type StudyShape =
  | { name: string; path: WebGpuPath; problem: AttentionProblem }
  | { name: string; path: 'paged'; paged: PagedProblem };

export interface StudyRow {
  name: string;
  path: WebGpuPath | 'paged';
  /** ms per run for each way of timing (see the file's head). */
  once: number;
  steady: number;
  single: number;
  idle: number;
  wall: number;
  batch: number;
  /** How long `steady`'s warm-up ran (ms). */
  warmMs: number;
  /** TFLOP/s of `steady` (4·B·H·Nq·Nk·d, halved when causal; paged: 4·Hq·d summed over the sequences' lengths). */
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

/** The serving bench's paged decode: B 32, Hq 32, Hk 8, d 128, pages of 64, lengths log-uniform 1k–32k (quick: B 4, Hq 8, Hk 2, 64–1024). */
export function pagedStudyProblem(quick = false): PagedProblem {
  const base = { hq: quick ? 8 : 32, hk: quick ? 2 : 8, d: 128, dv: 128, causal: false, dtype: 'fp32' as const };
  const lengths = quick ? logUniformLengths(4, 64, 1024, 2024) : logUniformLengths(32, 1024, 32768, 2024);
  return benchPagedProblem(lengths, 64, base, 7);
}

/** The shapes of BENCHMARKS.md's browser table: one forward row for contrast, the decoding shapes (GQA 32/8 and 64/8 included) and paged decoding. */
export function studyShapes(paths: readonly WebGpuPath[], quick = false): StudyShape[] {
  const n = quick ? 256 : 4096;
  const flash: WebGpuPath = paths.includes('flash-matrix') ? 'flash-matrix' : 'flash-f32';
  const shapes: StudyShape[] = [{ name: `forward N${n} d128`, path: flash, problem: dense(n, 128, false) }];
  for (const nk of quick ? [1024] : [8192, 32768]) {
    for (const [hq, hk] of [
      [16, 16],
      [32, 8],
      [64, 8],
    ])
      shapes.push({ name: `decode Hq${hq} Hk${hk} Nk${nk}`, path: 'decode', problem: decodeProblem(hq, hk, nk) });
  }
  shapes.push({ name: 'paged decode', path: 'paged', paged: pagedStudyProblem(quick) });
  return shapes;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sampledError(run: AttentionRun): Promise<number> {
  const check = await checkSampledRows(run, 2);
  return Math.max(check.maxAbsErrO, check.maxAbsErrLse);
}

export async function timingStudy(ctx: WebGpuContext, shapes: StudyShape[], log: (row: StudyRow | string) => void): Promise<StudyRow[]> {
  const rows: StudyRow[] = [];
  for (const s of shapes) {
    let run: AttentionRun | PagedDecodeGpuRun | undefined;
    try {
      run = 'paged' in s ? await PagedDecodeGpuRun.create(ctx, s.paged) : await AttentionRun.create(ctx, s.problem, { path: s.path });
      const r = run;
      await r.fillRandom(1234);
      await sleep(1000); // every shape starts from an idle GPU, as a click in the panel does
      await r.execute();
      const once = totalMs(await r.execute());
      const steady = await timeSteady((b) => r.execute(b));
      const single = totalMs(await r.execute());
      const t0 = performance.now();
      await r.execute(steady.batch);
      const wall = (performance.now() - t0) / steady.batch;
      await sleep(1000);
      const idle = totalMs(await r.execute());
      const err = r instanceof PagedDecodeGpuRun ? await checkPagedRows(r, [0, r.pp.batch - 1]) : await sampledError(r);
      const flops =
        'paged' in s ? 4 * s.paged.base.hq * s.paged.base.d * s.paged.cacheSeqlens.reduce((a, l) => a + l, 0) : nominalFlops(s.problem);
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
        tflops: flops / (steady.ms * 1e9),
        err,
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
