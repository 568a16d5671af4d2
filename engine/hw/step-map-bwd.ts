// The hardware views for the backward pass: the SM that runs the current backward step's
// CTA, and the step ↔ cycle map, like step-map.ts does for the forward.
//
// A backward CTA owns a column block n (block_n keys) of one (batch, query head) and walks
// the row blocks m that see those keys (backward.ts). So a numeric backward step is placed
// by its COLUMNS: its CTA is the one whose column block holds the step's first key; its
// row block is the hardware row block holding its first row (the debugger's Br/Bc may differ
// from the kernel's tiles, so blocks are found by coordinates, never by index). Every op
// of the schedule carries a phase kind of the backward trace (qk, mask, recompute, dp, ds,
// dv, dq, dk, load, write), its row block and, for FA3, its consumer warpgroup (each takes
// a slice of the keys). The cursor of a step is the END of the latest-ending op of the same
// CTA, kind, row block and consumer; when the kernel has no op of that kind, the kind
// before it in the backward's order stands in and the step is marked approximate. Steps of
// the kernels around the main one (D = rowsum(dO ∘ O), the dQ conversion) are on no SM
// timeline of the main kernel: their cursor is NaN, like the forward's combine.

import { StepPlacer } from './step-placement.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { PhaseKind, TraceEvent } from '../trace/events.ts';
import type { TimelineEvent } from './events.ts';
import { gpuById } from './gpus/index.ts';
import { viewSwitchesOf, type CtaWork, type HwAlgorithm, type HwFeatures } from './model.ts';
import { resolveFeatures, shapeOf } from './registry.ts';
import { FitError, loadBytesPerClk, runSm } from './simulate.ts';
import {
  classifyOps,
  memoryIntervals,
  toColumns,
  type HwView,
  type OpPhase,
  type SmCta,
  type SmSchedule,
  type StepMap,
} from './sm-view.ts';

/** Geometry of a backward CTA: keys per CTA, keys per consumer slice, rows per row block. */
export interface BwdGeometry {
  blockN: number;
  blockM: number;
  /** Keys each consumer warpgroup takes (FA3); block_n where every warp shares every op (FA2). */
  subKeys: number;
}

/** The kind before each in the backward's order, for kernels with no op of a step's own kind. */
const STAND_IN: Partial<Record<PhaseKind, PhaseKind>> = {
  mask: 'qk',
  recompute: 'mask',
  dp: 'recompute',
  ds: 'dp',
  dv: 'ds',
  dq: 'ds',
  dk: 'dq',
  write: 'dk',
};

/** CTA on this SM that owns a backward event (by its first key), or -1 (steps with no keys belong to no CTA). */
function ctaOfEvent(ctas: readonly SmCta[], geo: BwdGeometry, ev: TraceEvent): number {
  if (ev.tile.cols[1] <= ev.tile.cols[0]) return -1;
  const n = Math.floor(ev.tile.cols[0] / geo.blockN);
  return ctas.findIndex((c) => c.b === ev.b && c.h === ev.h && c.kvBlocks[0] === n);
}

export function buildBackwardStepMap(
  events: readonly TraceEvent[],
  timeline: readonly TimelineEvent[],
  phases: readonly (OpPhase | null)[],
  ctas: readonly SmCta[],
  geo: BwdGeometry,
): StepMap {
  const n = events.length;
  const placer = new StepPlacer(n, timeline, phases, STAND_IN);
  for (let s = 0; s < n; s++) {
    const e = events[s];
    const c = ctaOfEvent(ctas, geo, e);
    if (c < 0) continue;
    const key0 = ctas[c].kvBlocks[0] * geo.blockN;
    const [c0, c1] = e.tile.cols;
    const subLo = Math.floor((Math.max(c0, key0) - key0) / geo.subKeys);
    const subHi = Math.floor((Math.min(c1, key0 + geo.blockN) - 1 - key0) / geo.subKeys);
    const [r0, r1] = e.tile.rows;
    const mLo = r1 > r0 ? Math.floor(r0 / geo.blockM) : null;
    const mHi = r1 > r0 ? Math.floor((r1 - 1) / geo.blockM) : null;
    const tensors = e.kind === 'load' || e.kind === 'write' ? (e.tensors as readonly string[]) : null;
    placer.place(s, c, e.kind, (p, _kind, own) => {
      if (p.sub !== null && ((p.subEnd ?? p.sub) < subLo || p.sub > subHi)) return false;
      if (mLo === null ? p.kv !== null : p.kv === null || p.kv < mLo || p.kv > mHi!) return false;
      return !(tensors && own && !p.tensors.some((t) => tensors.includes(t)));
    });
  }
  return placer.map;
}

export interface BwdViewRequest {
  algorithm: string;
  gpu: string;
  problem: AttentionProblem;
  features: Partial<HwFeatures>;
  step: number;
}

/** Builds the backward schedule of the SM that runs `events[req.step]`'s column block, and its step ↔ cycle map. */
export function backwardSmSchedule(algo: HwAlgorithm, req: BwdViewRequest, events: readonly TraceEvent[]): SmSchedule {
  const gpu = gpuById(req.gpu);
  if (!algo.arch.includes(gpu.sm))
    throw new Error(`the ${algo.id} backward is written for SM${algo.arch.join('/SM')}; ${gpu.name} is SM${gpu.sm}`);
  const shape = shapeOf(req.problem);
  const f = resolveFeatures(algo, req.features);
  const resources = algo.resources(gpu, shape, f);
  if (resources.does_not_fit.length > 0) throw new FitError(resources.does_not_fit);
  const blockM = resources.tiles.block_m;
  const blockN = resources.tiles.block_n;
  const geo: BwdGeometry = { blockM, blockN, subKeys: algo.geometry?.(resources, shape).subRows ?? blockN };
  const grid = algo.grid(gpu, shape, f);
  const occ = Math.max(1, Math.min(resources.ctas_per_sm, Math.ceil(grid.length / gpu.smCount)));
  const asCta = (w: CtaWork): SmCta => ({
    b: w.b,
    h: w.h,
    qBlock: w.qBlock,
    split: 0,
    rows: [w.kvFrom * blockM, Math.min(shape.nq, w.kvTo * blockM)],
    kvBlocks: [w.qBlock],
    keys: [w.qBlock * blockN, Math.min(shape.nk, (w.qBlock + 1) * blockN)],
  });
  const all = grid.map(asCta);
  const ev = events[Math.max(0, Math.min(events.length - 1, req.step))];
  let target = 0;
  if (ev) {
    const i = ctaOfEvent(all, geo, ev);
    // A step with no keys (D, the dQ conversion) keeps the head's first column block in view.
    target =
      i >= 0
        ? i
        : Math.max(
            0,
            all.findIndex((c) => c.b === ev.b && c.h === ev.h),
          );
  }
  const first = Math.floor(target / occ) * occ;
  const works = grid.slice(first, first + occ);
  const bw = loadBytesPerClk(gpu, algo, Math.min(gpu.smCount, Math.ceil(grid.length / occ)));
  const run = runSm(algo, gpu, shape, f, works, bw, true);
  const ctas = works.map(asCta);
  const phases = classifyOps(run.timeline);
  const map = buildBackwardStepMap(events, run.timeline, phases, ctas, geo);
  const utilization: Record<string, number> = {};
  for (const [u, v] of Object.entries(run.unitBusy)) utilization[u] = run.cycles > 0 ? v / run.cycles : 0;
  const view: HwView = {
    algo: algo.id,
    algoName: algo.name,
    gpu: gpu.id,
    gpuName: gpu.name,
    clockGHz: gpu.clockGHz,
    features: f,
    switches: viewSwitchesOf(algo, shape),
    roles: run.roles,
    timeline: toColumns(run.timeline, run.roles),
    opKinds: phases.map((p) => (p ? p.kinds.join('+') + (p.kv !== null ? ` · row block ${p.kv}` : '') : '')),
    memory: memoryIntervals(run.memory, run.cycles),
    resources,
    cycles: run.cycles,
    utilization,
    ctas,
    firstCta: first,
    gridCtas: grid.length,
    geometry: { ctaRows: blockN, subRows: geo.subKeys, blockN },
    map,
    pass: 'backward',
  };
  return { view, timeline: run.timeline, memory: run.memory };
}
