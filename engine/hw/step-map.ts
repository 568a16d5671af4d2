// Where the debugger's position (a step of the numeric trace) is on the hardware schedule
// (a cycle of one SM), and back. The hardware views draw one SM: the CTA that owns the
// current step plus the CTAs that share its SM (grid order, ctas_per_sm of them).
//
// The mapping, stated once:
// 1. Tiles by coordinates, not by index. The numeric trace and the hardware schedule may
//    use different block sizes (the debugger lets the person pick Br/Bc; the schedules use
//    the kernel's tiles), so a numeric event is placed by its query rows and key columns:
//    its CTA is the grid entry whose rows hold the event's first row (for split-KV also
//    whose K/V range holds its first column); its hardware K/V blocks are those its
//    columns overlap; its sub-unit (FA4 softmax stage, FA3 consumer warpgroup, a warp of
//    the SM80-style kernels) is the one whose rows it overlaps.
// 2. Every schedule op carries its phase, set where the schedule builds it: the phase kinds
//    it carries out, the K/V block, the sub-unit and, for copies, the tensors (op labels are
//    for display only).
// 3. The cursor of a step is the END of the latest-ending op of the same CTA, a phase kind
//    equal to the step's, an overlapping K/V block and sub-unit: the moment the hardware
//    has done what that step shows. When the schedule has no op of that kind (e.g. a mask
//    phase the kernel folds into the softmax), the kind before it in the phase order is
//    used and the step is marked approximate.
// 4. Clicking an op seeks to the first step that maps onto it; an op no step maps onto
//    (a barrier wait) seeks to the last step whose cursor is at or before the click.

import { StepPlacer } from './step-placement.ts';
import type { PhaseKind, TraceEvent } from '../trace/events.ts';
import type { ResourceSheet, TimelineEvent } from './events.ts';
import { gpuById } from './gpus/index.ts';
import { kvBlocksOf, viewSwitchesOf, type CtaWork, type HwAlgorithm, type ProblemShape } from './model.ts';
import { resolveFeatures, shapeOf } from './registry.ts';
import {
  classifyOps,
  memoryIntervals,
  toColumns,
  type Geometry,
  type HwView,
  type HwViewRequest,
  type OpPhase,
  type SmCta,
  type SmSchedule,
  type StepMap,
} from './sm-view.ts';
import { FitError, loadBytesPerClk, runSm, smsPerEntry } from './simulate.ts';

export function geometryOf(algo: HwAlgorithm, sheet: ResourceSheet, shape: ProblemShape): Geometry {
  const g = algo.geometry?.(sheet, shape) ?? { ctaRows: sheet.tiles.block_m, subRows: sheet.tiles.block_m };
  return { ...g, blockN: sheet.tiles.block_n };
}

/** When a kernel has no op of a step's kind, the kind before it in the phase order stands in. */
const STAND_IN: Partial<Record<PhaseKind, PhaseKind>> = {
  mask: 'qk',
  rowmax: 'mask',
  exp: 'rowmax',
  rowsum: 'exp',
  rescale: 'rowmax',
  pv: 'rowsum',
  normalize: 'pv',
  write: 'normalize',
};

/** CTA on this SM that owns the event, or -1. Split-KV CTAs are told apart by the event's first column. */
function ctaOfEvent(ctas: readonly SmCta[], geo: Geometry, ev: TraceEvent, col: number | null): number {
  const r0 = ev.tile.rows[0];
  for (let i = 0; i < ctas.length; i++) {
    const c = ctas[i];
    if (c.b !== ev.b || c.h !== ev.h || r0 < c.rows[0] || r0 >= c.rows[1]) continue;
    if (
      col !== null &&
      ctas.some((o, k) => k !== i && o.b === c.b && o.h === c.h && o.rows[0] === c.rows[0]) &&
      !c.kvBlocks.includes(Math.floor(col / geo.blockN))
    )
      continue;
    return i;
  }
  return -1;
}

export function buildStepMap(
  events: readonly TraceEvent[],
  timeline: readonly TimelineEvent[],
  phases: readonly (OpPhase | null)[],
  ctas: readonly SmCta[],
  geo: Geometry,
): StepMap {
  const n = events.length;
  const placer = new StepPlacer(n, timeline, phases, STAND_IN);
  // Split-KV: steps without columns (Q load, epilogue) belong to the CTA of their split's
  // column-bearing steps; found in a first pass.
  const splitCta = new Map<string, number>();
  const splitKey = (e: TraceEvent) => `${e.b},${e.h},${e.tile.qBlock},${e.split ?? 0}`;
  const ctaOf = new Int32Array(n).fill(-1);
  for (let s = 0; s < n; s++) {
    const e = events[s];
    const hasCols = e.tile.cols[1] > e.tile.cols[0];
    if (!hasCols) continue;
    ctaOf[s] = ctaOfEvent(ctas, geo, e, e.tile.cols[0]);
    if (e.split !== undefined && ctaOf[s] >= 0) splitCta.set(splitKey(e), ctaOf[s]);
  }
  for (let s = 0; s < n; s++) {
    const e = events[s];
    if (e.tile.cols[1] > e.tile.cols[0]) continue;
    ctaOf[s] = e.split !== undefined ? (splitCta.get(splitKey(e)) ?? -1) : ctaOfEvent(ctas, geo, e, null);
  }
  for (let s = 0; s < n; s++) {
    const c = ctaOf[s];
    if (c < 0) continue;
    const e = events[s];
    if (e.kind === 'combine') continue; // the combine kernel runs after this one, on no SM timeline
    const cta = ctas[c];
    const [r0, r1] = e.tile.rows;
    const lo = Math.max(r0, cta.rows[0]) - cta.rows[0];
    const hi = Math.min(r1, cta.rows[1]) - 1 - cta.rows[0];
    const subLo = Math.floor(lo / geo.subRows);
    const subHi = Math.floor(hi / geo.subRows);
    const [c0, c1] = e.tile.cols;
    const kvLo = c1 > c0 ? Math.floor(c0 / geo.blockN) : null;
    const kvHi = c1 > c0 ? Math.floor((c1 - 1) / geo.blockN) : null;
    const tensors = e.kind === 'load' || e.kind === 'write' ? e.tensors : null;
    placer.place(s, c, e.kind, (p, kind, own) => {
      if (p.sub !== null && ((p.subEnd ?? p.sub) < subLo || p.sub > subHi)) return false;
      if (kvLo !== null && p.kv !== null && (p.kv < kvLo || p.kv > kvHi!)) return false;
      if (kvLo === null && p.kv !== null && kind !== 'load' && kind !== 'write') return false;
      if (tensors && own) {
        if (!p.tensors.some((t) => tensors.includes(t as never) || (t === 'O' && tensors.some((x) => String(x).startsWith('O')))))
          return false;
        // A K/V copy is placed by its block; a Q copy (no columns) matches copies that carry Q.
        if (kvLo === null && p.kv !== null && !(p.tensors.includes('Q') && tensors.includes('Q' as never))) return false;
      }
      return true;
    });
  }
  return placer.map;
}

/** A step in a GQA-packing kernel's coordinates: its KV head, and the packed rows of its first and last query row. */
function packedEvent(e: TraceEvent, ratio: number): TraceEvent {
  const within = e.h % ratio;
  const [r0, r1] = e.tile.rows;
  return { ...e, h: Math.floor(e.h / ratio), tile: { ...e.tile, rows: [r0 * ratio + within, Math.max(r0, r1 - 1) * ratio + within + 1] } };
}

/** Builds the forward schedule `algo` gives the SM that runs `events[req.step]`'s CTA, and the step ↔ cycle map. */
export function forwardSmSchedule(algo: HwAlgorithm, req: HwViewRequest, events: readonly TraceEvent[]): SmSchedule {
  const gpu = gpuById(req.gpu);
  if (!algo.arch.includes(gpu.sm)) throw new Error(`${algo.id} is written for SM${algo.arch.join('/SM')}; ${gpu.name} is SM${gpu.sm}`);
  const shape = shapeOf(req.problem);
  const f = resolveFeatures(algo, req.features);
  const resources = algo.resources(gpu, shape, f);
  if (resources.does_not_fit.length > 0) throw new FitError(resources.does_not_fit);
  const geo = geometryOf(algo, resources, shape);
  const grid = algo.grid(gpu, shape, f);
  // A kernel that packs GQA tiles the Q heads of a KV head together (row m = Q head within the
  // group + ratio · query row): the steps are placed in those packed coordinates.
  const ratio = resources.upstream?.config.pack_gqa === true ? Math.ceil(shape.hq / shape.hk) : 1;
  const rowsTotal = shape.nq * ratio;
  const steps = ratio > 1 ? events.map((e) => packedEvent(e, ratio)) : events;
  const span = smsPerEntry(resources);
  const occ = Math.max(1, Math.min(resources.ctas_per_sm, Math.ceil((grid.length * span) / gpu.smCount)));
  const asCta = (w: CtaWork): SmCta => ({
    b: w.b,
    h: w.h,
    qBlock: w.qBlock,
    split: w.split,
    rows: [w.qBlock * geo.ctaRows, Math.min(rowsTotal, (w.qBlock + 1) * geo.ctaRows)],
    kvBlocks: kvBlocksOf(w),
  });
  const all = grid.map(asCta);
  // The CTA of the step, found the same way the step map finds it.
  const ev = steps[Math.max(0, Math.min(steps.length - 1, req.step))];
  let target = 0;
  if (ev) {
    const col = ev.tile.cols[1] > ev.tile.cols[0] ? ev.tile.cols[0] : null;
    const i = ctaOfEvent(all, geo, ev, col);
    if (i >= 0) target = i;
    else if (ev.split !== undefined)
      target = Math.max(
        0,
        all.findIndex(
          (c) => c.b === ev.b && c.h === ev.h && c.split === ev.split && ev.tile.rows[0] >= c.rows[0] && ev.tile.rows[0] < c.rows[1],
        ),
      );
  }
  const first = Math.floor(target / occ) * occ;
  const works = grid.slice(first, first + occ);
  // FA4's lazy correction rescales O only at the iterations where the numeric run had to
  // (a row max grew by more than 2^8): take them from the trace unless the caller set them.
  let features = f;
  if (algo.switches.rescaleAt && f.lazyRescale && req.features.rescaleAt === undefined && works[0]) {
    const c = asCta(works[0]);
    const at = new Set<number>();
    for (const e of steps) {
      if (e.kind !== 'rescale' || e.b !== c.b || e.h !== c.h || e.tile.rows[0] < c.rows[0] || e.tile.rows[0] >= c.rows[1]) continue;
      const i = c.kvBlocks.indexOf(Math.floor(e.tile.cols[0] / geo.blockN));
      if (i > 0) at.add(i);
    }
    features = { ...f, rescaleAt: [...at].sort((x, y) => x - y) };
  }
  const bw = loadBytesPerClk(gpu, algo, Math.min(gpu.smCount, Math.ceil(grid.length / occ) * span));
  const run = runSm(algo, gpu, shape, features, works, bw, true);
  const ctas = works.map(asCta);
  const phases = classifyOps(run.timeline);
  const map = buildStepMap(steps, run.timeline, phases, ctas, geo);
  const utilization: Record<string, number> = {};
  for (const [u, v] of Object.entries(run.unitBusy)) utilization[u] = run.cycles > 0 ? v / run.cycles : 0;
  const view: HwView = {
    algo: algo.id,
    algoName: algo.name,
    gpu: gpu.id,
    gpuName: gpu.name,
    clockGHz: gpu.clockGHz,
    features,
    switches: viewSwitchesOf(algo, shape),
    roles: run.roles,
    timeline: toColumns(run.timeline, run.roles),
    opKinds: phases.map((p) => (p ? p.kinds.join('+') + (p.kv !== null ? ` · K/V block ${p.kv}` : '') : '')),
    memory: memoryIntervals(run.memory, run.cycles),
    resources,
    cycles: run.cycles,
    utilization,
    ctas,
    firstCta: first,
    gridCtas: grid.length,
    geometry: geo,
    map,
  };
  return { view, timeline: run.timeline, memory: run.memory };
}
