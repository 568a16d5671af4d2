// SageAttention forward (Zhang et al. 2024/2025, thu-ml/SageAttention; arXiv 2410.02367 and 2411.10958): attention
// with INT8 Q·Kᵀ. The inputs are quantized once before the kernel (engine/algorithms/sage/quant.ts):
// K smoothed by its mean over the tokens, Q and K as INT8 codes with one scale per block (per
// warp slice of Q in v2). The kernel then runs FA2's online softmax in fp32 and log2 units:
//
//   S = (Σ_e Q̂[i,e]·K̂[j,e]) · qScale · kScale   an exact INT32 sum of code products, dequantized
//   m, P = 2^(S − m), l                          fp32, the row sum over the fp32 P
//   O += P·V                                     version 1 or 2, below
//   O / l once at the end; LSE + q·mean(K)·scale (what smoothing took out, as the wrapper adds it)
//
// version 1 (the Triton kernel, sageattn_qk_int8_pv_fp16_triton; 128×64 tiles): P cast to fp16,
//   V in fp16, `tl.dot(p, v, out_dtype=float16)`: each K/V block's P·V accumulates in fp16
//   (the mma.f16 accumulator; modelled as 16-key chunks summed, then rounded to fp16) and is
//   added once per block to the fp32 O. The SM80 CUDA kernel's "fp16+fp32" accumulation is the
//   same arithmetic.
// version 2 (the SM89 CUDA kernel, sageattn_qk_int8_pv_fp8_cuda; CTA 128×64, 4 warps of 32
//   query rows): Q quantized per warp slice (qPerWarp), the scale·log2 e multiplied into the
//   dequantization factor; P computed as 2^(S − m + 8.807), i.e. scaled to e4m3's range
//   (2^8.807 ≈ 448), and cast to e4m3; V per-channel e4m3; P·V accumulated in fp32 (the
//   kernel's "fp32+fp32": the FP8 MMA keeps about 22 bits, and its result is added to an fp32
//   buffer every block; FlashScope keeps fp32 throughout). The row sum uses the fp32 P, as the
//   kernel's CUDA-core denominator does. With qPerWarp the trace steps each warp's 32 rows as
//   their own unit (events carry `warp`), so every S tile has exactly one Q scale.
//
// Support table (FlashScope runs each for real):
//   causal, GQA/MQA, Nq ≠ Nk: in the kernels. Sliding window: not in the kernels; it falls out
//   of the shared mask step, so FlashScope runs it. ALiBi, softcap, attention sinks: not in
//   SageAttention; refused. d ≠ dv and d > 128: the kernels take one head dim up to 128;
//   refused. dtype fp16/bf16 are the kernels'; fp32 runs unrounded (V stays fp32 in v1); the
//   FP8 dtypes are refused (sage chooses its own precisions).
// Counters: the quantization pass is a separate kernel and is not counted; the attention
// kernel reads 1 byte per Q/K code, V at 2 bytes (v1) or 1 (v2), and writes O in the input dtype.

import { SAGE_SUPPORTS } from './supports.ts';
import { requireSupported } from '../capabilities.ts';
import { roundFp16 } from '../../core/dtype.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { lseCorrection, prepareSage, sageLogit, type SageVersion } from './quant.ts';
import { roundFp8 } from '../../lowprec/fp8.ts';
import { dtypeBytes, ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { readFeatures, type FeatureSpecs, type SwitchValues } from '../features.ts';
import * as step from '../tile-steps.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';

export const SAGE_FEATURES = {
  version: {
    default: 1,
    panel: true,
    choices: [1, 2],
    check: (v: number) => (v === 1 || v === 2 ? undefined : `must be 1 (INT8 Q·Kᵀ, FP16 P·V) or 2 (INT8 Q·Kᵀ, FP8 P·V), got ${v}`),
    doc: 'SageAttention 1 (FP16 P and V, fp16 accumulation per block) or 2 (P and per-channel V in FP8 e4m3, fp32 accumulation)',
  },
  smoothK: {
    default: true,
    panel: true,
    doc: 'subtract the mean of K over the tokens before quantizing it (softmax unchanged; the LSE gets q·mean·scale back)',
  },
  qPerWarp: {
    default: true,
    panel: true,
    inactive: (v: SwitchValues) => (v.version === 2 ? undefined : 'applies to version 2 only'),
    doc: 'version 2 only: one Q scale per warp (32 rows of the 128-row tile) instead of per tile; each warp slice is stepped as its own unit',
  },
} satisfies FeatureSpecs;

/** The kernels' tile: 128 query rows × 64 keys (v1's Triton BLOCK_M × BLOCK_N; v2's SM89 CTA_Q × CTA_K). */
export const SAGE_TILE = { blockM: 128, blockN: 64 };
/** Query rows per warp in v2's SM89 kernel (WARP_Q): the granularity of its per-warp Q scales. */
export const SAGE_WARP_ROWS = 32;
/** 2^8.807 ≈ 448: v2 computes P as 2^(S − m + 8.807) so that P fills e4m3's range before the cast. */
export const SAGE_P_SCALE = Math.fround(2 ** 8.807);
/** K depth of one fp16 MMA (m16n8k16): the products summed before v1's fp16 accumulator rounds. */
const FP16_MMA_K = 16;

function* runSage(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures('sage', SAGE_FEATURES, opts.features);
  requireSupported('sage', SAGE_SUPPORTS, 'forward', p);
  const version = f.version as SageVersion;
  if (version === 1 && opts.features && 'qPerWarp' in opts.features) {
    throw new ProblemError('features.qPerWarp', 'applies to version 2 only (v1 quantizes Q per 128-row block, as its Triton kernel does)');
  }
  const { blockM, blockN } = sage.blocks(p, opts);
  const perWarp = version === 2 && f.qPerWarp;
  const unitRows = perWarp ? Math.min(SAGE_WARP_ROWS, blockM) : blockM;
  // Q scale groups must not straddle a tile: with a tile that is not a multiple of 32 rows the
  // last warp slice is short and the next tile starts a new group.
  if (perWarp && blockM % unitRows !== 0) {
    throw new ProblemError(
      'blockM',
      `version 2 quantizes Q per warp of ${SAGE_WARP_ROWS} rows; the Q tile must be a multiple of ${unitRows} rows, got ${blockM}`,
    );
  }
  const prep = prepareSage(p, x, { version, smoothK: f.smoothK, qRows: unitRows, kRows: blockN });

  const ctx = step.makeContext(p, { q: x.q, k: x.k, v: prep.v }, opts, {
    prefix: 'sage',
    base2: true,
    scores: {
      logit: (b, h, hk, i, j) => sageLogit(p, prep, b, h, hk, i, j),
      qScale: (b, h, row) => prep.qScales[b * p.hq + h][Math.floor(row / prep.qRows)],
      kScale: (b, hk, key) => prep.kScales[b * p.hk + hk][Math.floor(key / prep.kRows)],
    },
    pCast:
      version === 1
        ? { pScale: 1, cast: roundFp16 }
        : { pScale: SAGE_P_SCALE, cast: (v: number) => roundFp8('e4m3', Math.fround(v * SAGE_P_SCALE)) / SAGE_P_SCALE },
    ...(version === 1 ? { pvBlock: { round: roundFp16, chunk: FP16_MMA_K } } : {}),
    ...(version === 2 ? { vScales: (b: number, hk: number) => Array.from(prep.vScales[b * p.hk + hk]) } : {}),
  });
  step.walkBlockMask(ctx, blockM, blockN);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const tr = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  const vBytes = version === 1 ? 2 : 1;
  const lse = new Float64Array(blockM);
  const qSat = (b: number, h: number, row: number) => prep.qSaturated[b * p.hq + h][Math.floor(row / prep.qRows)];
  const kSat = (b: number, hk: number, key: number) => prep.kSaturated[b * p.hk + hk][Math.floor(key / prep.kRows)];

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < tr; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        const cta: step.At = { b, h, outer: i, inner: -1, qBlock: i };
        // One unit per warp slice (v2 per-warp Q scales) or the whole tile.
        const units: { st: step.RowState; at: step.At; t: step.ScoreTile }[] = [];
        for (let w0 = r0, w = 0; w0 < r1; w0 += unitRows, w++) {
          const rows = Math.min(r1, w0 + unitRows) - w0;
          const at: step.At = { ...cta };
          if (perWarp) at.warp = w;
          units.push({ st: new step.RowState(hk, w0, rows, p.dv), at, t: new step.ScoreTile(rows, blockN) });
        }
        // Q: its codes and the scale of each unit (one load per warp slice under per-warp scales).
        for (const u of units) {
          const rows: [number, number] = [u.st.r0, u.st.r0 + u.st.rows];
          yield* step.load(ctx, u.at, 'loadQ', rows, [0, 0], -1, { Q: u.st.rows * p.d }, () => ({
            scale: ctx.scores!.qScale(b, h, u.st.r0),
            saturated: qSat(b, h, u.st.r0),
          }));
        }
        for (const j of yield* step.visitedKv(ctx, cta, [i], 0, tc)) {
          const c0 = j * blockN;
          const c1 = Math.min(p.nk, c0 + blockN);
          const atj: step.At = { ...cta, inner: j };
          yield* step.load(ctx, atj, 'loadK', [r0, r1], [c0, c1], j, { K: (c1 - c0) * p.d }, () => ({
            scale: ctx.scores!.kScale(b, hk, c0),
            saturated: kSat(b, hk, c0),
          }));
          yield* step.load(ctx, atj, 'loadV', [r0, r1], [c0, c1], j, { V: (c1 - c0) * p.dv * vBytes });
          for (const u of units) {
            // Causal: a warp slice wholly above the diagonal of this block still runs it; its S is all −∞ after the mask and P is 0.
            const at: step.At = { ...u.at, inner: j };
            yield* step.softmaxBlock(ctx, at, u.st, u.t, j, c0, c1 - c0);
          }
        }
        for (const u of units) {
          // The kernel's LSE is that of the smoothed logits; add back what smoothing removed
          // (the normalize event names it, so a float64 comparison can shift its scores alike).
          const shift = f.smoothK
            ? Array.from({ length: u.st.rows }, (_, r) => lseCorrection(p, x, prep, b, h, hk, u.st.r0 + r))
            : undefined;
          yield* step.normalize(ctx, u.at, u.st, lse, true, shift);
          if (shift) for (let r = 0; r < u.st.rows; r++) if (lse[r] !== -Infinity) lse[r] += shift[r];
          step.storeRows(ctx, u.at, u.st, lse, o, lseOut);
        }
        yield* step.write(ctx, cta, 'write', [r0, r1], { O: (r1 - r0) * p.dv * dtypeBytes(p.dtype), LSE: (r1 - r0) * 4 });
      }
    }
  }
  const result: AlgorithmResult = { o, lse: lseOut, counters: ctx.tr.counters, blocks: { blockM, blockN } };
  result.stats = { flushedP: ctx.tally.flushedP, castP: ctx.tally.castP, saturated: prep.saturated };
  return result;
}

export const sage: StepAlgorithm = {
  id: 'sage',
  name: 'SageAttention (INT8 Q·Kᵀ, FP16/FP8 P·V)',
  blocks: (p, o) => resolveBlocks(p, o, SAGE_TILE),
  run: runSage,
  quantized: true,
};
