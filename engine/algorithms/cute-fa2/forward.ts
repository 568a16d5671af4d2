// FlashAttention-2 written with CUTLASS CuTe for Ampere (SM80), as github.com/66RING/tiny-flash-attention
// (flash_attention_cutlass/) writes it. Same math as fa2.ts (online softmax in fp32 registers, P converted to the 16-bit
// type for the second GEMM, one division at the end); what this model adds is the
// kernel's shape and its cp.async software pipeline:
//
// - Tiles: 128 × 64 with 4 warps at every head dim, the tile flash_attn/cute's SM80 forward
//   picks (tile.ts); grid (ceil(Nq / 128), B·H), one CTA per Q tile.
// - Prologue: cp.async Q and K_0, fence. Per K/V block j:
//     wait for K_j; issue V_j's copy; S = Q·K_jᵀ (the copy of V_j runs under this GEMM);
//     mask (only blocks touching the diagonal); wait for V_j; issue K_{j+1}'s copy;
//     online softmax + rescale of O; O += P·V_j (K_{j+1} arrives under this GEMM).
//   The load events sit exactly where the copies are issued, so the trace shows V_j
//   loading during Q·K_jᵀ and K_{j+1} loading during P·V_j.
// - Causal early exit: the loop stops at n_block_max = the last block with a visible key,
//   and never touches the blocks above the diagonal (counted in stats.skippedBlocks). That
//   kernel aligns causal top-left and assumes Nq = Nk; FlashScope uses the problem's
//   bottom-right alignment, which is the same when Nq = Nk. A window skips blocks the same way.
//
// Support table: that kernel has causal only, MHA only, Nq = Nk. FlashScope adds
// GQA/MQA (K/V head = h / group), Nq ≠ Nk, window, ALiBi, softcap and sinks the way FA2
// does them, because the math is the same; the lesson says which parts are additions.

import type { AttentionProblem } from '../../core/problem.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { BLOCK_EMPTY } from '../../core/block-mask.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { readFeatures } from '../features.ts';
import * as step from '../tile-steps.ts';
import { CUTE_FA2_TILE } from './tile.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';

export const CUTE_FA2_FEATURES = {};

function* runCuteFa2(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  readFeatures('cute-fa2', CUTE_FA2_FEATURES, opts.features);
  const { blockM, blockN } = cuteFa2.blocks(p, opts);
  const ctx = step.makeContext(p, x, opts, { prefix: 'cute-fa2' });
  step.walkBlockMask(ctx, blockM, blockN);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const tr = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  const eb = ctx.eb;
  const lse = new Float64Array(blockM);
  let skipped = 0;

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < tr; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        const rows: [number, number] = [r0, r1];
        const at: step.At = { b, h, outer: i, inner: -1, qBlock: i };
        const st = new step.RowState(hk, r0, r1 - r0, p.dv);
        const t = new step.ScoreTile(r1 - r0, blockN);
        // [n_block_min, n_block_max): the blocks with a visible key; the rest are never loaded.
        let nMin = 0;
        let nMax = tc;
        const vis = (j: number) => ctx.tileClass(b, h, i, j) !== BLOCK_EMPTY;
        while (nMax > 0 && !vis(nMax - 1)) nMax--;
        while (nMin < nMax && !vis(nMin)) nMin++;
        skipped += tc - Math.max(0, nMax - nMin);
        // Only the ends are cut: an empty tile inside the range is computed, its mask hiding every entry.
        for (let j = 0; j < tc; j++) if (j < nMin || j >= nMax) yield* step.skip(ctx, at, i, j);
        const colsOf = (j: number): [number, number] => [j * blockN, Math.min(p.nk, (j + 1) * blockN)];
        const loadK = (j: number) =>
          step.load(ctx, { ...at, inner: j }, 'loadK', rows, colsOf(j), j, { K: (colsOf(j)[1] - colsOf(j)[0]) * p.d * eb });
        const loadV = (j: number) =>
          step.load(ctx, { ...at, inner: j }, 'loadV', rows, colsOf(j), j, { V: (colsOf(j)[1] - colsOf(j)[0]) * p.dv * eb });

        // Prologue: Q and the first K in flight together.
        yield* step.load(ctx, at, 'loadQ', rows, [0, 0], -1, { Q: (r1 - r0) * p.d * eb });
        if (nMin < nMax) yield* loadK(nMin);
        for (let j = nMin; j < nMax; j++) {
          const here: step.At = { ...at, inner: j };
          const [c0, c1] = colsOf(j);
          yield* loadV(j); // issued, then overlapped with the first GEMM
          yield* step.qk(ctx, here, st, t, j, c0, c1 - c0);
          yield* step.mask(ctx, here, st, t);
          if (j + 1 < nMax) yield* loadK(j + 1); // issued after V_j landed, overlapped with softmax and P·V
          // softmax_rescale_o: new max, rescale O (and l) by it, then exp and the new row sums.
          yield* step.rowmax(ctx, here, st, t);
          yield* step.rescale(ctx, here, st, t);
          yield* step.exp(ctx, here, st, t);
          yield* step.rowsum(ctx, here, st, t);
          yield* step.pv(ctx, here, st, t);
        }
        yield* step.normalize(ctx, at, st, lse);
        step.storeRows(ctx, at, st, lse, o, lseOut);
        yield* step.write(ctx, at, 'write', rows, { O: (r1 - r0) * p.dv * eb, LSE: (r1 - r0) * 4 });
      }
    }
  }
  const result: AlgorithmResult = {
    o,
    lse: lseOut,
    counters: ctx.tr.counters,
    blocks: { blockM, blockN },
    stats: { skippedBlocks: skipped },
  };
  return result;
}

export const cuteFa2: StepAlgorithm = {
  id: 'cute-fa2',
  name: 'FlashAttention-2 in CuTe (Ampere, SM80)',
  blocks: (p, o) => resolveBlocks(p, o, CUTE_FA2_TILE),
  run: runCuteFa2,
};
