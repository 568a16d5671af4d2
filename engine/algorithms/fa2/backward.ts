// FlashAttention-2 backward (Dao 2023, Algorithm 2). Three kernels, shown per (b, h):
//   1. Preprocessing: D_i = rowsum(dO_i ∘ O_i) for every row block, written to HBM, and the
//      fp32 dQ accumulator zeroed. D replaces rowsum(dP ∘ P), which would need the whole row.
//   2. The main loop, K/V-outer: one worker per column block j keeps K_j, V_j, dK_j, dV_j on
//      chip and walks the row blocks i: S = τ Q_i K_jᵀ, P = exp(S − L_i) from the LSE alone
//      (FA2 keeps L = m + log l, not m and l), dV_j += Pᵀ dO_i, dP = dO_i V_jᵀ,
//      dS = P ∘ (dP − D_i), dQ_i += τ dS K_j by atomic adds into the accumulator (other
//      column blocks add into the same rows at the same time), dK_j += τ dSᵀ Q_i.
//   3. Postprocessing: the fp32 accumulator converted to dQ in the input dtype.
// Fully masked tiles are skipped, and a column block with no visible row is not loaded.
// Block sizes as in the forward (from M or given). GQA/MQA: the FA2 CUDA code writes dK and
// dV per query head into expanded buffers and sums them over the group afterwards;
// FlashScope instead adds each head's dK_j, dV_j into fp32 accumulators (atomic adds, as
// FA3 does), which counts the same sum with less traffic than the expanded buffers.

import { blockCount, resolveBlocks } from '../blocks.ts';
import { readFeatures } from '../features.ts';
import { fa2 } from './forward.ts';
import type { RunOptions } from '../types.ts';
import { finishGradients } from '../../backward/setup.ts';
import { setUpTiledBackward } from '../../backward/tiled-setup.ts';
import { tilePos } from '../../backward/tile-grad.ts';
import * as step from '../../backward/tile-events.ts';
import type { BackwardAlgorithm, BackwardGenerator, BackwardResult } from '../../backward/types.ts';
import type { AttentionInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';

function* runFa2Backward(p: AttentionProblem, xIn: AttentionInputs, opts: RunOptions): BackwardGenerator {
  readFeatures('fa2', {}, opts.features);
  const { blockM, blockN } = resolveBlocks(p, opts);
  const S = setUpTiledBackward(p, xIn, fa2, { blockM, blockN }, opts.trace, 'fa2bwd');
  const { tr, eb, scale, ctx, kAcc, vAcc, acc } = S;
  const tile = ctx.tile;
  const { d, dv, nq, nk } = p;
  const dHbm = new Float32Array(p.batch * p.hq * nq);
  const o = S.forward.o;
  const lse = S.forward.lse;
  const tr_ = blockCount(nq, blockM);
  const tc = blockCount(nk, blockN);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      acc.reset();
      const rowBase = (b * p.hq + h) * nq;
      const rowsOf = (i: number) => [i * blockM, Math.min(nq, (i + 1) * blockM)] as const;

      // 1. Preprocessing: D and the zeroed dQ accumulator.
      for (let i = 0; i < tr_; i++) {
        const w = step.rowBlock(p, b, h, i, blockM);
        const { r0, rows } = w.at;
        let ev = tr.emit('load', step.base(ctx, w, 'loadOdO', { hbmRead: { O: rows * dv * eb, dO: rows * dv * eb } }, true), () => ({
          tensors: ['O' as const, 'dO' as const],
          ...step.tag(w),
        }));
        if (ev) yield ev;
        yield* step.dsum(ctx, w, o);
        for (let r = 0; r < rows; r++) dHbm[rowBase + r0 + r] = tile.D[r];
        ev = tr.emit('write', step.base(ctx, w, 'writeD', { hbmWritten: { D: rows * 4, dQaccum: rows * d * 4 } }, true), () => ({
          tensors: ['D' as const, 'dQaccum' as const],
          ...step.tag(w),
        }));
        if (ev) yield ev;
      }

      // 2. K/V-outer main loop.
      for (let j = 0; j < tc; j++) {
        const { c0, c1, cols, kv } = step.columnBlock(p, b, h, j, blockN);
        const visits = acc.visits[j];
        if (visits.length === 0) continue;
        let ev = tr.emit('load', step.base(ctx, kv, 'loadKV', { hbmRead: { K: cols * d * eb, V: cols * dv * eb } }), () => ({
          tensors: ['K' as const, 'V' as const],
          ...step.tag(kv),
        }));
        if (ev) yield ev;
        kAcc.fill(0);
        vAcc.fill(0);
        for (const i of visits) {
          const [r0, r1] = rowsOf(i);
          const rows = r1 - r0;
          const w: step.Where = { b, h, outer: j, inner: i, qBlock: i, kvBlock: j, at: tilePos(p, b, h, r0, r1, c0, c1) };
          ev = tr.emit(
            'load',
            step.base(ctx, w, 'loadQ', { hbmRead: { Q: rows * d * eb, dO: rows * dv * eb, LSE: rows * 4, D: rows * 4 } }),
            () => ({ tensors: ['Q' as const, 'dO' as const, 'LSE' as const, 'D' as const], ...step.tag(w) }),
          );
          if (ev) yield ev;
          for (let r = 0; r < rows; r++) {
            tile.lse[r] = lse[rowBase + r0 + r];
            tile.D[r] = dHbm[rowBase + r0 + r];
          }
          yield* step.qk(ctx, w);
          yield* step.mask(ctx, w);
          yield* step.recompute(ctx, w);
          yield* step.dv(ctx, w, vAcc);
          yield* step.dp(ctx, w);
          yield* step.ds(ctx, w);
          yield* step.dq(ctx, w, S.dq, scale, () => ({
            contributors: acc.add(i, j),
            atomic: true,
            collidesWith: opts.trace ? acc.collisions(i, j) : [],
            hbm: { hbmRead: { dQaccum: rows * d * 4 }, hbmWritten: { dQaccum: rows * d * 4 }, atomicAdds: rows * d },
          }));
          yield* step.dk(ctx, w, kAcc, scale);
        }
        const hs = kv.at.hs;
        const delta = step.storeKV(p, hs, c0, cols, kAcc, vAcc, S.dk, S.dv, 1, eb, true);
        ev = tr.emit('write', step.base(ctx, kv, 'writeKV', delta), () => ({ tensors: ['dK' as const, 'dV' as const], ...step.tag(kv) }));
        if (ev) yield ev;
      }

      // 3. Postprocessing: dQ from the fp32 accumulator.
      for (let i = 0; i < tr_; i++) {
        yield* step.dqConvert(ctx, step.rowBlock(p, b, h, i, blockM), S.dq, eb);
      }
    }
  }
  const grads = finishGradients(S);
  const result: BackwardResult = { ...S.forward, counters: tr.counters, blocks: { blockM, blockN }, ...grads, forward: S.forward };
  return result;
}

export const fa2Backward: BackwardAlgorithm = {
  id: 'fa2',
  name: 'FlashAttention-2 backward',
  pass: 'backward',
  linePrefix: 'fa2bwd',
  blocks: resolveBlocks,
  run: runFa2Backward,
};
