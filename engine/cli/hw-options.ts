// What the hardware commands (`describe`, `simulate`, and `trace --gpu`) add to run's problem
// options: the GPU, the kernel's switches, and the serving fields of the problem (paged KV,
// varlen lengths, splits, GQA packing). The problem itself comes from the
// same parser and the same problem object as the numeric engine's (problem-options.ts).

import type { AttentionProblem } from '../core/problem.ts';
import { GPUS } from '../hw/gpus/index.ts';
import type { HwFeatures, ProblemShape } from '../hw/model.ts';
import { noAttentionChunk } from '../algorithms/capabilities.ts';
import { descriptorOf } from '../algorithms/registry.ts';
import { HW_ALGORITHMS, HW_BACKWARD_ALGORITHMS, shapeOf, type HwPass } from '../algorithms/schedule-registry.ts';
import { ArgsError, flag, num, parseArgs, str, type OptionSpec, type ParsedArgs } from './args.ts';
import { parseNumericOption } from './numeric-options.ts';
import { layoutProblemFromArgs } from './hw-layout.ts';
import { LAYOUT_OPTIONS } from './layout-run.ts';
import { algoIds, PROBLEM_HELP, PROBLEM_OPTIONS, problemFromArgs, RANDOM_OPTIONS, type RandomDefaults } from './problem-options.ts';

export interface HwOptions {
  algo: string;
  gpu: string;
  /** The problem the numeric engine would run. */
  problem: AttentionProblem;
  /** The same problem as the hardware model takes it, with its serving fields. */
  shape: ProblemShape;
  features: Partial<HwFeatures>;
  /** --backward: the backward kernel's schedule (dQ, dK, dV). */
  pass: HwPass;
}

/** Options `trace` takes for the hardware events on top of its own (it has --backward already). */
export const HW_TRACE_OPTIONS: OptionSpec = {
  gpu: 'string',
  'no-pingpong': 'flag',
  'no-intra-overlap': 'flag',
  'no-lazy-rescale': 'flag',
  'no-exp2-emulation': 'flag',
  stages: 'int',
  splits: 'string',
  deterministic: 'flag',
  'pack-gqa': 'string',
  'page-size': 'int',
  'seqlens-q': 'string',
  'seqlens-k': 'string',
  seqused: 'flag',
};

/** Every option of `describe` and `simulate`: run's problem options, the random sizes, and the hardware ones. */
const { do: _do, ...LAYOUT_FILES } = LAYOUT_OPTIONS;
const HW_COMMAND_OPTIONS: OptionSpec = { ...PROBLEM_OPTIONS, ...RANDOM_OPTIONS, ...LAYOUT_FILES, ...HW_TRACE_OPTIONS, backward: 'flag' };

/** Options that set how the numeric engine steps; the kernel the hardware model runs picks its own. */
const STEPPER_ONLY = ['block-m', 'block-n', 'sram-bytes', 'feature', 'seed', 'distribution'] as const;

export const HW_SWITCHES_HELP = `hardware (the kernel upstream runs on the same problem):
  --gpu ${GPUS.map((g) => g.id).join('|')}
  --no-pingpong               FA3: no named-barrier ping-pong between the consumer warpgroups
  --no-intra-overlap          FA3: GEMM0 of the next block waits for the softmax (no overlap)
  --no-lazy-rescale           FA4: correction rescales O after every block
  --no-exp2-emulation         FA4: every exp2 on the MUFU
  --stages N                  K/V pipeline depth (FA3, FA4, fmha_v2)
  --splits auto|N             K/V splits: FA3/FA4 num_splits (auto: upstream's heuristic; default
                              FA3 auto, FA4 1), flash-decoding splits per (batch, head)
  --pack-gqa true|false       GQA packing (default: the kernel's heuristic)
  --page-size N               paged KV cache with pages of N tokens
  --seqlens-q a,b,…           varlen: one query length per sequence (cu_seqlens_q differences;
                              the batch is their count, nq their maximum)
  --seqlens-k a,b,…           varlen: one key length per sequence
  --seqused                   varlen lengths come as seqused_q/seqused_k (not cu_seqlens)
  --deterministic             FA3 backward: column blocks add into dQ in a fixed order`;

export const HW_OPTIONS_HELP = `  --algo ${HW_ALGORITHMS.map((a) => a.id).join('|')}   (one id)
  --backward                  the backward kernel (${HW_BACKWARD_ALGORITHMS.map((a) => a.id).join(', ')}; cute-fa2 = fa2): TFLOP/s count 2.5 × the forward's FLOPs

${PROBLEM_HELP.split('\nblocks:')[0]}
random problem (without --q/--k/--v):
  --b N --hq N --hk N         batch, query heads, key/value heads (default 1, 1, hq)
  --nq N --nk N               query and key length (default 4096, nq)
  --d N --dv N                head dims (default 128, d); --dtype defaults to fp16

${HW_SWITCHES_HELP}

serving layouts (run's files, instead of dense q/k/v; they give the lengths and page size):
  varlen: --q [total_q, Hq, d] --k [total_k, Hk, d] --v [total_k, Hk, dv]
          --cu-seqlens-q CQ --cu-seqlens-k CK   int32 offsets of length B+1
  paged:  --q [B, Nq, Hq, d] (--layout bnhd, the default here) --k-cache [num_pages, page_size, Hk, d]
          --v-cache [num_pages, page_size, Hk, dv] --block-table [B, max_pages] --cache-seqlens [B]
          (seqlen_k = max_pages · page_size; each sequence's length as seqused_k)`;

function lengths(name: string, v: string | undefined): number[] | undefined {
  if (v === undefined) return undefined;
  const xs = v.split(',').map((x) => Number(x.trim()));
  if (!xs.every((x) => Number.isSafeInteger(x) && x >= 0) || v.trim() === '')
    throw new ArgsError(`--${name} needs lengths a,b,… (integers >= 0), got '${v}'`);
  return xs;
}

/** --splits as given: 0 for auto, else the count; undefined when left out. */
function splitsOf(a: ParsedArgs): number | undefined {
  const v = str(a, 'splits');
  if (v === undefined) return undefined;
  if (v === 'auto') return 0;
  try {
    return parseNumericOption('splits', v, true);
  } catch {
    throw new ArgsError(`--splits must be auto or an integer from 1 to 256, got '${v}'`);
  }
}

/** flash-decoding takes its split count as a switch; FA3/FA4 take num_splits as part of the problem. */
const splitsAreSwitch = (algo: string) => HW_ALGORITHMS.find((x) => x.id === algo)?.switches.splits !== undefined;

/** The kernel switches given on the command line. */
export function hwFeaturesFromArgs(a: ParsedArgs, algo: string): Partial<HwFeatures> {
  const f: Partial<HwFeatures> = {};
  if (flag(a, 'no-pingpong')) f.pingpong = false;
  if (flag(a, 'no-intra-overlap')) f.intraOverlap = false;
  if (flag(a, 'no-lazy-rescale')) f.lazyRescale = false;
  if (flag(a, 'no-exp2-emulation')) f.exp2Emulation = false;
  if (flag(a, 'deterministic')) f.deterministic = true;
  if (num(a, 'stages') !== undefined) f.stages = num(a, 'stages');
  const splits = splitsOf(a);
  if (splits !== undefined && splitsAreSwitch(algo)) {
    if (splits === 0) throw new ArgsError(`--splits auto: ${algo} picks its own split count when --splits is left out`);
    f.splits = splits;
  }
  return f;
}

/** The same switches as the numeric algorithm's features (stages and deterministic are the schedule's alone). */
export function stepFeaturesFromArgs(a: ParsedArgs, algo: string): Record<string, boolean | number> {
  const { stages: _stages, deterministic: _deterministic, ...f } = hwFeaturesFromArgs(a, algo);
  return f as Record<string, boolean | number>;
}

/** The varlen lengths, and the batch and lengths a random problem takes from them. */
function varlenOf(a: ParsedArgs): { seqlensQ?: number[]; seqlensK?: number[]; defaults: Partial<RandomDefaults> } {
  const seqlensQ = lengths('seqlens-q', str(a, 'seqlens-q'));
  const seqlensK = lengths('seqlens-k', str(a, 'seqlens-k'));
  const defaults: Partial<RandomDefaults> = {};
  if (seqlensQ || seqlensK) defaults.batch = Math.max(seqlensQ?.length ?? 1, seqlensK?.length ?? 1);
  if (seqlensQ) defaults.nq = Math.max(1, ...seqlensQ);
  if (seqlensK) defaults.nk = Math.max(1, ...seqlensK);
  return { seqlensQ, seqlensK, defaults };
}

/** The problem as the hardware model takes it: the numeric problem's fields and the serving fields. */
export function hwShapeOf(a: ParsedArgs, problem: AttentionProblem, algo: string, pass: HwPass = 'forward'): ProblemShape {
  const { seqlensQ, seqlensK } = varlenOf(a);
  for (const [name, xs] of [
    ['seqlens-q', seqlensQ],
    ['seqlens-k', seqlensK],
  ] as const)
    if (xs && xs.length !== problem.batch) throw new ArgsError(`--${name} gives ${xs.length} lengths for a batch of ${problem.batch}`);
  if (flag(a, 'seqused') && !seqlensQ && !seqlensK) throw new ArgsError('--seqused needs --seqlens-q or --seqlens-k');
  const packGqa = str(a, 'pack-gqa');
  if (packGqa !== undefined && packGqa !== 'true' && packGqa !== 'false')
    throw new ArgsError(`--pack-gqa must be true or false, got '${packGqa}'`);
  const splits = splitsOf(a);
  const numSplits = splits !== undefined && !splitsAreSwitch(algo) ? splits : undefined;
  if (numSplits !== undefined && numSplits > 256)
    throw new ArgsError(`--splits must be auto or an integer from 1 to 256, got '${numSplits}'`);
  // Only the kernels whose descriptor takes it schedule a chunk; the others refuse it as the stepper does.
  if (problem.attentionChunk !== undefined && (pass === 'backward' || !descriptorOf(algo).supports.attentionChunk))
    throw new ArgsError(`--attention-chunk: ${noAttentionChunk(pass, algo).message}`);
  const pageSize = num(a, 'page-size');
  return {
    ...shapeOf(problem),
    ...(pageSize !== undefined ? { pageSize } : {}),
    ...(seqlensQ || seqlensK
      ? { varlen: { ...(seqlensQ ? { seqlensQ } : {}), ...(seqlensK ? { seqlensK } : {}), seqused: flag(a, 'seqused') } }
      : {}),
    ...(numSplits !== undefined ? { numSplits } : {}),
    ...(packGqa !== undefined ? { packGqa: packGqa === 'true' } : {}),
  };
}

/** The random sizes of a hardware command when not given: a kernel-sized problem in fp16. */
const HW_DEFAULTS: RandomDefaults = { batch: 1, nq: 4096, d: 128, dtype: 'fp16' };

/** `describe` / `simulate` arguments: one algorithm, one GPU, run's problem, the hardware options. */
export async function parseHwOptions(argv: string[], defaults: Partial<RandomDefaults> = {}): Promise<HwOptions> {
  const a = parseArgs(argv, HW_COMMAND_OPTIONS);
  const stepper = STEPPER_ONLY.find((k) => a[k] !== undefined);
  if (stepper !== undefined)
    throw new ArgsError(`--${stepper} sets how the numeric engine steps (run, trace); the kernel the hardware model runs picks its own`);
  const ids = str(a, 'algo') === undefined ? [] : algoIds(a);
  if (ids.length === 0) throw new ArgsError(`--algo is required (${HW_ALGORITHMS.map((x) => x.id).join(', ')})`);
  if (ids.length > 1) throw new ArgsError(`--algo takes one id here, got '${ids.join(',')}'`);
  const algo = ids[0];
  const gpu = str(a, 'gpu');
  if (!gpu) throw new ArgsError(`--gpu is required (${GPUS.map((g) => g.id).join(', ')})`);
  const pass: HwPass = flag(a, 'backward') ? 'backward' : 'forward';
  const layout = await layoutProblemFromArgs(a);
  const problem =
    layout?.problem ?? (await problemFromArgs(a, true, undefined, { ...HW_DEFAULTS, ...defaults, ...varlenOf(a).defaults })).problem;
  return {
    algo,
    gpu,
    problem,
    shape: { ...hwShapeOf(a, problem, algo, pass), ...layout?.serving },
    features: hwFeaturesFromArgs(a, algo),
    pass,
  };
}
