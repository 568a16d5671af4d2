// The hardware events of one SM's schedule (engine/hw/trace-lines.ts) from a `simulate`-style
// argument list: the lines `trace --gpu` appends after the numeric steps.

import { hardwareTraceLinesFor } from '../algorithms/schedule-registry.ts';
import { parseHwOptions } from './hw-options.ts';

/** `args`: the same options as `simulate`. Defaults: Nq = Nk = 512, d = 128. */
export async function hardwareTraceLines(args: string[]): Promise<string[]> {
  const o = await parseHwOptions(args, { nq: 512 });
  return hardwareTraceLinesFor(o.algo, o.gpu, o.shape, o.features, o.pass);
}
