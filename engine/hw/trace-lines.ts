// The hardware part of `trace`: JSONL lines for one SM's schedule. The first line is a
// header (type "hw.header": algorithm, GPU, resource sheet, roles, cycles, utilization),
// then every timeline event (type "hw.timeline") and every memory event (type "hw.memory")
// in the order the scheduler produced them. See HARDWARE-TRACE.md.

import { toJsonLine } from '../trace/jsonl.ts';
import { HW_ALGORITHMS, scheduleFor } from './registry.ts';
import { parseHwOptions } from './cli/options.ts';

/** True for algorithm ids that have a hardware schedule (trace can route them here). */
export function isHardwareAlgorithm(id: string): boolean {
  return HW_ALGORITHMS.some((a) => a.id === id);
}

/** `args`: the same options as `simulate` (--algo, --gpu, shape, feature flags). Defaults: Nq = Nk = 512, d = 128. */
export function hardwareTraceLines(args: string[]): string[] {
  const o = parseHwOptions(args, { nq: 512, d: 128 });
  const s = scheduleFor(o.algo, o.gpu, o.shape, o.features);
  const lines = [toJsonLine({ type: 'hw.header', algo: s.algo, gpu: s.gpu, cycles: s.cycles, roles: s.roles, resources: s.resources, utilization: s.utilization })];
  for (const e of s.timeline) lines.push(toJsonLine({ type: 'hw.timeline', ...e }));
  for (const m of s.memory) lines.push(toJsonLine({ type: 'hw.memory', ...m }));
  return lines;
}
