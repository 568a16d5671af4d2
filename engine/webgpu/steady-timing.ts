// Timing a kernel the way the GPU runs it in steady use: warm first (an idle GPU sits at low
// clocks and takes over 100 ms of work to come back up), short kernels back to back in one
// submission (timer.ts), the median of several repetitions. The benchmark, the backward check
// and the WebGPU panel all time through this, so a figure in the browser and one under Node
// mean the same thing.

import type { KernelTime } from './timer.ts';

export interface SteadyOptions {
  /** Warm-up: at least this long of back-to-back runs (ms), and at least `minWarmRuns` runs. */
  warmMs?: number;
  minWarmRuns?: number;
  /** Timed repetitions; the median total is reported. */
  reps?: number;
  /** Kernels shorter than this (ms) are run back to back in one submission, up to `maxBatch`. */
  batchMs?: number;
  maxBatch?: number;
  /** One run per submission (the GPU idles between runs while the host waits). */
  singleSubmit?: boolean;
  now?: () => number;
}

export interface SteadyTime {
  /** Median total kernel time of one run (ms), and the per-kernel times of that repetition. */
  ms: number;
  kernels: KernelTime[];
  /** Every repetition's total (ms), in the order run. */
  totals: number[];
  /** Runs per submission in the timed repetitions. */
  batch: number;
  /** Warm-up runs and how long they took (ms of wall time). */
  warmRuns: number;
  warmMs: number;
}

const total = (ks: KernelTime[]) => ks.reduce((a, k) => a + k.ms, 0);

export const STEADY_DEFAULTS = { warmMs: 400, minWarmRuns: 2, reps: 5, batchMs: 20, maxBatch: 64 } as const;

/** Times `execute(batch)` (mean per-run kernel times of `batch` runs in one submission) steadily. */
export async function timeSteady(execute: (batch: number) => Promise<KernelTime[]>, opts: SteadyOptions = {}): Promise<SteadyTime> {
  const o = { ...STEADY_DEFAULTS, ...opts };
  const now = opts.now ?? (() => performance.now());
  const reps = Math.max(1, Math.floor(o.reps));
  let batch = 1;
  const t0 = now();
  let warmRuns = 0;
  while (warmRuns < o.minWarmRuns || now() - t0 < o.warmMs) {
    const t = total(await execute(batch));
    warmRuns += batch;
    if (!o.singleSubmit) batch = Math.max(1, Math.min(o.maxBatch, Math.ceil(o.batchMs / Math.max(t, 1e-6))));
  }
  const warmMs = now() - t0;
  const runs: { ms: number; kernels: KernelTime[] }[] = [];
  for (let r = 0; r < reps; r++) {
    const kernels = await execute(batch);
    runs.push({ ms: total(kernels), kernels });
  }
  const sorted = [...runs].sort((a, b) => a.ms - b.ms);
  const mid = sorted[Math.floor(sorted.length / 2)];
  return { ms: mid.ms, kernels: mid.kernels, totals: runs.map((r) => r.ms), batch, warmRuns, warmMs };
}

/** How a steady time was taken, in words for a results table. */
export function describeSteady(t: SteadyTime, clock: 'gpu' | 'wall'): string {
  const how =
    t.batch > 1 ? `${t.totals.length} × ${t.batch} runs back to back` : `${t.totals.length} run${t.totals.length === 1 ? '' : 's'}`;
  return `${clock === 'gpu' ? 'GPU timestamps' : 'wall clock'}, median of ${how} after ${Math.round(t.warmMs)} ms of warm-up`;
}
