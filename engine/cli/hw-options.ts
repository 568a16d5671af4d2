// Command-line options shared by `describe`, `simulate` and the hardware part of `trace`:
// the algorithm, the GPU, the problem shape and the feature switches. Every bad value is
// rejected with a message naming the flag.

import { DTYPES, validateProblem, type AttentionProblem, type DType } from '../core/problem.ts';
import { GPUS } from '../hw/gpus/index.ts';
import type { HwFeatures, ProblemShape } from '../hw/model.ts';
import { HW_ALGORITHMS, HW_BACKWARD_ALGORITHMS, type HwPass } from '../hw/registry.ts';

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
  '  --no-pingpong              FA3: no named-barrier ping-pong between the consumer warpgroups',
  '  --no-intra-overlap         FA3: GEMM0 of the next block waits for the softmax (no overlap)',
  '  --no-lazy-rescale          FA4: correction rescales O after every block',
  '  --no-exp2-emulation        FA4: every exp2 on the MUFU',
  '  --stages N                 K/V pipeline depth (FA3, FA4, fmha_v2)',
  '  --splits N                 flash-decoding: K/V splits per (batch, head)',
  `  --backward                 the backward kernel (${HW_BACKWARD_ALGORITHMS.map((a) => a.id).join(', ')}; cute-fa2 = fa2): TFLOP/s count 2.5 × the forward's FLOPs`,
  '  --deterministic            FA3 backward: column blocks add into dQ in a fixed order',
].join('\n');

const INT_FLAGS = ['--b', '--hq', '--hk', '--nq', '--nk', '--d', '--dv', '--stages', '--splits'] as const;

export function parseHwOptions(args: string[], defaults: { nq: number; d: number }): HwOptions {
  const ints: Record<string, number> = {};
  let algo: string | undefined;
  let gpu: string | undefined;
  let dtype: DType = 'fp16';
  let causal = false;
  let pass: HwPass = 'forward';
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
    else if (a === '--backward') pass = 'backward';
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
  if (ints['--splits'] !== undefined) features.splits = ints['--splits'];
  const hq = ints['--hq'] ?? 1;
  const nq = ints['--nq'] ?? defaults.nq;
  const d = ints['--d'] ?? defaults.d;
  const p: AttentionProblem = {
    batch: ints['--b'] ?? 1,
    hq,
    hk: ints['--hk'] ?? hq,
    nq,
    nk: ints['--nk'] ?? nq,
    d,
    dv: ints['--dv'] ?? d,
    causal,
    dtype,
  };
  validateProblem(p);
  return {
    algo,
    gpu,
    shape: { batch: p.batch, hq: p.hq, hk: p.hk, nq: p.nq, nk: p.nk, d: p.d, dv: p.dv, dtype: p.dtype, causal: p.causal },
    features,
    pass,
  };
}
