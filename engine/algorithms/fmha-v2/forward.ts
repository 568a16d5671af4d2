// TensorRT-LLM's fmha_v2 flash-attention kernel on Ada (SM89), as the TensorRT-LLM
// cpp/kernels/fmha_v2 sm89 build runs it (fmha_v2_flash_attention_fp16_128_128_S_qkv_16_sm89, "noloop tiled").
//
// - Grid: blockIdx.z = batch, blockIdx.y = head, blockIdx.x = Q tile; one CTA per
//   (batch, head, Q tile), so the trace's outer loop is exactly the grid.
// - 4 warps split the CTA's Q rows (wm = 4, wn = 1): warp w owns rows
//   [r0 + w·Br/4, r0 + (w+1)·Br/4). Softmax is per row, so each warp runs its own
//   S = QKᵀ, max, exp, sum, normalizer update and O += PV on its rows without talking to
//   the other warps; events carry `warp`.
// - K/V double buffering: the CTA issues the copy (LDGSTS) of block j+1 into the second
//   buffer before computing on block j, so each load event comes one block ahead.
// - Softmax with a running max and sum ("global_max", "global_sum"); the normalizer
//   rescales acc_o when the max grows and divides by the sum once at the end.
// - Layout: packed QKV [B, S, 3, H, D] when the problem allows it (hq = hk, Nq = Nk, d = dv);
//   otherwise contiguous Q + KV. A head's rows are strided 3·H·D apart in the packed
//   layout, which changes the addresses a tile reads, not the bytes: HBM bytes are counted
//   per tensor as in fa2.ts (K/V re-read by every Q tile of the head).
// - fp16Accumulation (default off): the modelled build defines HALF_ACCUMULATION_FOR_FLASH_ATTENTION
//   and runs an "fp16" (not "fp16_fp32") kernel: both GEMMs accumulate in fp16 registers.
//   Modelled as rounding to fp16 after every add of Q·Kᵀ and of P·V, and after each rescale
//   of acc_o (a pessimistic model: the tensor core rounds once per k-step, not per product).
//   Only for fp16 inputs — there is no bf16- or fp32-accumulating HMMA with 16-bit output.
//
// Tiles (STEP_Q × STEP_KV): d ≤ 64: 128 × 128 (the modelled build); d ≤ 128: 64 × 64;
// d ≤ 256: 64 × 32 — FlashScope's choice for larger heads so that Q plus two K/V buffers
// of 16-bit data stay under SM89's 100 KB of shared memory. Overridable with blockM/blockN.
//
// Support table: causal, sliding window (the "sliding_or_chunked_causal" kernel), ALiBi,
// softcap, GQA/MQA (contiguous Q + KV or paged layouts), Nq ≠ Nk, d ≠ dv: supported by
// fmha_v2 and run here. Attention sinks: the kernel has no sink input; FlashScope
// adds one with FA2's math (at the final normalization). fp32 inputs: no fp32 fmha_v2 kernel;
// FlashScope runs them unrounded. d > 256: rejected.

import { FMHA_V2_SUPPORTS } from './supports.ts';
import { requireSupported } from '../capabilities.ts';
import { roundFp16 } from '../../core/dtype.ts';
import { ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { readFeatures, type FeatureSpecs } from '../features.ts';
import * as step from '../tile-steps.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';

export const FMHA_V2_FEATURES = {
  fp16Accumulation: {
    default: false,
    panel: true,
    dtypes: ['fp16'],
    dtypeWhy: 'fp16 HMMA takes fp16 operands',
    doc: 'accumulate both GEMMs in fp16 (HALF_ACCUMULATION_FOR_FLASH_ATTENTION)',
  },
} satisfies FeatureSpecs;
export const FMHA_V2_WARPS = 4;

export function fmhaV2DefaultTile(p: Pick<AttentionProblem, 'd'>): { blockM: number; blockN: number } {
  if (p.d <= 64) return { blockM: 128, blockN: 128 };
  if (p.d <= 128) return { blockM: 64, blockN: 64 };
  return { blockM: 64, blockN: 32 };
}

/** Whether fmha_v2 can read this problem from one packed [B, S, 3, H, D] QKV tensor. */
export function fmhaV2PackedQkv(p: AttentionProblem): boolean {
  return p.hq === p.hk && p.nq === p.nk && p.d === p.dv;
}

function* runFmhaV2(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures('fmha-v2', FMHA_V2_FEATURES, opts.features);
  requireSupported('fmha-v2', FMHA_V2_SUPPORTS, 'forward', p);
  if (f.fp16Accumulation && p.dtype !== 'fp16') {
    throw new ProblemError('features.fp16Accumulation', `needs dtype fp16 (fp16-accumulating HMMA takes fp16 operands), got ${p.dtype}`);
  }
  const { blockM, blockN } = fmhaV2.blocks(p, opts);
  const ctx = step.makeContext(p, x, opts, {
    prefix: 'fmha-v2',
    accRound: f.fp16Accumulation ? roundFp16 : Math.fround,
    dotRound: f.fp16Accumulation ? roundFp16 : undefined,
  });
  step.walkBlockMask(ctx, blockM, blockN);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const tr = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  const eb = ctx.eb;
  const rowsPerWarp = Math.ceil(blockM / FMHA_V2_WARPS);
  const lse = new Float64Array(rowsPerWarp);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < tr; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        const rows: [number, number] = [r0, r1];
        const cta: step.At = { b, h, outer: i, inner: -1, qBlock: i };
        const warps: { st: step.RowState; at: step.At; t: step.ScoreTile }[] = [];
        for (let w = 0; w < FMHA_V2_WARPS; w++) {
          const w0 = r0 + w * rowsPerWarp;
          if (w0 >= r1) break;
          const n = Math.min(r1, w0 + rowsPerWarp) - w0;
          warps.push({ st: new step.RowState(hk, w0, n, p.dv), at: { ...cta, warp: w }, t: new step.ScoreTile(n, blockN) });
        }
        const blocks = yield* step.visitedKv(ctx, cta, [i], 0, tc);
        const colsOf = (j: number): [number, number] => [j * blockN, Math.min(p.nk, (j + 1) * blockN)];
        const loadKV = (j: number) => {
          const [c0, c1] = colsOf(j);
          return step.load(ctx, { ...cta, inner: j }, 'loadKV', rows, [c0, c1], j, { K: (c1 - c0) * p.d * eb, V: (c1 - c0) * p.dv * eb });
        };
        yield* step.load(ctx, cta, 'loadQ', rows, [0, 0], -1, { Q: (r1 - r0) * p.d * eb });
        if (blocks.length) yield* loadKV(blocks[0]);
        for (let n = 0; n < blocks.length; n++) {
          const j = blocks[n];
          // Double buffering: the next block's copy goes out before this block's math.
          if (n + 1 < blocks.length) yield* loadKV(blocks[n + 1]);
          const [c0, c1] = colsOf(j);
          for (const w of warps) {
            const at: step.At = { ...w.at, inner: j };
            yield* step.softmaxBlock(ctx, at, w.st, w.t, j, c0, c1 - c0);
          }
        }
        for (const w of warps) {
          yield* step.normalize(ctx, w.at, w.st, lse);
          step.storeRows(ctx, w.at, w.st, lse, o, lseOut);
        }
        yield* step.write(ctx, cta, 'write', rows, { O: (r1 - r0) * p.dv * eb, LSE: (r1 - r0) * 4 });
      }
    }
  }
  const result: AlgorithmResult = {
    o,
    lse: lseOut,
    counters: ctx.tr.counters,
    blocks: { blockM, blockN },
    stats: { packedQkv: fmhaV2PackedQkv(p) ? 1 : 0, warps: FMHA_V2_WARPS },
  };
  return result;
}

export const fmhaV2: StepAlgorithm = {
  id: 'fmha-v2',
  name: 'TensorRT-LLM fmha_v2 (Ada, SM89)',
  blocks: (p, o) => resolveBlocks(p, o, fmhaV2DefaultTile(p)),
  run: runFmhaV2,
};
