// Command-line options shared by `describe`, `simulate` and the hardware part of `trace`:
// the algorithm, the GPU, the problem shape and the feature switches. Every bad value is
// rejected with a message naming the flag.

import { DTYPES, validateProblem, type AttentionProblem, type DType, type SlidingWindow } from '../core/problem.ts';
import { GPUS } from '../hw/gpus/index.ts';
import type { HwFeatures, ProblemShape } from '../hw/model.ts';
import { HW_ALGORITHMS, HW_BACKWARD_ALGORITHMS, shapeOf, type HwPass } from '../hw/registry.ts';
import { parseWindow } from './problem-options.ts';

export interface HwOptions {
  algo: string;
  gpu: string;
  shape: ProblemShape;
  features: Partial<HwFeatures>;
  /** --backward: the backward kernel's schedule (dQ, dK, dV). */
  pass: HwPass;
}

export const HW_OPTIONS_HELP = [
  `  --algo ${HW_ALGORITHMS.map((a) => a.id).join('|')}`,
  `  --gpu ${GPUS.map((g) => g.id).join('|')}`,
  '  --b N --hq N --hk N        batch, query heads, key/value heads (hk defaults to hq)',
  '  --nq N --nk N              query and key lengths (nk defaults to nq)',
  '  --d N --dv N               head dims of Q/K and of V/O (dv defaults to d)',
  '  --dtype fp16|bf16|fp32     input type; fp8e4m3|fp8e5m2 for FA3 (FP8 wgmma, V transposed in SMEM)',
  '  --causal                   causal mask (bottom-right aligned)',
  '  --window L,R               sliding window of L keys left and R right of the diagonal (-1 = unbounded)',
  '  --softcap C                logit softcap C·tanh(s/C)',
  "  --attention-chunk N        FA3: chunked attention (keys within the query's chunk of N)",
  '  --page-size N              paged KV cache with pages of N tokens',
  '  --seqlens-q a,b,…          varlen: one query length per sequence (cu_seqlens_q differences; --b is their count)',
  '  --seqlens-k a,b,…          varlen: one key length per sequence',
  '  --seqused                  varlen lengths come as seqused_q/seqused_k (not cu_seqlens)',
  "  --pack-gqa true|false      GQA packing (default: the kernel's heuristic)",
  '  --no-pingpong              FA3: no named-barrier ping-pong between the consumer warpgroups',
  '  --no-intra-overlap         FA3: GEMM0 of the next block waits for the softmax (no overlap)',
  '  --no-lazy-rescale          FA4: correction rescales O after every block',
  '  --no-exp2-emulation        FA4: every exp2 on the MUFU',
  '  --stages N                 K/V pipeline depth (FA3, FA4, fmha_v2)',
  "  --splits auto|N            K/V splits: FA3/FA4 num_splits (auto: upstream's heuristic; default FA3 auto, FA4 1),",
  '                             flash-decoding splits per (batch, head)',
  `  --backward                 the backward kernel (${HW_BACKWARD_ALGORITHMS.map((a) => a.id).join(', ')}; cute-fa2 = fa2): TFLOP/s count 2.5 × the forward's FLOPs`,
  '  --deterministic            FA3 backward: column blocks add into dQ in a fixed order',
].join('\n');

const INT_FLAGS = ['--b', '--hq', '--hk', '--nq', '--nk', '--d', '--dv', '--stages', '--page-size', '--attention-chunk'] as const;

function lengths(flag: string, v: string): number[] {
  const xs = v.split(',').map((x) => Number(x.trim()));
  if (xs.length === 0 || !xs.every((x) => Number.isSafeInteger(x) && x >= 0))
    throw new Error(`${flag} needs lengths a,b,… (integers >= 0), got '${v}'`);
  return xs;
}

export function parseHwOptions(args: string[], defaults: { nq: number; d: number }): HwOptions {
  const ints: Record<string, number> = {};
  let algo: string | undefined;
  let gpu: string | undefined;
  let dtype: DType = 'fp16';
  let causal = false;
  let pass: HwPass = 'forward';
  let window: SlidingWindow | undefined;
  let softcap: number | undefined;
  let seqlensQ: number[] | undefined;
  let seqlensK: number[] | undefined;
  let seqused = false;
  let packGqa: boolean | undefined;
  let splits: number | undefined;
  const features: Partial<HwFeatures> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--algo') algo = value();
    else if (a === '--gpu') gpu = value();
    else if (a === '--dtype') {
      const v = value();
      if (!(DTYPES as readonly string[]).includes(v)) throw new Error(`--dtype must be one of ${DTYPES.join(', ')}, got '${v}'`);
      dtype = v as DType;
    } else if (a === '--causal') causal = true;
    else if (a === '--window') window = parseWindow(value());
    else if (a === '--softcap') {
      const v = value();
      softcap = Number(v);
      if (!(Number.isFinite(softcap) && softcap > 0)) throw new Error(`--softcap must be a number > 0, got '${v}'`);
    } else if (a === '--seqlens-q') seqlensQ = lengths(a, value());
    else if (a === '--seqlens-k') seqlensK = lengths(a, value());
    else if (a === '--seqused') seqused = true;
    else if (a === '--pack-gqa') {
      const v = value();
      if (v !== 'true' && v !== 'false') throw new Error(`--pack-gqa must be true or false, got '${v}'`);
      packGqa = v === 'true';
    } else if (a === '--splits') {
      const v = value();
      if (v === 'auto') splits = 0;
      else if (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 256) splits = Number(v);
      else throw new Error(`--splits must be auto or an integer from 1 to 256, got '${v}'`);
    } else if (a === '--backward') pass = 'backward';
    else if (a === '--deterministic') features.deterministic = true;
    else if (a === '--no-pingpong') features.pingpong = false;
    else if (a === '--no-intra-overlap') features.intraOverlap = false;
    else if (a === '--no-lazy-rescale') features.lazyRescale = false;
    else if (a === '--no-exp2-emulation') features.exp2Emulation = false;
    else if ((INT_FLAGS as readonly string[]).includes(a)) {
      const v = value();
      const n = Number(v);
      if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n <= 0) throw new Error(`${a} must be a positive integer, got '${v}'`);
      ints[a] = n;
    } else throw new Error(`unknown option '${a}'`);
  }
  if (!algo) throw new Error(`--algo is required (${HW_ALGORITHMS.map((x) => x.id).join(', ')})`);
  if (!gpu) throw new Error(`--gpu is required (${GPUS.map((g) => g.id).join(', ')})`);
  if (ints['--stages'] !== undefined) features.stages = ints['--stages'];
  // flash-decoding takes its split count as a switch; FA3/FA4 take num_splits as part of the problem.
  const decodingSplits = splits !== undefined && HW_ALGORITHMS.find((x) => x.id === algo)?.switches.splits !== undefined;
  if (decodingSplits) {
    if (splits === 0) throw new Error(`--splits auto: ${algo} picks its own split count when --splits is left out`);
    features.splits = splits;
  }
  const batch = ints['--b'] ?? Math.max(seqlensQ?.length ?? 1, seqlensK?.length ?? 1);
  for (const [flag, xs] of [
    ['--seqlens-q', seqlensQ],
    ['--seqlens-k', seqlensK],
  ] as const)
    if (xs && xs.length !== batch) throw new Error(`${flag} gives ${xs.length} lengths for a batch of ${batch}`);
  const hq = ints['--hq'] ?? 1;
  const nq = ints['--nq'] ?? (seqlensQ ? Math.max(1, ...seqlensQ) : defaults.nq);
  const d = ints['--d'] ?? defaults.d;
  const p: AttentionProblem = {
    batch,
    hq,
    hk: ints['--hk'] ?? hq,
    nq,
    nk: ints['--nk'] ?? (seqlensK ? Math.max(1, ...seqlensK) : nq),
    d,
    dv: ints['--dv'] ?? d,
    causal,
    dtype,
    ...(window ? { window } : {}),
    ...(softcap !== undefined ? { softcap } : {}),
  };
  validateProblem(p);
  return {
    algo,
    gpu,
    shape: {
      ...shapeOf(p),
      ...(ints['--attention-chunk'] !== undefined ? { attentionChunk: ints['--attention-chunk'] } : {}),
      ...(ints['--page-size'] !== undefined ? { pageSize: ints['--page-size'] } : {}),
      ...(seqlensQ || seqlensK ? { varlen: { ...(seqlensQ ? { seqlensQ } : {}), ...(seqlensK ? { seqlensK } : {}), seqused } } : {}),
      ...(splits !== undefined && !decodingSplits ? { numSplits: splits } : {}),
      ...(packGqa !== undefined ? { packGqa } : {}),
    },
    features,
    pass,
  };
}
