// The hardware part of `trace`: JSONL lines for one SM's schedule. The first line is a
// header (type "hw.header": algorithm, GPU, resource sheet, roles, cycles, utilization),
// then every timeline event (type "hw.timeline") and every memory event (type "hw.memory")
// in the order the scheduler produced them. See engine/TRACE.md, "Hardware events".

import { toJsonLine } from '../trace/jsonl.ts';
import type { HwFeatures, ProblemShape } from './model.ts';
import { HW_ALGORITHMS, scheduleFor, type HwPass } from './registry.ts';

/** JSONL lines of one SM's schedule, every line tagged with the algorithm id. */
export function hardwareTraceLinesFor(
  algo: string,
  gpu: string,
  shape: ProblemShape,
  features: Partial<HwFeatures>,
  pass: HwPass = 'forward',
): string[] {
  const s = scheduleFor(algo, gpu, shape, features, pass);
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

/** True for algorithm ids that have a hardware schedule (trace can route them here). */
export function isHardwareAlgorithm(id: string): boolean {
  return HW_ALGORITHMS.some((a) => a.id === id);
}
