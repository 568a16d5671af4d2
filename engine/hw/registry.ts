// The hardware model's entry points, given the kernel's schedule (HwAlgorithm): describeWith()
// builds the resource sheet, scheduleWith() one SM's schedule with events, simulateWith() the
// whole GPU. Finding an algorithm's schedule by id is the algorithms' side
// (engine/algorithms/schedule-registry.ts); nothing here looks algorithms up.

import { validateProblem, type AttentionProblem } from '../core/problem.ts';
import type { MemoryEvent, ResourceSheet, RoleInfo, TimelineEvent } from './events.ts';
import { gpuById, type GpuSpec } from './gpus/index.ts';
import { DEFAULT_FEATURES, featureKeysOf, flagOf, type FeatureKey, type HwAlgorithm, type HwFeatures, type ProblemShape } from './model.ts';
import { FitError, loadBytesPerClk, runSm, smsPerEntry, simulateProblem, type SimulateResult } from './simulate.ts';

/** Which pass a schedule models: the forward kernel, or the backward (dQ, dK, dV from dO). */
export type HwPass = 'forward' | 'backward';

/** Merges requested switches with the defaults and rejects those the algorithm does not have. */
export function resolveFeatures(algo: HwAlgorithm, given: Partial<HwFeatures>): HwFeatures {
  const f: HwFeatures = { ...DEFAULT_FEATURES };
  const keys = featureKeysOf(algo);
  for (const [key, v] of Object.entries(given) as [FeatureKey, boolean | number | number[] | undefined][]) {
    if (v === undefined) continue;
    if (key === 'rescaleAt') {
      if (!keys.includes(key)) throw new Error(`rescaleAt does not apply to ${algo.id}`);
      if (!Array.isArray(v) || !v.every((i) => Number.isInteger(i) && i >= 0))
        throw new Error('rescaleAt must be a list of K/V iteration indices (integers >= 0)');
      f.rescaleAt = v;
      continue;
    }
    const isDefault =
      typeof v === 'boolean' &&
      (v === (DEFAULT_FEATURES as unknown as Record<string, unknown>)[key] || (key === 'deterministic' && v === false));
    if (!keys.includes(key) && !isDefault) {
      throw new Error(`${flagOf(key)} does not apply to ${algo.id}; its switches: ${keys.map(flagOf).join(', ') || 'none'}`);
    }
    if ((key === 'stages' || key === 'splits') && !(typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 64)) {
      throw new Error(`${flagOf(key)} must be an integer from 1 to 64, got ${String(v)}`);
    }
    (f as unknown as Record<string, unknown>)[key] = v;
  }
  return f;
}

export function shapeOf(p: AttentionProblem): ProblemShape {
  validateProblem(p);
  return {
    batch: p.batch,
    hq: p.hq,
    hk: p.hk,
    nq: p.nq,
    nk: p.nk,
    d: p.d,
    dv: p.dv,
    dtype: p.dtype,
    causal: p.causal,
    ...(p.window && (p.window.left >= 0 || p.window.right >= 0) ? { window: { ...p.window } } : {}),
    ...(p.attentionChunk !== undefined ? { attentionChunk: p.attentionChunk } : {}),
    ...(p.softcap !== undefined ? { softcap: p.softcap } : {}),
    ...(p.mask?.maskMod !== undefined ? { mask: p.mask } : {}),
  };
}

export function checkArch(algo: HwAlgorithm, gpu: GpuSpec): void {
  if (!algo.arch.includes(gpu.sm)) {
    throw new Error(`${algo.id} is written for SM${algo.arch.join('/SM')}; ${gpu.name} is SM${gpu.sm}`);
  }
}

export function describeWith(algo: HwAlgorithm, gpuId: string, shape: ProblemShape, given: Partial<HwFeatures> = {}): ResourceSheet {
  const gpu = gpuById(gpuId);
  checkArch(algo, gpu);
  return algo.resources(gpu, shape, resolveFeatures(algo, given));
}

export function simulateWith(algo: HwAlgorithm, gpuId: string, shape: ProblemShape, given: Partial<HwFeatures> = {}): SimulateResult {
  const gpu = gpuById(gpuId);
  checkArch(algo, gpu);
  return simulateProblem(algo, gpu, shape, resolveFeatures(algo, given));
}

export interface HwSchedule {
  algo: string;
  pass: HwPass;
  gpu: string;
  roles: RoleInfo[];
  timeline: TimelineEvent[];
  memory: MemoryEvent[];
  resources: ResourceSheet;
  /** Cycles one SM needs for the CTAs it holds in the first wave. */
  cycles: number;
  /** Busy fraction of each unit over those cycles. */
  utilization: Record<string, number>;
}

/**
 * One SM's schedule with every timeline and memory event: the first wave's CTAs of SM 0
 * (ctas_per_sm of them). This is what the hardware views draw.
 */
export function scheduleWith(
  algo: HwAlgorithm,
  gpuId: string,
  shape: ProblemShape,
  given: Partial<HwFeatures> = {},
  pass: HwPass = 'forward',
): HwSchedule {
  const gpu = gpuById(gpuId);
  checkArch(algo, gpu);
  const f = resolveFeatures(algo, given);
  const resources = algo.resources(gpu, shape, f);
  if (resources.does_not_fit.length > 0) throw new FitError(resources.does_not_fit);
  const grid = algo.grid(gpu, shape, f);
  const span = smsPerEntry(resources);
  const occ = Math.max(1, Math.min(resources.ctas_per_sm, Math.ceil((grid.length * span) / gpu.smCount)));
  const works = grid.slice(0, occ);
  const bw = loadBytesPerClk(gpu, algo, Math.min(gpu.smCount, Math.ceil(grid.length / occ) * span));
  const run = runSm(algo, gpu, shape, f, works, bw, true);
  const utilization: Record<string, number> = {};
  for (const [u, v] of Object.entries(run.unitBusy)) utilization[u] = run.cycles > 0 ? Math.round((v / run.cycles) * 1e4) / 1e4 : 0;
  return {
    algo: algo.id,
    pass,
    gpu: gpu.id,
    roles: run.roles,
    timeline: run.timeline,
    memory: run.memory,
    resources,
    cycles: run.cycles,
    utilization,
  };
}
