// What every `run` variant shares about its outputs: the options, the plan of DIR/<name>
// folders, and the warning (exit status 3) for an output that came out entirely NaN.

import { join } from 'node:path';
import { flag, type OptionSpec, type ParsedArgs } from './args.ts';
import { inputFilesOf, type OutputPlan } from './output-files.ts';

export const OUTPUT_OPTIONS: OptionSpec = { out: 'string', force: 'flag', 'max-bytes': 'int' };

/** Exit status of a run whose files were written but whose output is entirely NaN. */
export const ALL_NAN_EXIT = 3;

export function outputPlan(a: ParsedArgs, out: string, names: string[]): OutputPlan {
  return { targets: names.map((n) => join(out, n)), option: '--out', force: flag(a, 'force'), inputs: inputFilesOf(a) };
}

/** Warns on stderr for every output with no finite value (an overflowing --scale, NaN inputs everywhere); the exit status. */
export function allNanWarnings(outputs: { id: string; o: ArrayLike<number> }[]): number {
  let code = 0;
  for (const { id, o } of outputs) {
    if (o.length === 0) continue;
    let finite = false;
    for (let i = 0; i < o.length && !finite; i++) finite = Number.isFinite(o[i]);
    if (finite) continue;
    console.error(`warning: ${id}: every value of the output is NaN or infinite (check --scale, --softcap and the inputs)`);
    code = ALL_NAN_EXIT;
  }
  return code;
}
