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
  /** Past `warmMs`, the warm-up goes on while runs still get faster (clocks still rising), up to this (ms). */
  maxWarmMs?: number;
  /** Reps to compare: a run against the one at least this long (ms) before it, 2% faster counting as still rising. */
  settleMs?: number;
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

/** One run's kernel time: the sum of its kernels' times (ms). */
export const totalMs = (ks: readonly KernelTime[]) => ks.reduce((a, k) => a + k.ms, 0);

// maxBatch: the query set's cap (timer.ts) binds first for kernels of several dispatches.
export const STEADY_DEFAULTS = {
  warmMs: 400,
  minWarmRuns: 2,
  maxWarmMs: 3000,
  settleMs: 150,
  reps: 5,
  batchMs: 20,
  maxBatch: 1024,
} as const;

/** Times `execute(batch)` (mean per-run kernel times of `batch` runs in one submission) steadily. */
export async function timeSteady(execute: (batch: number) => Promise<KernelTime[]>, opts: SteadyOptions = {}): Promise<SteadyTime> {
  const o = { ...STEADY_DEFAULTS, ...opts };
  const now = opts.now ?? (() => performance.now());
  const reps = Math.max(1, Math.floor(o.reps));
  let batch = 1;
  const t0 = now();
  let warmRuns = 0;
  // An idle GPU's clock takes 0.1–0.5 s of steady work to climb, slower when short kernels leave
  // gaps between submissions (BENCHMARKS.md, "Browser on the GPU machine"): warm until runs stop speeding up.
  const seen: { at: number; ms: number }[] = [];
  while (o.minWarmRuns > 0 || o.warmMs > 0) {
    const ms = totalMs(await execute(batch));
    warmRuns += batch;
    const at = now() - t0;
    if (!o.singleSubmit) batch = Math.max(1, Math.min(o.maxBatch, Math.ceil(o.batchMs / Math.max(ms, 1e-6))));
    const before = seen.findLast((s) => s.at <= at - o.settleMs);
    seen.push({ at, ms });
    if (warmRuns < o.minWarmRuns || at < o.warmMs) continue;
    if (at >= o.maxWarmMs || (before && ms >= before.ms * 0.98)) break;
  }
  const warmMs = now() - t0;
  const runs: { ms: number; kernels: KernelTime[] }[] = [];
  for (let r = 0; r < reps; r++) {
    const kernels = await execute(batch);
    runs.push({ ms: totalMs(kernels), kernels });
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
