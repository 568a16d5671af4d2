// The hardware part of `trace`: JSONL lines for one SM's schedule. The first line is a
// header (type "hw.header": algorithm, GPU, resource sheet, roles, cycles, utilization),
// then every timeline event (type "hw.timeline") and every memory event (type "hw.memory")
// in the order the scheduler produced them. See engine/TRACE.md, "Hardware events".

import { toJsonLine } from '../trace/jsonl.ts';
import type { HwSchedule } from './registry.ts';

/** JSONL lines of one SM's schedule, every line tagged with the algorithm id. */
export function hardwareTraceLines(s: HwSchedule): string[] {
  const lines = [
    toJsonLine({
      type: 'hw.header',
      algo: s.algo,
      pass: s.pass,
      gpu: s.gpu,
      cycles: s.cycles,
      roles: s.roles,
      resources: s.resources,
      utilization: s.utilization,
    }),
  ];
  for (const e of s.timeline) lines.push(toJsonLine({ type: 'hw.timeline', algo: s.algo, ...e }));
  for (const m of s.memory) lines.push(toJsonLine({ type: 'hw.memory', algo: s.algo, ...m }));
  return lines;
}
