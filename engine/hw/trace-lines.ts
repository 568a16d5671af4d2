// The hardware part of `trace`: JSONL lines for one SM's schedule. The first line is a
// header (type "hw.header": algorithm, GPU, resource sheet, roles, cycles, utilization),
// then every timeline event (type "hw.timeline") and every memory event (type "hw.memory")
// in the order the scheduler produced them. See engine/TRACE.md, "Hardware events".

import type { OptionSpec, ParsedArgs } from '../cli/args.ts';
import { toJsonLine } from '../trace/jsonl.ts';
import type { HwFeatures, ProblemShape } from './model.ts';
import { HW_ALGORITHMS, scheduleFor, type HwPass } from './registry.ts';
import { parseHwOptions } from './cli/options.ts';

/** Options `trace` takes for the hardware events (the problem options it already has). */
export const HW_TRACE_OPTIONS: OptionSpec = {
  gpu: 'string',
  'no-pingpong': 'flag',
  'no-intra-overlap': 'flag',
  'no-lazy-rescale': 'flag',
  'no-exp2-emulation': 'flag',
  stages: 'int',
  splits: 'int',
};

export const HW_TRACE_HELP = `hardware events (engine/TRACE.md, "Hardware events"):
  --gpu a100|rtx4060|h100|h200|b200   also emit the timeline and memory events of one SM's
                              schedule (fa3, fa4, fmha-v2, cute-fa2, flash-decoding;
                              with --do/--backward the backward kernel's: fa3, fa2)
  --no-pingpong --no-intra-overlap    FA3 switches (numeric steps and schedule)
  --no-lazy-rescale --no-exp2-emulation  FA4 switches (numeric steps and schedule)
  --stages N                  K/V pipeline depth of the schedule
  --splits N                  flash-decoding splits (numeric steps and schedule)`;

/** The switches given on the command line, for the hardware schedule. */
export function hwFeaturesFromArgs(a: ParsedArgs): Partial<HwFeatures> {
  const f: Partial<HwFeatures> = {};
  if (a['no-pingpong'] === true) f.pingpong = false;
  if (a['no-intra-overlap'] === true) f.intraOverlap = false;
  if (a['no-lazy-rescale'] === true) f.lazyRescale = false;
  if (a['no-exp2-emulation'] === true) f.exp2Emulation = false;
  if (typeof a.stages === 'number') f.stages = a.stages;
  if (typeof a.splits === 'number') f.splits = a.splits;
  return f;
}

/** The same switches as numeric-algorithm features (stages is a schedule-only switch). */
export function stepFeaturesFromArgs(a: ParsedArgs): Record<string, boolean | number> {
  const { stages: _stages, ...f } = hwFeaturesFromArgs(a);
  return f as Record<string, boolean | number>;
}

/** JSONL lines of one SM's schedule, every line tagged with the algorithm id. */
export function hardwareTraceLinesFor(algo: string, gpu: string, shape: ProblemShape, features: Partial<HwFeatures>, pass: HwPass = 'forward'): string[] {
  const s = scheduleFor(algo, gpu, shape, features, pass);
  const lines = [toJsonLine({ type: 'hw.header', algo: s.algo, pass: s.pass, gpu: s.gpu, cycles: s.cycles, roles: s.roles, resources: s.resources, utilization: s.utilization })];
  for (const e of s.timeline) lines.push(toJsonLine({ type: 'hw.timeline', algo: s.algo, ...e }));
  for (const m of s.memory) lines.push(toJsonLine({ type: 'hw.memory', algo: s.algo, ...m }));
  return lines;
}

/** True for algorithm ids that have a hardware schedule (trace can route them here). */
export function isHardwareAlgorithm(id: string): boolean {
  return HW_ALGORITHMS.some((a) => a.id === id);
}

/** `args`: the same options as `simulate` (--algo, --gpu, shape, feature flags). Defaults: Nq = Nk = 512, d = 128. */
export function hardwareTraceLines(args: string[]): string[] {
  const o = parseHwOptions(args, { nq: 512, d: 128 });
  return hardwareTraceLinesFor(o.algo, o.gpu, o.shape, o.features, o.pass);
}
