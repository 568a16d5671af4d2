// The options `trace` takes for the hardware events of one SM's schedule (engine/hw/trace-lines.ts),
// and the same lines from a `simulate`-style argument list.

import type { HwFeatures } from '../hw/model.ts';
import { hardwareTraceLinesFor } from '../hw/trace-lines.ts';
import type { OptionSpec, ParsedArgs } from './args.ts';
import { parseHwOptions } from './hw-options.ts';

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

/** `args`: the same options as `simulate` (--algo, --gpu, shape, feature flags). Defaults: Nq = Nk = 512, d = 128. */
export function hardwareTraceLines(args: string[]): string[] {
  const o = parseHwOptions(args, { nq: 512, d: 128 });
  return hardwareTraceLinesFor(o.algo, o.gpu, o.shape, o.features, o.pass);
}
