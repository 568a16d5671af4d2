// What the hardware views receive from the worker: one SM's schedule in columns, its buffer
// occupancy as intervals and the step <-> cycle map (built by step-map.ts and step-map-bwd.ts),
// with the two pure helpers the views call on them.

import type { AttentionProblem } from '../core/problem.ts';
import type { PhaseKind } from '../trace/events.ts';
import type { MemoryEvent, MemorySpace, ResourceSheet, RoleInfo, TimelineEvent } from './events.ts';
import type { HwFeatures, HwViewSwitch } from './model.ts';
import type { HwPass } from './registry.ts';

/** What one schedule op does, in the numeric trace's terms. */
export interface OpPhase {
  /** Index of the CTA on this SM (the "ctaN/" role prefix), 0 when alone. */
  cta: number;
  kinds: PhaseKind[];
  /** Hardware K/V block index, null when the op concerns none (Q load, epilogue). */
  kv: number | null;
  /** Sub-unit (FA4 Q stage, FA3 consumer, warp index), null when the op serves the whole CTA. */
  sub: number | null;
  /** Last sub-unit the op serves (a cta_group::2 MMA serves a tile of each CTA of the pair); absent: only sub. */
  subEnd?: number;
  /** Tensors a copy moves ("Q", "K", "V", "O"). */
  tensors: string[];
}

/** Rows per sub-unit and rows per CTA, from the resource sheet. */
export interface Geometry {
  ctaRows: number;
  subRows: number;
  blockN: number;
}

export interface StepMap {
  /** Cursor cycle per numeric step; NaN for steps of CTAs not on this SM (and the combine kernel). */
  stepCycle: Float64Array;
  /** The op whose end is the cursor, -1 when none. */
  stepOp: Int32Array;
  /** 1 where the step's own phase kind had no op and a stand-in kind was used. */
  stepApprox: Uint8Array;
  /** First numeric step that maps onto each op, -1 when none does. */
  opStep: Int32Array;
}

export interface SmCta {
  b: number;
  h: number;
  qBlock: number;
  split: number;
  rows: [number, number];
  kvBlocks: number[];
  /** Backward CTAs: the keys of their column block (rows are then the rows they visit). */
  keys?: [number, number];
}

/** A buffer's occupancy: filled at `start` (data complete at `ready`), released at `end`. */
export interface MemInterval {
  space: MemorySpace;
  buffer: string;
  stage: number;
  offset: number;
  bytes: number;
  tile: string;
  role: string;
  start: number;
  ready: number;
  end: number;
}

/**
 * Pairs each fill with the release of the same buffer, stage and tile. Register fills are
 * never released: a newer fill of the same register buffer ends the older one. A fill
 * nothing releases lasts to the end of the kernel.
 */
export function memoryIntervals(memory: readonly MemoryEvent[], cycles: number): MemInterval[] {
  const out: MemInterval[] = [];
  const open = new Map<string, number[]>();
  const openRegs = new Map<string, number>();
  for (const m of memory) {
    const key = `${m.space}|${m.buffer}|${m.stage}|${m.tile}`;
    if (m.action === 'fill') {
      if (m.space === 'regs') {
        const rk = `${m.buffer}|${m.stage}`;
        const prev = openRegs.get(rk);
        if (prev !== undefined) out[prev].end = m.t;
        openRegs.set(rk, out.length);
      } else {
        let l = open.get(key);
        if (!l) open.set(key, (l = []));
        l.push(out.length);
      }
      out.push({
        space: m.space,
        buffer: m.buffer,
        stage: m.stage,
        offset: m.offset,
        bytes: m.bytes,
        tile: m.tile,
        role: m.role,
        start: m.t,
        ready: m.ready ?? m.t,
        end: cycles,
      });
    } else if (m.action === 'release') {
      const l = open.get(key);
      const i = l?.shift();
      if (i !== undefined) out[i].end = m.t;
    }
  }
  return out;
}

/** Intervals live at cycle t (filling or ready). */
export function liveAt(intervals: readonly MemInterval[], t: number): MemInterval[] {
  return intervals.filter((x) => x.start <= t && t < x.end);
}

/** Timeline in columns: cheap to transfer from the worker and to scan while drawing. */
export interface TimelineColumns {
  count: number;
  start: Float64Array;
  end: Float64Array;
  role: Int32Array;
  /** Index into `strings`. */
  unit: Int32Array;
  op: Int32Array;
  tile: Int32Array;
  async: Uint8Array;
  /** waitedOn of op i: deps[depStart[i] .. depStart[i + 1]). */
  depStart: Int32Array;
  deps: Int32Array;
  strings: string[];
}

export function toColumns(timeline: readonly TimelineEvent[], roles: readonly RoleInfo[]): TimelineColumns {
  const n = timeline.length;
  const strings: string[] = [];
  const ids = new Map<string, number>();
  const str = (s: string) => {
    let i = ids.get(s);
    if (i === undefined) ids.set(s, (i = strings.push(s) - 1));
    return i;
  };
  const roleIdx = new Map(roles.map((r, i) => [r.name, i]));
  const idPos = new Map<number, number>();
  timeline.forEach((e, i) => idPos.set(e.id, i));
  const c: TimelineColumns = {
    count: n,
    start: new Float64Array(n),
    end: new Float64Array(n),
    role: new Int32Array(n),
    unit: new Int32Array(n),
    op: new Int32Array(n),
    tile: new Int32Array(n),
    async: new Uint8Array(n),
    depStart: new Int32Array(n + 1),
    deps: new Int32Array(timeline.reduce((a, e) => a + e.waitedOn.length, 0)),
    strings,
  };
  let d = 0;
  timeline.forEach((e, i) => {
    c.start[i] = e.start;
    c.end[i] = e.end;
    c.role[i] = roleIdx.get(e.role) ?? -1;
    c.unit[i] = str(e.unit);
    c.op[i] = str(e.op);
    c.tile[i] = str(e.tile);
    c.async[i] = e.async ? 1 : 0;
    c.depStart[i] = d;
    for (const w of e.waitedOn) c.deps[d++] = idPos.get(w) ?? -1;
  });
  c.depStart[n] = d;
  return c;
}

export interface HwViewRequest {
  algorithm: string;
  gpu: string;
  problem: AttentionProblem;
  features: Partial<HwFeatures>;
  /** The debugger's position: the SM shown is the one running this step's CTA. */
  step: number;
  /** 'backward': the backward kernel's schedule, placed by the backward steps' columns (step-map-bwd.ts). */
  pass?: HwPass;
}

export interface HwView {
  algo: string;
  algoName: string;
  gpu: string;
  gpuName: string;
  clockGHz: number;
  features: HwFeatures;
  switches: HwViewSwitch[];
  roles: RoleInfo[];
  timeline: TimelineColumns;
  /** Op classification for tooltips and the click-to-seek fallback. */
  opKinds: string[];
  memory: MemInterval[];
  resources: ResourceSheet;
  cycles: number;
  utilization: Record<string, number>;
  ctas: SmCta[];
  /** Position of this SM's first CTA in the grid, and the grid size. */
  firstCta: number;
  gridCtas: number;
  geometry: Geometry;
  map: StepMap;
  /** Present on backward views: CTAs are column blocks, geometry.blockN the keys per CTA. */
  pass?: 'backward';
}

/** The SM schedule (with the full objects, for export) behind an HwView. */
export interface SmSchedule {
  view: HwView;
  timeline: TimelineEvent[];
  memory: MemoryEvent[];
}

/** The step a click at `cycle` on op `op` (or on empty space when op < 0) seeks to. */
export function stepForClick(map: StepMap, op: number, cycle: number): number {
  if (op >= 0 && map.opStep[op] >= 0) return map.opStep[op];
  let best = -1;
  let bestCycle = -Infinity;
  for (let s = 0; s < map.stepCycle.length; s++) {
    const c = map.stepCycle[s];
    if (c <= cycle && c > bestCycle) {
      best = s;
      bestCycle = c;
    }
  }
  if (best >= 0) return best;
  // Before every step's cursor: the first step on this SM.
  for (let s = 0; s < map.stepCycle.length; s++) if (!Number.isNaN(map.stepCycle[s])) return s;
  return 0;
}

function ctaOfRole(role: string): number {
  // "leader/" and "peer/" (FA4's CTA pair) are two CTAs of one grid entry, not a ctaN.
  const m = /^cta(\d+)\//.exec(role);
  return m ? Number(m[1]) : 0;
}

/** Every op's phase as its schedule recorded it, with the CTA from the role's "ctaN/" prefix; null for waits and bookkeeping. */
export function classifyOps(timeline: readonly TimelineEvent[]): (OpPhase | null)[] {
  return timeline.map((ev) =>
    ev.phase
      ? {
          cta: ctaOfRole(ev.role),
          kinds: ev.phase.kinds,
          kv: ev.phase.kv,
          sub: ev.phase.sub,
          ...(ev.phase.subEnd !== undefined ? { subEnd: ev.phase.subEnd } : {}),
          tensors: ev.phase.tensors ?? [],
        }
      : null,
  );
}
