// The problem options `run` and `trace` share: tensors from files (with their layout) or
// random ones, masks and score modifiers, block sizes, features and the input dtype.
// Turns parsed arguments into a validated problem, BHND inputs and run options.

import { roundArray } from '../core/dtype.ts';
import { randomInputs, type AttentionInputs, type InputDistribution } from '../core/inputs.ts';
import {
  DEFAULT_PROBLEM,
  DTYPES,
  ProblemError,
  validateProblem,
  type AttentionProblem,
  type DType,
  type ProblemDims,
} from '../core/problem.ts';
import { TensorFileError } from '../io/byte-source.ts';
import type { Tensor } from '../io/tensor-info.ts';
import type { BlockOptions } from '../algorithms/types.ts';
import type { Tile } from '../algorithms/blocks.ts';
import { passBlocks } from '../request.ts';
import { checkCliSize, type CliSizing } from './size-limits.ts';
import { ArgsError, flag, list, num, str, type OptionSpec, type ParsedArgs } from './args.ts';
import { loadTensorFile, loadVector } from './tensor-files.ts';
import { MASK_HELP, maskFromFlags } from './mask-options.ts';
import { FieldError, fieldsToProblem, problemToFields, type ProblemFields } from '../problem-fields.ts';

export type Layout = 'bhnd' | 'bnhd';

export const PROBLEM_OPTIONS: OptionSpec = {
  algo: 'string',
  q: 'string',
  k: 'string',
  v: 'string',
  causal: 'flag',
  window: 'string',
  'attention-chunk': 'int',
  alibi: 'flag',
  'alibi-slopes': 'string',
  softcap: 'number',
  sink: 'string',
  scale: 'number',
  layout: 'string',
  dtype: 'string',
  'block-m': 'int',
  'block-n': 'int',
  'sram-bytes': 'int',
  feature: 'repeat',
  'mask-mod': 'string',
  'score-mod': 'string',
};

export const RANDOM_OPTIONS: OptionSpec = {
  b: 'int',
  hq: 'int',
  hk: 'int',
  nq: 'int',
  nk: 'int',
  d: 'int',
  dv: 'int',
  seed: 'int',
  distribution: 'string',
};

export const PROBLEM_HELP = `problem:
  --q FILE --k FILE --v FILE  tensors (.npy, or .safetensors[:NAME]); rank 2 [N, d],
                              3 [H, N, d] or 4 [B, H, N, d] (bnhd: [B, N, H, d]); v has dv
  --layout bhnd|bnhd          memory order of the tensor files (default bhnd)
  --dtype fp32|fp16|bf16      input precision; inputs are rounded to it (default: from q's
                              file type: float16 -> fp16, bfloat16 -> bf16, else fp32)
  --dtype fp8e4m3|fp8e5m2     FA3's FP8 forward (--algo fa3; with --backend webgpu emulated on
                              --path flash-f32, with error.json): inputs are read as they
                              are and quantized by the FP8 path (see --feature blockQuant,
                              incoherent, pScale, reverseKv, seed); O is written as bf16 values
  --causal                    causal mask, aligned bottom-right when Nq != Nk
  --window L,R                sliding window of L keys left and R right of the diagonal (-1 = unbounded)
  --attention-chunk N         chunked attention: a query sees only keys of its own chunk of N
                              positions (FA3's attention_chunk; fa3 and standard take it)
  --alibi                     ALiBi with the standard per-head slopes
  --alibi-slopes FILE         ALiBi with explicit slopes, 1-D of length Hq
  --softcap C                 logit softcap C·tanh(s/C)
  --sink FILE                 attention-sink logits, 1-D of length Hq
  --scale X                   softmax scale (default 1/sqrt(d))
${MASK_HELP}
blocks:
  --block-m N --block-n N     tile sizes Br × Bc
  --sram-bytes M              on-chip memory; Bc = ceil(M/4 / 4d), Br = min(Bc, d) (FA1 paper)
  --feature KEY=VALUE         algorithm feature (repeatable); VALUE is true, false or a number
                              (sage: version=1|2, smoothK, qPerWarp; it quantizes fp16/bf16/
                              fp32 inputs itself to INT8 Q/K and FP16 or FP8 P·V, and writes
                              the same error.json and precision counts as the FP8 path)`;

/** The WebGPU kernels mask by causal and the window only: a chunked problem is refused before any file is read. */
export function refuseAttentionChunkOnWebGpu(a: ParsedArgs): void {
  if (num(a, 'attention-chunk') !== undefined)
    throw new ArgsError('--attention-chunk: the WebGPU kernels have no attention chunk; run it on the CPU with --algo fa3 or standard');
}

export interface CliProblem {
  problem: AttentionProblem;
  inputs: AttentionInputs;
  blocks: BlockOptions;
  features: Record<string, boolean | number>;
  /** Shape of q as given, so outputs can be written back in the same layout. */
  rank: number;
  layout: Layout;
}

/** [B, H, N, D] of a tensor, read according to its rank and the layout. */
function dims(t: Tensor, role: string, layout: Layout): [number, number, number, number] {
  const s = t.info.shape;
  if (s.length === 2) return [1, 1, s[0], s[1]];
  if (s.length === 3) return layout === 'bhnd' ? [1, s[0], s[1], s[2]] : [1, s[1], s[0], s[2]];
  if (s.length === 4) return layout === 'bhnd' ? [s[0], s[1], s[2], s[3]] : [s[0], s[2], s[1], s[3]];
  throw new ProblemError(role, `rank ${s.length} tensor [${s.join(', ')}]; expected rank 2 [N, d], 3 [H, N, d] or 4 [B, H, N, d]`);
}

/** Copies a tensor stored in `layout` into BHND float32. */
export function toBhnd(data: ArrayLike<number>, [B, H, N, D]: number[], layout: Layout): Float32Array {
  const out = new Float32Array(B * H * N * D);
  if (layout === 'bhnd') {
    for (let i = 0; i < out.length; i++) out[i] = data[i];
    return out;
  }
  for (let b = 0; b < B; b++)
    for (let n = 0; n < N; n++)
      for (let h = 0; h < H; h++) {
        const src = ((b * N + n) * H + h) * D;
        const dst = ((b * H + h) * N + n) * D;
        for (let e = 0; e < D; e++) out[dst + e] = data[src + e];
      }
  return out;
}

/** The inverse of toBhnd: BHND values into `layout` order. */
export function fromBhnd(data: ArrayLike<number>, [B, H, N, D]: number[], layout: Layout): Float32Array {
  const out = new Float32Array(B * H * N * D);
  if (layout === 'bhnd') {
    for (let i = 0; i < out.length; i++) out[i] = data[i];
    return out;
  }
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let n = 0; n < N; n++) {
        const src = ((b * H + h) * N + n) * D;
        const dst = ((b * N + n) * H + h) * D;
        for (let e = 0; e < D; e++) out[dst + e] = data[src + e];
      }
  return out;
}

/** The shape a BHND [B, H, N, D] result takes in the caller's rank and layout. */
export function shapeFor(rank: number, [B, H, N, D]: number[], layout: Layout): number[] {
  if (rank === 2) return [N, D];
  if (rank === 3) return layout === 'bhnd' ? [H, N, D] : [N, H, D];
  return layout === 'bhnd' ? [B, H, N, D] : [B, N, H, D];
}

export function parseDtype(v: string | undefined): DType | undefined {
  if (v === undefined) return undefined;
  const known = DTYPES as readonly string[];
  if (!known.includes(v)) throw new ArgsError(`--dtype must be one of ${DTYPES.join(', ')}, got '${v}'`);
  return v as DType;
}

export function parseWindow(v: string | undefined): AttentionProblem['window'] {
  if (v === undefined) return undefined;
  const m = /^(-?\d+),(-?\d+)$/.exec(v.trim());
  if (!m) throw new ArgsError(`--window needs L,R (integers, -1 = unbounded), got '${v}'`);
  return { left: Number(m[1]), right: Number(m[2]) };
}

export function parseFeatures(items: string[]): Record<string, boolean | number> {
  const out: Record<string, boolean | number> = {};
  for (const item of items) {
    const m = /^([A-Za-z][\w.-]*)=(.+)$/.exec(item);
    if (!m) throw new ArgsError(`--feature needs KEY=VALUE, got '${item}'`);
    const [, key, raw] = m;
    if (raw === 'true' || raw === 'false') out[key] = raw === 'true';
    else if (Number.isFinite(Number(raw))) out[key] = Number(raw);
    else throw new ArgsError(`--feature ${key}: value must be true, false or a number, got '${raw}'`);
  }
  return out;
}

export function parseLayout(v: string | undefined): Layout {
  if (v === undefined || v === 'bhnd' || v === 'bnhd') return v ?? 'bhnd';
  throw new ArgsError(`--layout must be bhnd or bnhd, got '${v}'`);
}

async function fromFiles(
  a: ParsedArgs,
  layout: Layout,
  sized: (dims: ProblemDims) => void,
  maxBytes: number | undefined,
): Promise<{ problem: Omit<AttentionProblem, 'causal' | 'dtype'>; raw: AttentionInputs; fileDtype: DType; rank: number }> {
  const [qt, kt, vt] = await Promise.all(['q', 'k', 'v'].map((r) => loadTensorFile(str(a, r)!, { maxBytes })));
  const ranks = [qt, kt, vt].map((t) => t.info.shape.length);
  const [qd, kd, vd] = [dims(qt, 'q', layout), dims(kt, 'k', layout), dims(vt, 'v', layout)];
  if (ranks[1] !== ranks[0] || ranks[2] !== ranks[0]) {
    throw new ProblemError('k', `q, k and v must have the same rank; got ${ranks.join(', ')}`);
  }
  const [B, Hq, Nq, d] = qd;
  const [Bk, Hk, Nk, dk] = kd;
  const [Bv, Hv, Nv, dv] = vd;
  const shapes = `q [${qt.info.shape.join(', ')}], k [${kt.info.shape.join(', ')}], v [${vt.info.shape.join(', ')}]`;
  if (Bk !== B || Bv !== B) throw new ProblemError('batch', `q, k and v disagree on the batch size: ${shapes}`);
  if (dk !== d) throw new ProblemError('d', `q and k must have the same head dim: ${shapes}`);
  if (Hv !== Hk || Nv !== Nk) throw new ProblemError('v', `v must have k's heads and length: ${shapes}`);
  if (Hq % Hk !== 0) {
    throw new ProblemError('hk', `q has ${Hq} heads, k has ${Hk}: not a multiple (${shapes}, read as --layout ${layout})`);
  }
  sized({ batch: B, hq: Hq, hk: Hk, nq: Nq, nk: Nk, d, dv });
  const fileDtype: DType = qt.info.dtype === 'float16' ? 'fp16' : qt.info.dtype === 'bfloat16' ? 'bf16' : 'fp32';
  return {
    problem: { batch: B, hq: Hq, hk: Hk, nq: Nq, nk: Nk, d, dv },
    raw: { q: toBhnd(qt.data, qd, layout), k: toBhnd(kt.data, kd, layout), v: toBhnd(vt.data, vd, layout) },
    fileDtype,
    rank: ranks[0],
  };
}

/** Defaults of a random problem's sizes and dtype, where a command's own differ from run's. */
export interface RandomDefaults {
  batch: number;
  nq: number;
  /** Absent: nk follows nq. */
  nk?: number;
  d: number;
  dtype: DType;
}

const RUN_DEFAULTS: RandomDefaults = { batch: DEFAULT_PROBLEM.batch, nq: DEFAULT_PROBLEM.nq, d: DEFAULT_PROBLEM.d, dtype: 'fp32' };

/** The options' problem (validated) and, with --q/--k/--v, the tensors as read; random inputs are not made here. */
export interface ArgsProblem {
  problem: AttentionProblem;
  /** The tensor files' values in BHND, not yet rounded to the dtype; absent for a random problem. */
  raw?: AttentionInputs;
  blocks: BlockOptions;
  rank: number;
  layout: Layout;
}

/** The scalar part of the problem through the app's one form conversion, so both read a field alike. */
function problemThroughFields(dims: ProblemDims, a: ParsedArgs, dtype: DType): AttentionProblem {
  const window = parseWindow(str(a, 'window'));
  const side = (w: number | undefined) => (w === undefined || w === -1 ? '' : String(w));
  const softcap = num(a, 'softcap');
  const chunk = num(a, 'attention-chunk');
  const fields: ProblemFields = {
    ...problemToFields({ ...dims, causal: flag(a, 'causal'), dtype }),
    windowLeft: side(window?.left),
    windowRight: side(window?.right),
    attentionChunk: chunk === undefined ? '' : String(chunk),
    softcap: softcap === undefined ? '' : String(softcap),
  };
  try {
    const p = fieldsToProblem(fields);
    // The fields leave a window unbounded on both sides out; the CLI keeps it as given.
    if (window && !p.window) p.window = window;
    return p;
  } catch (e) {
    if (e instanceof FieldError && e.field.startsWith('window'))
      throw new ArgsError(`--window needs L,R (integers >= 0, -1 = unbounded): ${e.message}`);
    if (e instanceof FieldError) throw new ArgsError(`--${e.field.replaceAll(' ', '-')}: ${e.message}`);
    throw e;
  }
}

/**
 * Builds the problem from files when --q/--k/--v are given, otherwise from the random
 * options (when `allowRandom`). Validates everything before any algorithm runs.
 */
export async function problemFromArgs(
  a: ParsedArgs,
  allowRandom: boolean,
  sizing?: CliSizing,
  defaults: RandomDefaults = RUN_DEFAULTS,
): Promise<ArgsProblem> {
  const blocks = blockOptions(a);
  const sized = (p: AttentionProblem, fromFiles: boolean) => {
    if (sizing) for (const tile of runTiles(a, p, blocks, sizing.backward)) checkCliSize(p, tile, sizing, fromFiles);
  };
  const layout = parseLayout(str(a, 'layout'));
  const files = ['q', 'k', 'v'].filter((r) => str(a, r) !== undefined);
  const dtypeOpt = parseDtype(str(a, 'dtype'));
  const scale = num(a, 'scale');
  let problem: AttentionProblem;
  let raw: AttentionInputs | undefined;
  let rank = 4;
  if (files.length > 0) {
    if (files.length !== 3) throw new ArgsError('give all of --q, --k and --v (or none, for random inputs)');
    const randomGiven = Object.keys(RANDOM_OPTIONS).filter((k) => a[k] !== undefined);
    if (randomGiven.length) throw new ArgsError(`--${randomGiven[0]} describes random inputs; it cannot be combined with --q/--k/--v`);
    const f = await fromFiles(
      a,
      layout,
      (dims) => sized({ ...problemThroughFields(dims, a, 'fp32'), ...(scale !== undefined ? { scale } : {}) }, true),
      sizing?.command === 'run' ? sizing.maxBytes : undefined,
    );
    problem = problemThroughFields(f.problem, a, dtypeOpt ?? f.fileDtype);
    raw = f.raw;
    rank = f.rank;
  } else {
    if (!allowRandom) throw new ArgsError('--q, --k and --v are required');
    const hq = num(a, 'hq') ?? DEFAULT_PROBLEM.hq;
    const d = num(a, 'd') ?? defaults.d;
    const nq = num(a, 'nq') ?? defaults.nq;
    const dims: ProblemDims = {
      batch: num(a, 'b') ?? defaults.batch,
      hq,
      hk: num(a, 'hk') ?? hq,
      nq,
      nk: num(a, 'nk') ?? defaults.nk ?? nq,
      d,
      dv: num(a, 'dv') ?? d,
    };
    problem = problemThroughFields(dims, a, dtypeOpt ?? defaults.dtype);
    validateProblem(problem);
    sized(problem, false);
  }
  if (scale !== undefined) problem.scale = scale;
  if (flag(a, 'alibi') && str(a, 'alibi-slopes')) throw new ArgsError('give --alibi or --alibi-slopes, not both');
  if (flag(a, 'alibi')) problem.alibi = 'standard';
  const slopes = str(a, 'alibi-slopes');
  if (slopes) problem.alibi = await loadVector(slopes, problem.hq, '--alibi-slopes');
  const sink = str(a, 'sink');
  if (sink) problem.sinks = await loadVector(sink, problem.hq, '--sink');
  const mask = maskFromFlags(str(a, 'mask-mod'), str(a, 'score-mod'), problem);
  if (mask) problem.mask = mask;
  validateProblem(problem);
  return { problem, ...(raw ? { raw } : {}), blocks, rank, layout };
}

/** The problem and its inputs: the tensor files rounded to the dtype, or random ones (--seed, --distribution). */
export async function cliProblem(a: ParsedArgs, allowRandom: boolean, sizing?: CliSizing): Promise<CliProblem> {
  const dist = str(a, 'distribution') ?? 'normal';
  if (!['normal', 'large-logits', 'outlier-row', 'fa3-outliers', 'sink'].includes(dist)) {
    throw new ArgsError(`--distribution must be normal, large-logits, outlier-row, fa3-outliers or sink, got '${dist}'`);
  }
  const { problem, raw, blocks, rank, layout } = await problemFromArgs(a, allowRandom, sizing);
  const inputs = raw
    ? { q: roundArray(problem.dtype, raw.q), k: roundArray(problem.dtype, raw.k), v: roundArray(problem.dtype, raw.v) }
    : randomInputs(problem, { seed: num(a, 'seed') ?? 0, distribution: dist as InputDistribution });
  return { problem, inputs, blocks, features: parseFeatures(list(a, 'feature')), rank, layout };
}

/**
 * The tiles the --algo algorithms' passes run on `p`, resolved as a load resolves them
 * (passBlocks), so the size check sizes the trace that will be written. Without --algo (the
 * WebGPU paths) the whole problem as one tile: a run's memory does not depend on its tile.
 */
export function runTiles(a: ParsedArgs, p: AttentionProblem, blocks: BlockOptions, backward: boolean): Tile[] {
  if (str(a, 'algo') === undefined) return [{ blockM: p.nq, blockN: p.nk }];
  const pass = backward ? 'backward' : 'forward';
  return algoIds(a).map((algorithm) => passBlocks({ algorithm, pass, blocks }, p));
}

export function blockOptions(a: ParsedArgs): BlockOptions {
  const blocks: BlockOptions = {};
  if (num(a, 'block-m') !== undefined) blocks.blockM = num(a, 'block-m');
  if (num(a, 'block-n') !== undefined) blocks.blockN = num(a, 'block-n');
  if (num(a, 'sram-bytes') !== undefined) blocks.sramBytes = num(a, 'sram-bytes');
  if (blocks.sramBytes !== undefined && (blocks.blockM !== undefined || blocks.blockN !== undefined)) {
    throw new ArgsError('give --block-m/--block-n or --sram-bytes, not both');
  }
  return blocks;
}

export function algoIds(a: ParsedArgs): string[] {
  const v = str(a, 'algo');
  if (!v) throw new ArgsError('--algo is required (comma-separated ids, e.g. standard,fa1,fa2)');
  const ids = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (ids.length === 0) throw new ArgsError(`--algo has no ids: '${v}'`);
  return ids;
}

export { TensorFileError };
