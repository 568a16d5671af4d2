// Flash-decoding ("Flash-Decoding for long-context inference", Dao, Haziza, Massa, Sizov 2023): split-KV attention for
// decoding, where Nq is tiny (often 1) and B·H alone cannot fill the GPU.
//
// Two kernels, as FlashAttention-2's split-KV path runs them:
// 1. Split kernel — grid (Q tile, split, B·H): the K/V sequence is cut into `splits`
//    contiguous ranges of whole blocks; each split runs FA2's loop on its range and writes
//    a partial output O_s (already divided by its own l_s) and its LSE_s to HBM in fp32
//    (tensors 'Opartial' and 'LSEpartial'). A split that owns no visible key writes O_s = 0,
//    LSE_s = −inf.
// 2. Combine kernel — per row: LSE = log Σ_s exp(LSE_s) (computed against the max LSE_s
//    so nothing overflows), O = Σ_s exp(LSE_s − LSE) · O_s. Attention sinks join here,
//    once, as one more term of the sum with no value vector. One 'combine' event per Q tile.
// With splits = 1 the split kernel writes O and LSE directly and there is no combine.
//
// Tiles: kBlockM = 64 for every head dim; kBlockN = 256 (d ≤ 64), 128 (d ≤ 128), 64 above
// (FA2's split-KV dispatch). Features:
// - splits: number of K/V splits; 0 (default) picks it with FA2's heuristic:
//     n_blocks = ceil(Nk / kBlockN), work = B · Hq · ceil(Nq / kBlockM) CTAs.
//     If work ≥ 0.8 · SMs: 1 split. Otherwise, for s = 1 … min(128, SMs, n_blocks), skipping
//     s that gives the same blocks-per-split as s − 1, efficiency(s) = waves / ceil(waves) with
//     waves = work · s / SMs; pick the smallest s whose efficiency ≥ 0.85 · the best.
// - smCount: the SM count the heuristic fills (default 108, the A100 of the flash-decoding
//   blog; 132 for H100 SXM).
// - blocksPerSplit: fixes the split length in K/V blocks instead (splits = ceil(blocks /
//   blocksPerSplit)); engine/layouts/paged.ts sets it to a whole number of pages, chosen
//   once for the batch as FA2 chooses num_splits from the longest sequence.
//
// Support table: causal, window, ALiBi, softcap, sinks, GQA/MQA, any Nq ≥ 1, d ≠ dv, fp32
// and 16-bit inputs: all supported (partials are fp32 whatever the input type).

import { ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { roundTo } from '../../core/dtype.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { positiveInteger, readFeatures, type FeatureSpecs } from '../features.ts';
import * as step from '../tile-steps.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';

export const FLASH_DECODING_FEATURES = {
  splits: {
    default: 0,
    panel: true,
    doc: 'K/V splits; 0 = choose with the occupancy heuristic',
    check: (v: number) => (Number.isInteger(v) && v >= 0 && v <= 1024 ? undefined : `must be an integer in [0, 1024], got ${v}`),
  },
  smCount: { default: 108, doc: 'streaming multiprocessors the heuristic tries to fill', check: positiveInteger },
  blocksPerSplit: {
    default: 0,
    doc: 'K/V blocks per split, fixed (a paged cache sets it so that splits end on page boundaries); 0 = ceil(blocks / splits)',
    check: (v: number) => (Number.isInteger(v) && v >= 0 ? undefined : `must be an integer >= 0, got ${v}`),
  },
} satisfies FeatureSpecs;

export const DECODING_BLOCK_M = 64;

export function decodingBlockN(d: number): number {
  return d <= 64 ? 256 : d <= 128 ? 128 : 64;
}

/** FA2's split-count heuristic (see the header). */
export function numSplitsHeuristic(ctas: number, smCount: number, nBlocks: number, maxSplits = 128): number {
  if (ctas >= 0.8 * smCount) return 1;
  const limit = Math.min(maxSplits, smCount, nBlocks);
  const perSplit = (s: number) => Math.ceil(nBlocks / s);
  const eligible = (s: number) => s === 1 || perSplit(s) !== perSplit(s - 1);
  const eff: number[] = [];
  let best = 0;
  for (let s = 1; s <= limit; s++) {
    if (!eligible(s)) {
      eff.push(0);
      continue;
    }
    const waves = (ctas * s) / smCount;
    const e = waves / Math.ceil(waves);
    eff.push(e);
    if (e > best) best = e;
  }
  for (let s = 1; s <= limit; s++) if (eligible(s) && eff[s - 1] >= 0.85 * best) return s;
  return 1;
}

/** The kernel's tile: the decoding block of query rows against the split's K/V block for this head dim. */
function decodingTile(p: AttentionProblem): { blockM: number; blockN: number } {
  return { blockM: DECODING_BLOCK_M, blockN: decodingBlockN(p.d) };
}

function* runFlashDecoding(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures('flash-decoding', FLASH_DECODING_FEATURES, opts.features);
  const { blockM, blockN } = flashDecoding.blocks(p, opts);
  const ctx = step.makeContext(p, x, opts, { prefix: 'flash-decoding' });
  step.walkBlockMask(ctx, blockM, blockN);
  const tr = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  if (f.blocksPerSplit > 0 && f.splits > 0) {
    throw new ProblemError('features.blocksPerSplit', 'give splits or blocksPerSplit, not both');
  }
  const splits =
    f.blocksPerSplit > 0
      ? Math.ceil(tc / f.blocksPerSplit)
      : f.splits > 0
        ? f.splits
        : numSplitsHeuristic(p.batch * p.hq * tr, f.smCount, tc);
  const perSplit = f.blocksPerSplit > 0 ? f.blocksPerSplit : Math.ceil(tc / splits);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const eb = ctx.eb;
  const lse = new Float64Array(blockM);
  // HBM scratch of the split kernel: [splits, B, Hq, Nq, dv] and [splits, B, Hq, Nq], fp32.
  const rowsTotal = p.batch * p.hq * p.nq;
  const oPart = splits > 1 ? new Float32Array(splits * rowsTotal * p.dv) : new Float32Array(0);
  const lsePart = splits > 1 ? new Float32Array(splits * rowsTotal) : new Float32Array(0);
  const rowIndex = (b: number, h: number, i: number) => (b * p.hq + h) * p.nq + i;

  // Kernel 1: every (Q tile, split, batch·head) CTA.
  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < tr; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        const rows: [number, number] = [r0, r1];
        for (let s = 0; s < splits; s++) {
          const at: step.At = { b, h, outer: i, inner: -1, qBlock: i };
          if (splits > 1) at.split = s;
          const st = new step.RowState(hk, r0, r1 - r0, p.dv);
          const t = new step.ScoreTile(r1 - r0, blockN);
          const j0 = s * perSplit;
          const j1 = Math.min(tc, j0 + perSplit);
          const blocks = yield* step.visitedKv(ctx, at, [i], j0, j1);
          if (blocks.length) yield* step.load(ctx, at, 'loadQ', rows, [0, 0], -1, { Q: (r1 - r0) * p.d * eb });
          for (const j of blocks) {
            const c0 = j * blockN;
            const c1 = Math.min(p.nk, c0 + blockN);
            const here: step.At = { ...at, inner: j };
            yield* step.load(ctx, here, 'loadKV', rows, [c0, c1], j, { K: (c1 - c0) * p.d * eb, V: (c1 - c0) * p.dv * eb });
            yield* step.softmaxBlock(ctx, here, st, t, j, c0, c1 - c0);
          }
          const n = r1 - r0;
          if (splits === 1) {
            yield* step.normalize(ctx, at, st, lse);
            step.storeRows(ctx, at, st, lse, o, lseOut);
            yield* step.write(ctx, at, 'write', rows, { O: n * p.dv * eb, LSE: n * 4 });
            continue;
          }
          // Partial result: normalized by this split's own l_s, no sink, kept in fp32.
          yield* step.normalize(ctx, at, st, lse, false);
          for (let r = 0; r < n; r++) {
            const ri = s * rowsTotal + rowIndex(b, h, r0 + r);
            lsePart[ri] = lse[r];
            for (let e = 0; e < p.dv; e++) oPart[ri * p.dv + e] = Math.fround(st.acc[r * p.dv + e]);
          }
          yield* step.write(ctx, at, 'writePartial', rows, { Opartial: n * p.dv * 4, LSEpartial: n * 4 });
        }
      }
    }
  }

  // Kernel 2: merge the splits of every row by their LSE.
  if (splits > 1) {
    for (let b = 0; b < p.batch; b++) {
      for (let h = 0; h < p.hq; h++) {
        const sinkLogit = p.sinks?.[h];
        for (let i = 0; i < tr; i++) {
          const r0 = i * blockM;
          const r1 = Math.min(p.nq, r0 + blockM);
          const n = r1 - r0;
          const at: step.At = { b, h, outer: i, inner: -1, qBlock: i };
          const merged = new Float64Array(n * p.dv);
          const lseRow = new Array<number>(n);
          const splitLse: number[][] = [];
          for (let r = 0; r < n; r++) {
            const ri = rowIndex(b, h, r0 + r);
            const ls = new Array<number>(splits);
            let mx = sinkLogit ?? -Infinity;
            for (let s = 0; s < splits; s++) {
              ls[s] = lsePart[s * rowsTotal + ri];
              if (ls[s] > mx) mx = ls[s];
            }
            splitLse.push(ls);
            if (mx === -Infinity) {
              lseRow[r] = -Infinity; // nothing visible in any split and no sink: O stays 0
              continue;
            }
            let sum = sinkLogit !== undefined ? Math.exp(sinkLogit - mx) : 0;
            for (let s = 0; s < splits; s++) sum += ls[s] === -Infinity ? 0 : Math.exp(ls[s] - mx);
            const total = mx + Math.log(sum);
            lseRow[r] = total;
            for (let s = 0; s < splits; s++) {
              if (ls[s] === -Infinity) continue;
              const w = Math.exp(ls[s] - total);
              const po = (s * rowsTotal + ri) * p.dv;
              for (let e = 0; e < p.dv; e++) merged[r * p.dv + e] = Math.fround(merged[r * p.dv + e] + w * oPart[po + e]);
            }
          }
          for (let r = 0; r < n; r++) {
            const ri = rowIndex(b, h, r0 + r);
            lseOut[ri] = lseRow[r];
            for (let e = 0; e < p.dv; e++) o[ri * p.dv + e] = roundTo(p.dtype, merged[r * p.dv + e]);
          }
          const ev = ctx.tr.emit(
            'combine',
            {
              b,
              h,
              outer: i,
              inner: -1,
              tile: { qBlock: i, kvBlock: -1, rows: [r0, r1], cols: [0, 0] },
              line: 'flash-decoding.combine',
              delta: {
                hbmRead: { Opartial: splits * n * p.dv * 4, LSEpartial: splits * n * 4 },
                // Per row and split: max, exp for the sum, add, exp for the weight; then a multiply-add per output element.
                nonMatmulFlops: 4 * splits * n + 2 * splits * n * p.dv + n,
                expCount: 2 * splits * n,
              },
            },
            () => ({ splitLse, lse: lseRow, o: Array.from(merged) }),
          );
          if (ev) yield ev;
          yield* step.write(ctx, at, 'write', [r0, r1], { O: n * p.dv * eb, LSE: n * 4 });
        }
      }
    }
  }
  const result: AlgorithmResult = {
    o,
    lse: lseOut,
    counters: ctx.tr.counters,
    blocks: { blockM, blockN },
    stats: { splits, blocksPerSplit: perSplit },
  };
  return result;
}

export const flashDecoding: StepAlgorithm = {
  id: 'flash-decoding',
  name: 'Flash-decoding (split-KV + combine)',
  blocks: (p, o) => resolveBlocks(p, o, decodingTile(p)),
  run: runFlashDecoding,
};
