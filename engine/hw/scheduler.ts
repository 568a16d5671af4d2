// A deterministic discrete-event scheduler for the roles of one SM.
//
// A kernel is a set of roles (warps or warpgroups), each a straight-line program of ops:
//   exec   – work the role does itself on a unit (softmax on MUFU/FMA, a synchronous MMA);
//            the role is busy until it completes;
//   issue  – asynchronous work handed to a unit (a TMA or cp.async copy, a wgmma/tcgen05
//            MMA); the role moves on after a few issue cycles and the unit arrives on
//            barriers when it is done;
//   wait   – block until a barrier has completed a given phase (mbarrier try_wait.parity,
//            wgmma.wait_group, cp.async.wait_group);
//   arrive – one arrival on a barrier (mbarrier.arrive, bar.arrive);
//   sync   – a named barrier (bar.sync): arrive and wait for that generation to complete;
//   mem    – a memory event (a buffer released, a tile written in registers).
//
// Units model shared hardware by processor sharing (or in FIFO order, see Kernel.fifoUnits): k ops active on a unit each progress
// at 1/k of its rate, so two warpgroups whose GEMMs overlap both slow down, which is what
// makes explicit ping-pong ordering worth something. Each op has `work` (cycles at the
// unit's full rate) plus a pure `latency` that occupies nothing (the TMA round trip).
//
// Time only moves forward and, at equal times, unit completions are handled before roles
// and roles in a fixed order, so a kernel always produces the very same events.

import type { MemoryEvent, SchedulePhase, RoleInfo, TimelineEvent } from './events.ts';

export type BarrierKind = 'mbarrier' | 'named' | 'counter';

export interface BarrierDef {
  name: string;
  kind: BarrierKind;
  /** Arrivals that complete one phase (participants for a named barrier; 1 for a counter). */
  expected: number;
  /** Memory events caused by completing phase p (an "empty" barrier releasing a buffer slot, or several tiles sharing it). */
  onPhase?: (phase: number) => MemSpec | MemSpec[] | null;
}

export type MemSpec = Omit<MemoryEvent, 't' | 'role' | 'ready'>;

export interface OpOptions {
  /** Pure delay after the unit finished the work (latency of a copy, MMA pipeline depth). */
  latency?: number;
  /** Barriers the unit arrives on when the op completes. */
  arrive?: number[];
  /** Memory events stamped when the op starts; a 'fill' gets `ready` = completion. */
  mem?: MemSpec[];
  /** Memory events stamped when the unit has finished the work (before `latency`). */
  memDone?: MemSpec[];
  /** Memory events stamped when the unit starts the op (behind earlier ops of a FIFO unit). */
  memBegin?: MemSpec[];
  /**
   * Issue the work as this many equal instructions, ISSUE_CYCLES apart (the k-steps of a
   * wgmma GEMM). On a FIFO unit, two roles issuing at once then interleave instruction by
   * instruction, and both GEMMs finish late: the effect ping-pong ordering removes.
   */
  chunks?: number;
  /** What the op carries out, copied onto its timeline event for the step map. */
  phase?: SchedulePhase;
}

export type Op =
  | { k: 'exec' | 'issue'; unit: string; work: number; op: string; tile: string; o: OpOptions }
  | { k: 'wait'; bar: number; phase: number }
  | { k: 'arrive'; bar: number; n: number }
  | { k: 'sync'; bar: number }
  | { k: 'mem'; spec: MemSpec }
  | { k: 'delay'; cycles: number };

/** Cycles a role spends issuing one asynchronous op before it can go on. */
export const ISSUE_CYCLES = 4;

export class RoleProgram {
  readonly ops: Op[] = [];
  constructor(readonly info: RoleInfo) {}
  exec(unit: string, work: number, op: string, tile = '', o: OpOptions = {}): this {
    this.ops.push({ k: 'exec', unit, work, op, tile, o });
    return this;
  }
  issue(unit: string, work: number, op: string, tile = '', o: OpOptions = {}): this {
    this.ops.push({ k: 'issue', unit, work, op, tile, o });
    return this;
  }
  wait(bar: number, phase: number): this {
    if (phase >= 0) this.ops.push({ k: 'wait', bar, phase });
    return this;
  }
  arrive(bar: number, n = 1): this {
    this.ops.push({ k: 'arrive', bar, n });
    return this;
  }
  sync(bar: number): this {
    this.ops.push({ k: 'sync', bar });
    return this;
  }
  mem(spec: MemSpec): this {
    this.ops.push({ k: 'mem', spec });
    return this;
  }
  /** Start later by this many cycles (a CTA launched after its neighbour). */
  delay(cycles: number): this {
    if (cycles > 0) this.ops.push({ k: 'delay', cycles });
    return this;
  }
}

/** A kernel's roles and barriers, as one CTA (or several co-resident CTAs) of one SM. */
export class Kernel {
  readonly barriers: BarrierDef[] = [];
  readonly roles: RoleProgram[] = [];
  /** Memory events that exist before any role runs (static allocation). */
  readonly allocs: MemSpec[] = [];
  /**
   * Units that serve ops one at a time in issue order instead of sharing: the tensor core
   * behind wgmma/tcgen05 takes whole asynchronous MMAs from its queue.
   */
  readonly fifoUnits = new Set<string>();

  mbarrier(name: string, arrivals = 1, onPhase?: (phase: number) => MemSpec | MemSpec[] | null): number {
    this.barriers.push({ name, kind: 'mbarrier', expected: arrivals, onPhase });
    return this.barriers.length - 1;
  }
  named(name: string, participants: number): number {
    this.barriers.push({ name, kind: 'named', expected: participants });
    return this.barriers.length - 1;
  }
  /** A completion counter: wgmma/tcgen05 commit groups, cp.async groups (waits count, no parity). */
  counter(name: string): number {
    this.barriers.push({ name, kind: 'counter', expected: 1 });
    return this.barriers.length - 1;
  }
  role(info: RoleInfo): RoleProgram {
    const r = new RoleProgram(info);
    this.roles.push(r);
    return r;
  }
  alloc(spec: Omit<MemSpec, 'action' | 'tile'>): void {
    this.allocs.push({ ...spec, action: 'alloc', tile: '' });
  }
}

export class DeadlockError extends Error {
  constructor(readonly blocked: string[]) {
    super(`schedule deadlocked: ${blocked.join('; ')}`);
    this.name = 'DeadlockError';
  }
}

/** A wait on a parity that the barrier has already moved two phases past: real hardware would hang or read stale data. */
export class PhaseOverrunError extends Error {
  constructor(role: string, barrier: string, phase: number, completed: number) {
    super(`${role} waits for phase ${phase} of ${barrier}, which has already completed ${completed} phases (parity aliasing)`);
    this.name = 'PhaseOverrunError';
  }
}

export interface KernelRun {
  cycles: number;
  timeline: TimelineEvent[];
  memory: MemoryEvent[];
  /** Busy cycles per unit (any op active). */
  unitBusy: Record<string, number>;
  /** Completed phases per barrier at the end. */
  barrierPhases: Record<string, number>;
  roles: RoleInfo[];
}

type WorkOp = Extract<Op, { k: 'exec' | 'issue' }>;
/** An op on a unit. Plain data, no closures: a long schedule creates hundreds of thousands. */
interface ActiveOp {
  remaining: number;
  op: WorkOp;
  role: RoleState;
  /** Only the last chunk of a chunked issue completes the op. */
  last: boolean;
  /** memBegin still to stamp when the unit starts it. */
  beginPending: boolean;
  id: number;
  ev: TimelineEvent | null;
  fills: MemoryEvent[];
}
interface UnitState {
  fifo: boolean;
  active: ActiveOp[];
  last: number;
  busy: number;
}
interface Delayed {
  t: number;
  seq: number;
  a: ActiveOp;
}
interface BarState {
  def: BarrierDef;
  count: number;
  completed: number;
  phaseTime: number[];
  phaseSource: number[];
}
interface RoleState {
  prog: RoleProgram;
  pc: number;
  t: number;
  /** Waiting for a unit to finish an exec op. */
  busy: boolean;
  /** Waiting on a barrier phase. */
  blocked: { bar: number; phase: number; since: number } | null;
  lastEvent: number;
  waited: number[];
  /** Chunks of the current chunked issue already handed to the unit, and its event. */
  chunk: number;
  chunkEvent: TimelineEvent | null;
  chunkId: number;
  chunkFills: MemoryEvent[];
}

const EPS = 1e-9;

/** Explicit copy: object spread is the hot spot when a schedule stamps tens of thousands of events. */
function memEvent(s: MemSpec, t: number, role: string): MemoryEvent {
  return { t, space: s.space, buffer: s.buffer, stage: s.stage, offset: s.offset, bytes: s.bytes, action: s.action, tile: s.tile, role };
}

export interface SimulateOptions {
  /** false: count cycles and busy time only, build no events (large problems). */
  events?: boolean;
}

export function simulateKernel(kernel: Kernel, opts: SimulateOptions = {}): KernelRun {
  const keep = opts.events ?? true;
  const timeline: TimelineEvent[] = [];
  const memory: MemoryEvent[] = [];
  let nextId = 0;
  let seq = 0;
  const units = new Map<string, UnitState>();
  const unitList: UnitState[] = [];
  const delayed: Delayed[] = [];
  const bars: BarState[] = kernel.barriers.map((def) => ({ def, count: 0, completed: 0, phaseTime: [], phaseSource: [] }));
  const roles: RoleState[] = kernel.roles.map((prog) => ({
    prog,
    pc: 0,
    t: 0,
    busy: false,
    blocked: null,
    lastEvent: -1,
    waited: [],
    chunk: 0,
    chunkEvent: null,
    chunkId: -1,
    chunkFills: [],
  }));
  let now = 0;

  if (keep) for (const a of kernel.allocs) memory.push(memEvent(a, 0, 'kernel'));

  const unit = (name: string): UnitState => {
    let u = units.get(name);
    if (!u) {
      u = { fifo: kernel.fifoUnits.has(name), active: [], last: 0, busy: 0 };
      units.set(name, u);
      unitList.push(u);
    }
    return u;
  };
  const advanceUnit = (u: UnitState, t: number) => {
    const dt = t - u.last;
    if (dt > 0 && u.active.length > 0) {
      if (u.fifo) u.active[0].remaining -= dt;
      else {
        const share = dt / u.active.length;
        for (const a of u.active) a.remaining -= share;
      }
      u.busy += dt;
    }
    u.last = Math.max(u.last, t);
  };
  const unitNext = (u: UnitState): number => {
    if (u.active.length === 0) return Infinity;
    if (u.fifo) return u.last + Math.max(0, u.active[0].remaining);
    let m = Infinity;
    for (const a of u.active) m = Math.min(m, a.remaining);
    return u.last + Math.max(0, m) * u.active.length;
  };

  const wake = (b: number) => {
    const bs = bars[b];
    for (const r of roles) {
      if (r.blocked && r.blocked.bar === b && bs.completed > r.blocked.phase) {
        const released = Math.max(r.blocked.since, bs.phaseTime[r.blocked.phase]);
        const src = bs.phaseSource[r.blocked.phase];
        if (src >= 0) r.waited.push(src);
        if (keep && released - r.blocked.since > EPS) {
          timeline.push({
            id: nextId++,
            role: r.prog.info.name,
            op: `wait ${bs.def.name}`,
            unit: 'sync',
            start: r.blocked.since,
            end: released,
            tile: '',
            waitedOn: src >= 0 ? [src] : [],
          });
        }
        r.t = Math.max(r.t, released);
        r.blocked = null;
      }
    }
  };
  const arriveOn = (b: number, t: number, source: number, n = 1) => {
    const bs = bars[b];
    bs.count += n;
    while (bs.count >= bs.def.expected) {
      bs.count -= bs.def.expected;
      bs.completed++;
      bs.phaseTime.push(t);
      bs.phaseSource.push(source);
      const m = keep ? bs.def.onPhase?.(bs.completed - 1) : null;
      if (m) for (const one of Array.isArray(m) ? m : [m]) memory.push(memEvent(one, t, bs.def.name));
    }
    wake(b);
  };
  const stamp = (specs: MemSpec[] | undefined, t: number, role: string): MemoryEvent[] => {
    if (!keep || !specs) return [];
    const out: MemoryEvent[] = [];
    for (const s of specs) {
      const e = memEvent(s, t, role);
      memory.push(e);
      out.push(e);
    }
    return out;
  };

  /** The op's result is visible: events end, fills are ready, barriers get their arrivals, an exec role moves on. */
  const finish = (a: ActiveOp, tEnd: number) => {
    if (a.ev) a.ev.end = tEnd;
    for (const f of a.fills) f.ready = tEnd;
    for (const b of a.op.o.arrive ?? []) arriveOn(b, tEnd, a.id);
    if (a.op.k === 'exec') {
      a.role.busy = false;
      a.role.t = Math.max(a.role.t, tEnd);
    }
  };
  /** The unit has finished the work: its operands are free now (P read, SMEM drained); completion comes `latency` later. */
  const workDone = (a: ActiveOp, tw: number) => {
    if (!a.last) return;
    stamp(a.op.o.memDone, tw, a.role.prog.info.name);
    const latency = a.op.o.latency ?? 0;
    if (latency > 0) delayed.push({ t: tw + latency, seq: seq++, a });
    else finish(a, tw);
  };

  const runOp = (r: RoleState): void => {
    const op = r.prog.ops[r.pc];
    const name = r.prog.info.name;
    const t = r.t;
    switch (op.k) {
      case 'exec':
      case 'issue': {
        const u = unit(op.unit);
        advanceUnit(u, t);
        const chunks = op.k === 'issue' ? Math.max(1, Math.floor(op.o.chunks ?? 1)) : 1;
        const first = r.chunk === 0;
        const last = r.chunk === chunks - 1;
        if (first) {
          r.chunkId = nextId++;
          r.chunkEvent = keep
            ? { id: r.chunkId, role: name, op: op.op, unit: op.unit, start: t, end: t, tile: op.tile, waitedOn: r.waited }
            : null;
          if (r.chunkEvent && op.k === 'issue') r.chunkEvent.async = true;
          if (r.chunkEvent && op.o.phase) r.chunkEvent.phase = op.o.phase;
          r.waited = [];
          if (r.chunkEvent) timeline.push(r.chunkEvent);
          r.chunkFills = stamp(op.o.mem, t, name).filter((e) => e.action === 'fill');
        }
        const id = r.chunkId;
        const a: ActiveOp = {
          remaining: Math.max(0, op.work) / chunks,
          op,
          role: r,
          last,
          beginPending: first && op.o.memBegin !== undefined,
          id,
          ev: r.chunkEvent,
          fills: r.chunkFills,
        };
        const wasIdle = u.active.length === 0;
        u.active.push(a);
        if (a.beginPending && (!u.fifo || wasIdle)) {
          stamp(op.o.memBegin, t, name);
          a.beginPending = false;
        }
        r.lastEvent = id;
        if (last) {
          r.pc++;
          r.chunk = 0;
        } else r.chunk++;
        if (op.k === 'exec') r.busy = true;
        else r.t = t + ISSUE_CYCLES;
        return;
      }
      case 'wait': {
        const bs = bars[op.bar];
        if (bs.def.kind === 'mbarrier' && bs.completed > op.phase + 1) {
          throw new PhaseOverrunError(name, bs.def.name, op.phase, bs.completed);
        }
        r.pc++;
        if (bs.completed > op.phase) {
          const src = bs.phaseSource[op.phase];
          if (src >= 0) r.waited.push(src);
          r.t = Math.max(t, bs.phaseTime[op.phase]);
        } else {
          r.blocked = { bar: op.bar, phase: op.phase, since: t };
        }
        return;
      }
      case 'arrive':
        r.pc++;
        arriveOn(op.bar, t, r.lastEvent, op.n);
        return;
      case 'sync': {
        const bs = bars[op.bar];
        const phase = bs.completed;
        r.pc++;
        r.blocked = { bar: op.bar, phase, since: t };
        arriveOn(op.bar, t, r.lastEvent);
        return;
      }
      case 'mem':
        r.pc++;
        stamp([op.spec], t, name);
        return;
      case 'delay':
        r.pc++;
        r.t = t + op.cycles;
        return;
    }
  };

  for (;;) {
    let tUnit = Infinity;
    let uBest: UnitState | null = null;
    for (let i = 0; i < unitList.length; i++) {
      const u = unitList[i];
      const tn = unitNext(u);
      if (tn < tUnit) {
        tUnit = tn;
        uBest = u;
      }
    }
    let tDelay = Infinity;
    let dBest = -1;
    for (let i = 0; i < delayed.length; i++) {
      const d = delayed[i];
      if (d.t < tDelay || (d.t === tDelay && d.seq < delayed[dBest].seq)) {
        tDelay = d.t;
        dBest = i;
      }
    }
    let tRole = Infinity;
    let rBest: RoleState | null = null;
    for (let i = 0; i < roles.length; i++) {
      const r = roles[i];
      if (r.busy || r.blocked || r.pc >= r.prog.ops.length) continue;
      if (r.t < tRole) {
        tRole = r.t;
        rBest = r;
      }
    }
    if (uBest && tUnit <= tDelay && tUnit <= tRole) {
      now = tUnit;
      advanceUnit(uBest, tUnit);
      const act = uBest.active;
      if (uBest.fifo) {
        // Only the head progresses on a FIFO unit.
        workDone(act.shift()!, tUnit);
      } else {
        let finished: ActiveOp[] | null = null;
        for (let i = 0; i < act.length; i++) if (act[i].remaining <= EPS) (finished ??= []).push(act[i]);
        if (finished) {
          uBest.active = act.filter((a) => a.remaining > EPS);
          for (const a of finished) workDone(a, tUnit);
        }
      }
      const head = uBest.active[0];
      if (uBest.fifo && head?.beginPending) {
        stamp(head.op.o.memBegin, tUnit, head.role.prog.info.name);
        head.beginPending = false;
      }
      continue;
    }
    if (dBest >= 0 && tDelay <= tRole) {
      now = tDelay;
      const [d] = delayed.splice(dBest, 1);
      finish(d.a, d.t);
      continue;
    }
    if (rBest) {
      now = rBest.t;
      runOp(rBest);
      continue;
    }
    const stuck = roles.filter((r) => r.pc < r.prog.ops.length || r.busy || r.blocked);
    if (stuck.length > 0) {
      throw new DeadlockError(
        stuck.map((r) => {
          const b = r.blocked ? bars[r.blocked.bar] : null;
          return b
            ? `${r.prog.info.name} waits for phase ${r.blocked!.phase} of ${b.def.name} (completed ${b.completed})`
            : `${r.prog.info.name} stopped at op ${r.pc}`;
        }),
      );
    }
    break;
  }

  // Cycle counts are fractional (shared units split their rate); two decimals are plenty
  // for the views and keep the JSONL short.
  const r2 = (x: number) => Math.round(x * 100) / 100;
  for (const e of timeline) {
    e.start = r2(e.start);
    e.end = r2(e.end);
  }
  for (const m of memory) {
    m.t = r2(m.t);
    if (m.ready !== undefined) m.ready = r2(m.ready);
  }
  const unitBusy: Record<string, number> = {};
  for (const [k, u] of units) unitBusy[k] = u.busy;
  const barrierPhases: Record<string, number> = {};
  for (const b of bars) barrierPhases[b.def.name] = b.completed;
  let end = now;
  for (const r of roles) end = Math.max(end, r.t);
  return { cycles: r2(end), timeline, memory, unitBusy, barrierPhases, roles: kernel.roles.map((r) => r.info) };
}
