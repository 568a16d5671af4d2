// From one SM's schedule to the whole GPU.
//
// The model, in three steps:
// 1. One SM: the discrete-event scheduler runs the roles of the CTAs that share an SM
//    (ctas_per_sm of them, from the resource sheet) for a CTA that visits n K/V blocks and
//    runs the masking step on k of them (costKey: one CTA of the grid per distinct (n, k)).
//    That gives T(n), the cycles such a CTA holds its slot, and each unit's busy cycles.
//    Up to EXACT_BLOCKS blocks it is simulated exactly; beyond, the loop is periodic in
//    steady state, so T(n) is extended linearly from two exact points (n1 = 12, n2 = 24):
//    this keeps a 128K-token problem as cheap as a 3K one.
// 2. The grid: every CTA (causal grids have CTAs of different lengths) is placed on the
//    SM slot that frees first (list scheduling over smCount × ctas_per_sm slots), in the
//    order the kernel's tile scheduler hands them out: longest first for FA3/FA4 causal,
//    grid order otherwise. A static persistent scheduler instead deals the tiles round robin
//    over its CTAs, whatever each costs. The makespan is the kernel time; the last partial
//    wave shows up as idle SMs.
// 3. Floors and follow-ups: the time is at least the unique HBM traffic over HBM
//    bandwidth; a second kernel (flash-decoding's combine) is added after.
// Copies get min(the SM's own load limit, its share of L2 bandwidth) bytes per cycle; a
// kernel that streams K/V without reuse (decoding) gets its share of HBM instead.
// Equal CTAs in a row are placed a whole wave at a time while the slots free within one
// CTA's time of each other (then list scheduling gives each slot one). A grid of more than
// MAX_GRID_CTAS CTAs is never materialised: it is built for fewer batches, counted per K/V
// block count, scaled to the full batch and placed longest first in whole waves (with
// thousands of waves neither the order nor the wave rounding moves the makespan much); under a
// static persistent scheduler its round-robin deal is summed per CTA in closed form instead.
// A CTA pair (FA4's cta_group::2, sheet.cta_group = 2) is one grid entry that holds two SMs:
// its kernel has both CTAs, the peer's units suffixed ".peer" (engine/algorithms/fa4/pair.ts).

import { nominalFlops } from '../core/problem.ts';
import type { GpuSpec } from './gpus/index.ts';
import {
  ceilDiv,
  gcd,
  kvCount,
  sequencesOf,
  tensorRate,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
} from './model.ts';
import { Kernel, simulateKernel, type KernelRun } from './scheduler.ts';

export const EXACT_BLOCKS = 24;
/** The most CTAs a grid holds as objects; larger grids are simulated from their counts per cost class (costKey). */
export const MAX_GRID_CTAS = 1 << 16;
const N1 = 12;

export class FitError extends Error {
  constructor(readonly lines: string[]) {
    super(`configuration does not fit: ${lines.join('; ')}`);
    this.name = 'FitError';
  }
}

export interface SimulateResult {
  algo: string;
  gpu: string;
  time_us: number;
  tflops: number;
  flops: number;
  /** The GPU's dense tensor peak for this dtype (native MMA), and the share of it delivered. */
  peak_tflops: number;
  peak_fraction: number;
  cycles: number;
  ctas: number;
  ctas_per_sm: number;
  /** SMs that receive at least one CTA. */
  sms_busy: number;
  sm_count: number;
  waves: number;
  /** Busy fraction of each unit family over all SMs and the whole kernel time, plus sm = slots holding a CTA. */
  utilization: Record<string, number>;
  bound: 'schedule' | 'hbm';
  /** Unique HBM traffic of the kernel (the floor the time cannot go under), in bytes. */
  hbm_bytes: number;
  extra_kernel_us: number;
  features: HwFeatures;
}

export function loadBytesPerClk(gpu: GpuSpec, algo: HwAlgorithm, activeSms: number): number {
  const active = Math.max(1, Math.min(gpu.smCount, activeSms));
  const pool = algo.streamsKv ? gpu.hbmBytesPerSec / (gpu.clockGHz * 1e9) : gpu.l2BytesPerClk;
  return Math.min(gpu.smLoadBytesPerClk, pool / active);
}

/** Runs one SM holding `count` CTAs, each like `work`. */
export function runSm(
  algo: HwAlgorithm,
  gpu: GpuSpec,
  shape: ProblemShape,
  f: HwFeatures,
  works: CtaWork[],
  loadBw: number,
  events: boolean,
): KernelRun {
  const k = new Kernel();
  works.forEach((w, i) =>
    algo.build(k, { gpu, shape, features: f, ctaIndex: i, ctaCount: works.length, loadBytesPerClk: loadBw, drawn: events }, w),
  );
  return simulateKernel(k, { events });
}

function family(unit: string): string {
  const dot = unit.indexOf('.');
  return dot < 0 ? unit : unit.slice(0, dot);
}

/** SMs one grid entry holds: 2 for a cta_group::2 pair. */
export function smsPerEntry(sheet: { cta_group?: 1 | 2 }): number {
  return sheet.cta_group ?? 1;
}

export function simulateProblem(algo: HwAlgorithm, gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): SimulateResult {
  const sheet = algo.resources(gpu, shape, f);
  if (sheet.does_not_fit.length > 0) throw new FitError(sheet.does_not_fit);
  const { grid, counts, batches } = gridOf(algo, gpu, shape, f);
  const total = counts ? [...counts.values()].reduce((a, b) => a + b.m, 0) : grid.length;
  // The block scheduler spreads CTAs over all SMs before doubling up, so a grid smaller
  // than the SM count runs one CTA per SM.
  const span = smsPerEntry(sheet);
  const occ = Math.max(1, Math.min(sheet.ctas_per_sm, Math.ceil((total * span) / gpu.smCount)));
  const slotsTotal = Math.floor(gpu.smCount / span) * occ;
  const activeSms = Math.min(gpu.smCount, ceilDiv(total, occ) * span);
  const bw = loadBytesPerClk(gpu, algo, activeSms);

  // T and busy per distinct CTA cost class (K/V block count, masked steps), memoized; the grid's first CTA of each class stands for it.
  const keys = counts ? undefined : grid.map((c) => costKey(algo, gpu, shape, f, c));
  const protos = new Map<string, CtaWork>();
  if (counts) for (const [key, { proto }] of counts) protos.set(key, proto);
  else grid.forEach((c, i) => protos.has(keys![i]) || protos.set(keys![i], c));
  const memo = new Map<string, { t: number; busy: Record<string, number> }>();
  const exact = (n: number, key?: string) => {
    const id = key ?? `${n}`;
    let r = memo.get(id);
    if (!r) {
      // A CTA of its class from the grid; the extension's points are the first CTA of n blocks, else the first CTA cut or grown to n.
      const proto = (key !== undefined ? protos.get(key) : undefined) ?? grid.find((c) => kvCount(c) === n) ?? grid[0];
      const work: CtaWork = kvCount(proto) === n ? proto : { ...proto, kvFrom: 0, kvTo: n, kvList: undefined, kvFull: undefined };
      const run = runSm(
        algo,
        gpu,
        shape,
        f,
        Array.from({ length: occ }, () => work),
        bw,
        false,
      );
      r = { t: run.cycles, busy: run.unitBusy };
      memo.set(id, r);
    }
    return r;
  };
  const extended = new Map<number, { t: number; busy: Record<string, number> }>();
  const cost = (n: number, key: string) => {
    if (n <= EXACT_BLOCKS) return exact(n, key);
    const hit = extended.get(n);
    if (hit) return hit;
    const a = exact(N1);
    const b = exact(EXACT_BLOCKS);
    const x = (n - N1) / (EXACT_BLOCKS - N1);
    const busy: Record<string, number> = {};
    for (const u of new Set([...Object.keys(a.busy), ...Object.keys(b.busy)]))
      busy[u] = (a.busy[u] ?? 0) + x * ((b.busy[u] ?? 0) - (a.busy[u] ?? 0));
    const r = { t: a.t + x * (b.t - a.t), busy };
    extended.set(n, r);
    return r;
  };

  // Runs of equal CTAs (K/V block count n, cost class, how many) in the order the tile scheduler hands them out.
  const runs: { n: number; key: string; m: number }[] = [];
  const push = (n: number, key: string, m: number) => {
    const last = runs[runs.length - 1];
    if (last && last.key === key) last.m += m;
    else runs.push({ n, key, m });
  };
  // A static persistent scheduler deals tiles round robin in grid order (tile_idx += grid_dim), a counted grid batch by batch in closed form.
  const roundRobin = algo.staticPersistent?.(shape, gpu) ?? false;
  if (counts) for (const [key, { n, m }] of [...counts.entries()].sort((x, y) => y[1].n - x[1].n)) push(n, key, m);
  else {
    const order = grid.map((c, i) => ({ n: kvCount(c), key: keys![i], i }));
    const longestFirst = typeof algo.longestFirst === 'function' ? algo.longestFirst(shape) : algo.longestFirst;
    // The scheduler's LPT order applies to causal and local masks alike (flash_fwd_launch_template.h@0251105a l. 61: LPT = Is_causal || Is_local).
    if (!roundRobin && longestFirst && (shape.causal || shape.window !== undefined)) order.sort((x, y) => y.n - x.n || x.i - y.i);
    for (const { n, key } of order) push(n, key, 1);
  }
  // Slot free times: a min-heap under list scheduling, each persistent CTA's in CTA order under round robin.
  const heap: number[] = new Array(Math.min(slotsTotal, total)).fill(0);
  const siftDown = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && heap[l] < heap[m]) m = l;
      if (r < heap.length && heap[r] < heap[m]) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  };
  const spread = () => Math.max(...heap) - heap[0];
  const busyTotal: Record<string, number> = {};
  const unitsSeen = new Set<string>();
  let slotCycles = 0;
  let next = 0;
  for (const { n, key, m } of runs) {
    const c = cost(n, key);
    if (roundRobin && counts === undefined) next = dealRoundRobin(heap, next, m, c.t);
    else if (!roundRobin)
      for (let left = m; left > 0; ) {
        // While the slots free within one CTA's time of each other, a wave of equal CTAs
        // lands one on each slot: add whole waves at once (the heap order is unchanged). A
        // counted grid is placed in whole waves regardless (its order is approximate already).
        if (left >= heap.length && (counts !== undefined || spread() <= c.t)) {
          const waves = Math.floor(left / heap.length);
          for (let i = 0; i < heap.length; i++) heap[i] += waves * c.t;
          left -= waves * heap.length;
          continue;
        }
        for (let k = Math.min(left, heap.length); k > 0; k--, left--) {
          heap[0] += c.t;
          siftDown(0);
        }
      }
    slotCycles += m * c.t * span;
    for (const [u, v] of Object.entries(c.busy)) {
      unitsSeen.add(u);
      // A cta_group::2 MMA sits on the leader's queue but runs on both SMs' tensor cores.
      const both = span > 1 && u === 'tensor' ? span : 1;
      busyTotal[family(u)] = (busyTotal[family(u)] ?? 0) + (m * v * both) / occ;
    }
  }
  if (roundRobin && counts !== undefined) {
    const perBatch = grid.slice(0, grid.length / batches).map((c) => cost(kvCount(c), costKey(algo, gpu, shape, f, c)).t);
    heap.splice(0, heap.length, ...dealBatchesRoundRobin(perBatch, shape.batch, heap.length));
  }
  let cycles = 0;
  for (const t of heap) cycles = Math.max(cycles, t);
  const scheduleUs = cycles / (gpu.clockGHz * 1e3);
  const hbmBytes = algo.hbmBytes(shape, f, gpu);
  const hbmUs = (hbmBytes / gpu.hbmBytesPerSec) * 1e6;
  const extra = algo.epilogueKernelUs?.(gpu, shape, f) ?? 0;
  const kernelUs = Math.max(scheduleUs + (algo.crossCtaUs?.(gpu, shape, f, Math.ceil(total / slotsTotal)) ?? 0), hbmUs);
  const time_us = kernelUs + extra;
  // A varlen batch counts each sequence at its own lengths, not at the maximum.
  const flops = algo.flops?.(shape) ?? sequencesOf(shape).reduce((sum, s) => sum + nominalFlops(s), 0);
  const peak = (tensorRate(gpu, shape.dtype) * gpu.smCount * gpu.clockGHz) / 1e3;
  const smCycles = gpu.smCount * (kernelUs * gpu.clockGHz * 1e3);
  const utilization: Record<string, number> = {};
  for (const [u, v] of Object.entries(busyTotal)) {
    // Sub-partition units (tensor.sp0..3) each carry a quarter of the SM: average them.
    utilization[u] = round4(v / subPartitions([...unitsSeen], u) / smCycles);
  }
  utilization.sm = round4(slotCycles / occ / smCycles);
  return {
    algo: algo.id,
    gpu: gpu.id,
    time_us: round4(time_us),
    tflops: round4(flops / (time_us * 1e-6) / 1e12),
    flops,
    peak_tflops: round4(peak),
    peak_fraction: round4(flops / (time_us * 1e-6) / 1e12 / peak),
    cycles: Math.round(cycles),
    ctas: total * span,
    ctas_per_sm: occ,
    sms_busy: activeSms,
    sm_count: gpu.smCount,
    waves: round4(total / slotsTotal),
    utilization,
    bound: hbmUs > scheduleUs ? 'hbm' : 'schedule',
    hbm_bytes: Math.round(hbmBytes),
    extra_kernel_us: round4(extra),
    features: f,
  };
}

/** Deals `m` tiles of `t` cycles to CTAs from `next` on, one each in turn; returns the CTA the next tile goes to. */
function dealRoundRobin(ends: number[], next: number, m: number, t: number): number {
  const laps = Math.floor(m / ends.length);
  if (laps > 0) for (let i = 0; i < ends.length; i++) ends[i] += laps * t;
  for (let k = 0; k < m % ends.length; k++) ends[(next + k) % ends.length] += t;
  return (next + m) % ends.length;
}

/**
 * Each CTA's end when `batches` copies of one batch's tiles (cycles `perBatch`, in grid order) are
 * dealt round robin over `ctas` CTAs: CTA i runs tiles i, i + ctas, …, so in batch b it runs the
 * tiles p ≡ i − b·P (mod ctas) of the batch's P. That residue repeats every ctas / gcd(P, ctas)
 * batches, so no tile of the full grid is ever listed.
 */
export function dealBatchesRoundRobin(perBatch: number[], batches: number, ctas: number): number[] {
  const P = perBatch.length;
  const byResidue = new Array<number>(ctas).fill(0);
  perBatch.forEach((t, p) => {
    byResidue[p % ctas] += t;
  });
  const period = ctas / gcd(P, ctas);
  const laps = Math.floor(batches / period);
  const rest = batches % period;
  return Array.from({ length: ctas }, (_, i) => {
    let lap = 0;
    let tail = 0;
    for (let b = 0; b < Math.min(period, batches); b++) {
      const t = byResidue[(((i - b * P) % ctas) + ctas) % ctas];
      lap += t;
      if (b < rest) tail += t;
    }
    return laps * lap + tail;
  });
}

/**
 * The grid as objects when it holds at most MAX_GRID_CTAS CTAs. Otherwise a grid of fewer
 * batches (grids repeat per batch) and the full grid's CTA count per cost class (costKey).
 */
export function gridOf(
  algo: HwAlgorithm,
  gpu: GpuSpec,
  shape: ProblemShape,
  f: HwFeatures,
): { grid: CtaWork[]; counts?: Map<string, { n: number; m: number; proto: CtaWork }>; batches: number } {
  if (shape.varlen || shape.batch === 1) return { grid: checkedGrid(algo, gpu, shape, f), batches: shape.batch };
  const perBatch = checkedGrid(algo, gpu, { ...shape, batch: 1 }, f).length;
  if (perBatch * shape.batch <= MAX_GRID_CTAS) return { grid: algo.grid(gpu, shape, f), batches: shape.batch };
  const batches = Math.max(1, Math.min(shape.batch, Math.floor(MAX_GRID_CTAS / Math.max(1, perBatch))));
  const grid = algo.grid(gpu, { ...shape, batch: batches }, f);
  const counts = new Map<string, { n: number; m: number; proto: CtaWork }>();
  for (const c of grid) {
    const key = costKey(algo, gpu, shape, f, c);
    const hit = counts.get(key);
    if (hit) hit.m++;
    else counts.set(key, { n: kvCount(c), m: 1, proto: c });
  }
  for (const v of counts.values()) v.m = Math.round((v.m * shape.batch) / batches);
  return { grid, counts, batches };
}

/**
 * What a CTA's cost depends on besides its K/V block count: the blocks it runs the masking step
 * on (causal diagonals, window edges, a block-sparse CTA's partial blocks). CTAs alike in both are
 * simulated once; past EXACT_BLOCKS the extension is by block count alone.
 */
export function costKey(algo: HwAlgorithm, gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, c: CtaWork): string {
  const n = kvCount(c);
  return n > EXACT_BLOCKS || algo.maskedSteps === undefined ? `${n}` : `${n}:${algo.maskedSteps(gpu, shape, f, c)}`;
}

/** One batch's grid, refused when even that is too many CTAs to list. */
function checkedGrid(algo: HwAlgorithm, gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): CtaWork[] {
  const rows = shape.varlen ? shape.nq : shape.hq * shape.nq;
  // Every schedule's Q tile has at least 64 rows; a bound on the CTA count before any CTA is listed.
  if (rows / 64 > 16 * MAX_GRID_CTAS) {
    throw new FitError([`one batch's grid would hold about ${Math.ceil(rows / 64)} CTAs (hq × nq / 64); make hq or nq smaller`]);
  }
  return algo.grid(gpu, shape, f);
}

function subPartitions(units: string[], fam: string): number {
  const n = units.filter((u) => u.startsWith(`${fam}.sp`)).length;
  return n > 0 ? n : 1;
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
