// FlashAttention backward (Dao et al. 2022, Algorithm 4, without dropout), as written.
// dQ is set to 0 in HBM; the outer loop runs over K/V blocks j, which keep K_j, V_j and the
// accumulators dK_j, dV_j on chip; the inner loop over Q blocks i loads Q_i, O_i, dO_i,
// dQ_i, l_i and m_i, recomputes P_ij = diag(l_i)⁻¹ exp(S_ij − m_i) from the forward's
// statistics, adds P_ijᵀ dO_i into dV_j, forms dP_ij = dO_i V_jᵀ, recomputes
// D_i = rowsum(dO_i ∘ O_i) at every inner step, dS_ij = P_ij ∘ (dP_ij − D_i), and writes
// dQ_i + τ dS_ij K_j back to HBM (a plain read-modify-write: the loops run one after the
// other, so no other worker touches dQ_i meanwhile), then dK_j += τ dS_ijᵀ Q_i. At the end
// of the inner loop dK_j and dV_j are written. That dQ round trip per step, and D
// recomputed per step, are what FA2's backward removed.
//
// Beyond Algorithm 4: fully masked tiles are skipped and a K/V block with no visible row is
// not loaded (the block-sparse variant); dQ in HBM is an fp32 accumulator (4 bytes per
// element, as the kernel's dq_accum), rounded to the input dtype when the run returns.

import { blockCount, resolveBlocks } from '../blocks.ts';
import { readFeatures } from '../features.ts';
import { fa1 } from './forward.ts';
import type { RunOptions } from '../types.ts';
import { finishGradients } from '../../backward/setup.ts';
import { setUpTiledBackward } from '../../backward/tiled-setup.ts';
import { tilePos } from '../../backward/tile-grad.ts';
import * as step from '../../backward/tile-events.ts';
import type { BackwardAlgorithm, BackwardGenerator, BackwardResult } from '../../backward/types.ts';
import type { AttentionInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';

function* runFa1Backward(p: AttentionProblem, xIn: AttentionInputs, opts: RunOptions): BackwardGenerator {
  readFeatures('fa1', {}, opts.features);
  const { blockM, blockN } = resolveBlocks(p, opts);
  const S = setUpTiledBackward(p, xIn, fa1, { blockM, blockN }, opts.trace, 'fa1bwd');
  const { tr, eb, scale, ctx, kAcc, vAcc, acc } = S;
  const tile = ctx.tile;
  const { d, dv, nq, nk } = p;
  const stats = S.forward.rowStats;
  if (!stats) throw new Error('fa1 forward returned no m and l');
  const o = S.forward.o;
  const tc = blockCount(nk, blockN);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      acc.reset();
      const rowBase = (b * p.hq + h) * nq;
      const all: step.Where = { b, h, outer: -1, inner: -1, qBlock: -1, kvBlock: -1, at: tilePos(p, b, h, 0, nq, 0, 0) };
      let ev = tr.emit('write', step.base(ctx, all, 'init', { hbmWritten: { dQ: nq * d * 4 } }, true), () => ({
        tensors: ['dQ' as const],
        ...step.tag(all),
      }));
      if (ev) yield ev;

      for (let j = 0; j < tc; j++) {
        const { c0, c1, cols, kv } = step.columnBlock(p, b, h, j, blockN);
        const visits = acc.visits[j];
        if (visits.length === 0) continue;
        ev = tr.emit('load', step.base(ctx, kv, 'loadKV', { hbmRead: { K: cols * d * eb, V: cols * dv * eb } }), () => ({
          tensors: ['K' as const, 'V' as const],
          ...step.tag(kv),
        }));
        if (ev) yield ev;
        kAcc.fill(0);
        vAcc.fill(0);
        for (const i of visits) {
          const r0 = i * blockM;
          const r1 = Math.min(nq, r0 + blockM);
          const rows = r1 - r0;
          const w: step.Where = { b, h, outer: j, inner: i, qBlock: i, kvBlock: j, at: tilePos(p, b, h, r0, r1, c0, c1) };
          ev = tr.emit(
            'load',
            step.base(ctx, w, 'loadQOdOdQlm', {
              hbmRead: { Q: rows * d * eb, O: rows * dv * eb, dO: rows * dv * eb, dQ: rows * d * 4, l: rows * 4, m: rows * 4 },
            }),
            () => ({ tensors: ['Q' as const, 'O' as const, 'dO' as const, 'dQ' as const, 'l' as const, 'm' as const], ...step.tag(w) }),
          );
          if (ev) yield ev;
          const m = stats.m.subarray(rowBase + r0, rowBase + r1);
          const l = stats.l.subarray(rowBase + r0, rowBase + r1);
          for (let r = 0; r < rows; r++) tile.lse[r] = l[r] > 0 ? m[r] + Math.log(l[r]) : -Infinity;
          yield* step.qk(ctx, w);
          yield* step.mask(ctx, w);
          yield* step.recompute(ctx, w, { m, l });
          yield* step.dv(ctx, w, vAcc);
          yield* step.dp(ctx, w);
          yield* step.dsum(ctx, w, o);
          yield* step.ds(ctx, w);
          yield* step.dq(ctx, w, S.dq, scale, () => ({
            contributors: acc.add(i, j),
            atomic: false,
            collidesWith: [],
            hbm: { hbmWritten: { dQ: rows * d * 4 } },
          }));
          yield* step.dk(ctx, w, kAcc, scale);
        }
        const delta = step.storeKV(p, kv.at.hs, c0, cols, kAcc, vAcc, S.dk, S.dv, 1, eb, false);
        ev = tr.emit('write', step.base(ctx, kv, 'writeKV', delta), () => ({ tensors: ['dK' as const, 'dV' as const], ...step.tag(kv) }));
        if (ev) yield ev;
      }
    }
  }
  const grads = finishGradients(S);
  const result: BackwardResult = { ...S.forward, counters: tr.counters, blocks: { blockM, blockN }, ...grads, forward: S.forward };
  return result;
}

export const fa1Backward: BackwardAlgorithm = {
  id: 'fa1',
  name: 'FlashAttention backward (FA1, Algorithm 4)',
  pass: 'backward',
  linePrefix: 'fa1bwd',
  blocks: resolveBlocks,
  run: runFa1Backward,
};
