// The SM schedule the hardware views show, written out for other tools:
// - Chrome Trace Event JSON (chrome://tracing, Perfetto): one process for the SM, one
//   thread (track) per role, every op a complete ("X") event in microseconds at the GPU's
//   clock; barrier waits keep their own category so they can be filtered.
// - JSONL in the hw.* line format of HARDWARE-TRACE.md (header, timeline, memory), plus
//   one hw.step line per numeric step on this SM: the step ↔ cycle map of step-map.ts.

import { toJsonLine } from '../trace/jsonl.ts';
import type { SmSchedule } from './sm-view.ts';

export interface ChromeTraceEvent {
  name: string;
  cat?: string;
  ph: 'X' | 'M';
  ts?: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: ChromeTraceEvent[];
  displayTimeUnit: 'ns';
  otherData: Record<string, string | number>;
}

function family(unit: string): string {
  if (unit === 'sync') return 'wait';
  const dot = unit.indexOf('.');
  return dot < 0 ? unit : unit.slice(0, dot);
}

export function chromeTrace(s: SmSchedule): ChromeTrace {
  const v = s.view;
  const usPerCycle = 1 / (v.clockGHz * 1e3);
  const pid = 1;
  const tid = new Map(v.roles.map((r, i) => [r.name, i + 1]));
  const ev: ChromeTraceEvent[] = [{ name: 'process_name', ph: 'M', pid, tid: 0, args: { name: `SM · ${v.algo} on ${v.gpuName}` } }];
  v.roles.forEach((r, i) => {
    ev.push({
      name: 'thread_name',
      ph: 'M',
      pid,
      tid: i + 1,
      args: { name: `${r.name} (warps ${r.warps.join(',')}, ${r.registers} regs)` },
    });
    ev.push({ name: 'thread_sort_index', ph: 'M', pid, tid: i + 1, args: { sort_index: i } });
  });
  const round = (x: number) => Math.round(x * 1e6) / 1e6;
  for (const e of s.timeline) {
    ev.push({
      name: e.op,
      cat: family(e.unit),
      ph: 'X',
      ts: round(e.start * usPerCycle),
      dur: round(Math.max(0, e.end - e.start) * usPerCycle),
      pid,
      tid: tid.get(e.role) ?? 0,
      args: {
        unit: e.unit,
        tile: e.tile,
        start_cycle: e.start,
        end_cycle: e.end,
        waited_on: e.waitedOn,
        async: e.async ?? false,
        id: e.id,
      },
    });
  }
  return {
    traceEvents: ev,
    displayTimeUnit: 'ns',
    otherData: { algorithm: v.algo, gpu: v.gpuName, clock_ghz: v.clockGHz, cycles: v.cycles, first_cta: v.firstCta, grid_ctas: v.gridCtas },
  };
}

export function scheduleJsonl(s: SmSchedule): string {
  const v = s.view;
  const lines = [
    toJsonLine({
      type: 'hw.header',
      algo: v.algo,
      gpu: v.gpu,
      cycles: v.cycles,
      roles: v.roles,
      resources: v.resources,
      utilization: v.utilization,
      features: v.features,
      ctas: v.ctas,
    }),
  ];
  for (const e of s.timeline) lines.push(toJsonLine({ type: 'hw.timeline', ...e }));
  for (const m of s.memory) lines.push(toJsonLine({ type: 'hw.memory', ...m }));
  const ids = s.timeline.map((e) => e.id);
  for (let k = 0; k < v.map.stepCycle.length; k++) {
    const c = v.map.stepCycle[k];
    if (Number.isNaN(c)) continue;
    lines.push(
      toJsonLine({ type: 'hw.step', step: k, cycle: c, op: ids[v.map.stepOp[k]] ?? null, approximate: v.map.stepApprox[k] === 1 }),
    );
  }
  return lines.join('\n') + '\n';
}
