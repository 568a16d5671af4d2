// The CLI's side of the size model (engine/core/size-model.ts): what `run` may hold in
// memory and what `trace` may write, checked from the dimensions before any tensor is
// generated, with the option to change named.

import type { AttentionProblem } from '../core/problem.ts';
import { checkSize, formatBytes, SizeError, type ProblemSize, type SizeDim } from '../core/size-model.ts';
import { ArgsError } from './args.ts';

/** Memory `run` (and trace's own run) may hold unless --max-bytes says otherwise. */
export const DEFAULT_RUN_MAX_BYTES = 4 * 2 ** 30;
/** Bytes `trace` may write unless --max-bytes says otherwise: about 20 s of JSON lines. */
export const DEFAULT_TRACE_MAX_BYTES = 2 ** 30;

const RANDOM_NAMES: Record<SizeDim, string> = {
  batch: '--b',
  hq: '--hq',
  hk: '--hk',
  nq: '--nq',
  nk: '--nk',
  d: '--d',
  dv: '--dv',
  blockM: '--block-m',
  blockN: '--block-n',
};

const FILE_NAMES: Record<SizeDim, string> = {
  batch: 'the batch of --q, --k, --v',
  hq: "--q's heads",
  hk: "--k's heads",
  nq: "--q's length",
  nk: "--k's length",
  d: 'the head dim d of --q and --k',
  dv: "--v's head dim",
  blockM: '--block-m',
  blockN: '--block-n',
};

export interface CliSizing {
  command: 'run' | 'trace';
  /** --max-bytes as given. */
  maxBytes?: number;
  /** How many algorithms run (each writes its own trace). */
  algos: number;
  backward: boolean;
}

function refuse(e: unknown, raise: string): never {
  if (e instanceof SizeError) throw new ArgsError(`${e.message}; or ${raise}`);
  throw e;
}

/** Throws ArgsError when the run's memory or the trace's output would exceed its limit. */
export function checkCliSize(p: AttentionProblem, blocks: { blockM: number; blockN: number }, sizing: CliSizing, fromFiles: boolean): void {
  const names = fromFiles ? FILE_NAMES : RANDOM_NAMES;
  const q = { ...p, ...blocks, pass: sizing.backward ? ('backward' as const) : ('forward' as const) };
  const traceLimit = sizing.command === 'trace' ? (sizing.maxBytes ?? DEFAULT_TRACE_MAX_BYTES) : undefined;
  const runLimit = sizing.command === 'run' ? (sizing.maxBytes ?? DEFAULT_RUN_MAX_BYTES) : DEFAULT_RUN_MAX_BYTES;
  const runMeasure = (s: ProblemSize) => s.runBytes;
  try {
    checkSize(q, { measure: runMeasure, budget: runLimit, what: 'this run', names });
  } catch (e) {
    refuse(e, sizing.command === 'run' ? `raise --max-bytes (default ${formatBytes(DEFAULT_RUN_MAX_BYTES)})` : 'use `run` without a trace');
  }
  if (traceLimit === undefined) return;
  try {
    checkSize(q, { measure: (s) => s.traceJsonBytes * sizing.algos, budget: traceLimit, what: 'this trace', names });
  } catch (e) {
    refuse(e, `raise --max-bytes (default ${formatBytes(DEFAULT_TRACE_MAX_BYTES)}) to write it anyway`);
  }
}
