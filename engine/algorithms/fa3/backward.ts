// FlashAttention-3 backward (Hopper), the structure of Dao-AILab/flash-attention's hopper/
// backward: three kernels, the middle one warp-specialized. Shown per (b, h):
//
// 1. Preprocess kernel (role `preprocess`): per row block, D_i = rowsum(dO_i ∘ O_i) (the
//    kernel's dPsum), the LSE rescaled to log2 units for exp2, and dQaccum zeroed.
// 2. Main kernel: one CTA per column block j (the K/V-outer loop of FA2), which walks its
//    visible row blocks in ascending order:
//    - `producer` warp: loads K_j, V_j once (TMA), and streams Q_i with LSE_i through one
//      ring and dO_i with D_i through another (2 stages each for d ≤ 128; the dO ring has 1
//      stage for d = 192 and 256). Program order Q(first), K/V, then dO(i), Q(i+1), …,
//      dO(last); a copy waits for a free stage, so loads run ahead of the math by at most
//      the ring depth (`stage` = the slot).
//    - `mma` warpgroups: S = Q_i K_jᵀ and dP = dO_i V_jᵀ issued back to back (wgmma), the
//      softcap derivative taken before the mask, P = exp2(S·scale·log2 e − LSE·log2 e),
//      dS = P ∘ (dP − D_i), P and dS converted to 16 bits into shared memory, then
//      dV_j += Pᵀ dO_i, the dQ partial dS K_j (which frees the dO stage) and dK_j += dSᵀ Q_i
//      (which frees the Q stage); dV_j and dK_j stay in registers until the CTA ends.
//    - `dqwriter` warp: adds the dQ partial from shared memory into the fp32 dQaccum in HBM
//      with a bulk reduce-add (TMA), the atomic add of this kernel. With the deterministic
//      feature a semaphore per dQ row block makes the column blocks add in a fixed order:
//      ascending, or from the last visible block down when causal (FlashScope then runs
//      the causal CTAs from the last column block down so the trace shows that order).
//    - epilogue (`mma`): dK_j × scale and dV_j written (GQA: added into fp32 accumulators).
// 3. Postprocess kernel (role `postprocess`): dQ = dQaccum × scale in the input dtype.
//
// Simplifications, written down for the lesson: the CTAs that run at once on the GPU run
// one after another here (the `dq` events' collidesWith says which adds would overlap);
// the two (three for d = 192) MMA warpgroups that split a tile are shown as one unit; the
// wgmma/TMA asynchrony inside one step is shown in program order; the dQ gemm's FLOPs are
// counted on the `dq` event that adds its result. The numbers are those the kernel
// computes, with the scale applied where the kernel applies it (dQaccum and dK hold
// unscaled sums). Tile sizes from the kernel's launch table for SM90:
//   d ≤ 64: 128 × 128 (96 × 128 causal with softcap); d ≤ 96: 64 × 128;
//   d ≤ 128: 64 × 128 (causal, window or softcap) else 80 × 128; d ≤ 192: 64 × 96; d ≤ 256: 64 × 80.
// ALiBi and sinks are not in the FA3 kernel; they are added as in FA2. fp32 inputs run
// unrounded (the kernel takes 16-bit only), as in the forward model.

import { FA3_SUPPORTS } from './supports.ts';
import { requireSupported } from '../capabilities.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { readFeatures, type FeatureSpecs } from '../features.ts';
import { fa3, FA3_SCHEDULE_FEATURES } from './forward.ts';
import { Producer } from '../producer.ts';
import type { RunOptions } from '../types.ts';
import { finishGradients } from '../../backward/setup.ts';
import { setUpTiledBackward } from '../../backward/tiled-setup.ts';
import { tilePos } from '../../backward/tile-grad.ts';
import * as step from '../../backward/tile-events.ts';
import type { BackwardAlgorithm, BackwardGenerator, BackwardResult } from '../../backward/types.ts';
import type { AttentionInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import type { TraceEvent } from '../../trace/events.ts';

export const FA3_BACKWARD_FEATURES = {
  ...FA3_SCHEDULE_FEATURES,
  deterministic: { default: false, doc: 'a semaphore per dQ row block orders the column blocks’ adds (reproducible dQ, some waiting)' },
} satisfies FeatureSpecs;

/** The kernel's backward tile for a problem (SM90 launch table). */
export function fa3BackwardTile(p: AttentionProblem): { blockM: number; blockN: number } {
  const local = p.window !== undefined && (p.window.left >= 0 || p.window.right >= 0);
  const softcap = p.softcap !== undefined;
  if (p.d <= 64) return { blockM: p.causal && softcap ? 96 : 128, blockN: 128 };
  if (p.d <= 96) return { blockM: 64, blockN: 128 };
  if (p.d <= 128) return { blockM: p.causal || local || softcap ? 64 : 80, blockN: 128 };
  if (p.d <= 192) return { blockM: 64, blockN: 96 };
  return { blockM: 64, blockN: 80 };
}

/** Stages of the Q/LSE ring and of the dO/D ring. */
export function fa3BackwardStages(p: AttentionProblem): { q: number; dO: number } {
  return { q: 2, dO: p.d <= 128 ? 2 : 1 };
}

type Gen = Generator<TraceEvent, void, void>;

function* runFa3Backward(p: AttentionProblem, xIn: AttentionInputs, opts: RunOptions): BackwardGenerator {
  const f = readFeatures('fa3', FA3_BACKWARD_FEATURES, opts.features);
  requireSupported('fa3', FA3_SUPPORTS, 'backward', p);
  const { blockM, blockN } = fa3Backward.blocks(p, opts);
  const { deterministic, ...forwardFeatures } = f;
  const S = setUpTiledBackward(p, xIn, fa3, { blockM, blockN, features: forwardFeatures }, opts.trace, 'fa3bwd');
  const { tr, eb, scale, ctx, kAcc, vAcc, acc } = S;
  const tile = ctx.tile;
  const { d, dv, nq, nk } = p;
  const dHbm = new Float32Array(p.batch * p.hq * nq);
  const o = S.forward.o;
  const lse = S.forward.lse;
  const tRows = blockCount(nq, blockM);
  const tCols = blockCount(nk, blockN);
  const stages = fa3BackwardStages(p);
  const descending = deterministic && p.causal;
  const ctaOrder = Array.from({ length: tCols }, (_, j) => (descending ? tCols - 1 - j : j));

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      acc.reset();
      const rowBase = (b * p.hq + h) * nq;
      const rowsOf = (i: number) => [i * blockM, Math.min(nq, (i + 1) * blockM)] as const;

      // 1. Preprocess kernel.
      for (let i = 0; i < tRows; i++) {
        const [r0, r1] = rowsOf(i);
        const rows = r1 - r0;
        const w: step.Where = { b, h, outer: -1, inner: i, qBlock: i, kvBlock: -1, at: tilePos(p, b, h, r0, r1, 0, 0), role: 'preprocess' };
        let ev = tr.emit(
          'load',
          step.base(ctx, w, 'preLoad', { hbmRead: { O: rows * dv * eb, dO: rows * dv * eb, LSE: rows * 4 } }, true),
          () => ({
            tensors: ['O' as const, 'dO' as const, 'LSE' as const],
            ...step.tag(w),
          }),
        );
        if (ev) yield ev;
        yield* step.dsum(ctx, w, o);
        for (let r = 0; r < rows; r++) dHbm[rowBase + r0 + r] = tile.D[r];
        ev = tr.emit(
          'write',
          step.base(ctx, w, 'preWrite', { hbmWritten: { D: rows * 4, LSE: rows * 4, dQaccum: rows * d * 4 }, nonMatmulFlops: rows }, true),
          () => ({ tensors: ['D' as const, 'LSE' as const, 'dQaccum' as const], ...step.tag(w) }),
        );
        if (ev) yield ev;
      }

      // 2. Main kernel, one CTA per column block.
      for (const j of ctaOrder) {
        const c0 = j * blockN;
        const c1 = Math.min(nk, c0 + blockN);
        const cols = c1 - c0;
        const visits = acc.visits[j];
        if (visits.length === 0) continue;
        const kv: step.Where = { b, h, outer: j, inner: -1, qBlock: -1, kvBlock: j, at: tilePos(p, b, h, 0, 0, c0, c1) };
        const where = (i: number, role: step.Where['role'], stage?: number): step.Where => {
          const [r0, r1] = rowsOf(i);
          return { b, h, outer: j, inner: i, qBlock: i, kvBlock: j, at: tilePos(p, b, h, r0, r1, c0, c1), role, stage };
        };
        const prod = new Producer([stages.q, stages.dO]);
        let qSlot = 0;
        let dOSlot = 0;
        const loadQ = (i: number) =>
          function* (): Gen {
            const w = where(i, 'producer', qSlot++ % stages.q);
            const rows = w.at.rows;
            const ev = tr.emit('load', step.base(ctx, w, 'loadQ', { hbmRead: { Q: rows * d * eb, LSE: rows * 4 } }), () => ({
              tensors: ['Q' as const, 'LSE' as const],
              ...step.tag(w),
            }));
            if (ev) yield ev;
          };
        const loadDO = (i: number) =>
          function* (): Gen {
            const w = where(i, 'producer', dOSlot++ % stages.dO);
            const rows = w.at.rows;
            const ev = tr.emit('load', step.base(ctx, w, 'loaddO', { hbmRead: { dO: rows * dv * eb, D: rows * 4 } }), () => ({
              tensors: ['dO' as const, 'D' as const],
              ...step.tag(w),
            }));
            if (ev) yield ev;
          };
        prod.push(`Q${visits[0]}`, 0, loadQ(visits[0]));
        prod.push('KV', -1, function* (): Gen {
          const w = { ...kv, role: 'producer' as const };
          const ev = tr.emit('load', step.base(ctx, w, 'loadKV', { hbmRead: { K: cols * d * eb, V: cols * dv * eb } }), () => ({
            tensors: ['K' as const, 'V' as const],
            ...step.tag(w),
          }));
          if (ev) yield ev;
        });
        visits.forEach((i, n) => {
          prod.push(`dO${i}`, 1, loadDO(i));
          if (n + 1 < visits.length) prod.push(`Q${visits[n + 1]}`, 0, loadQ(visits[n + 1]));
        });

        kAcc.fill(0);
        vAcc.fill(0);
        yield* prod.wait('KV');
        for (const i of visits) {
          const w = where(i, 'mma');
          const rows = w.at.rows;
          const [r0] = rowsOf(i);
          for (let r = 0; r < rows; r++) {
            tile.lse[r] = lse[rowBase + r0 + r];
            tile.D[r] = dHbm[rowBase + r0 + r];
          }
          yield* prod.wait(`Q${i}`);
          yield* step.qk(ctx, w);
          yield* prod.wait(`dO${i}`);
          yield* step.dp(ctx, w);
          yield* step.mask(ctx, w);
          yield* step.recompute(ctx, w);
          yield* step.ds(ctx, w);
          yield* step.dv(ctx, w, vAcc);
          prod.release(1); // the kernel frees dO's stage once the dQ gemm is issued (dP and dV += Pᵀ dO were its readers)
          yield* step.dk(ctx, w, kAcc, 1);
          prod.release(0); // dK += dSᵀ Q was the last reader of Q's stage
          yield* step.dq(ctx, where(i, 'dqwriter'), S.dq, 1, () => ({
            contributors: acc.add(i, j),
            atomic: true,
            collidesWith: opts.trace ? acc.collisions(i, j) : [],
            turn: deterministic ? acc.turn(i, j, descending) : undefined,
            hbm: { hbmRead: { dQaccum: rows * d * 4 }, hbmWritten: { dQaccum: rows * d * 4 }, atomicAdds: rows * d },
          }));
          yield* prod.pump();
        }
        const w = { ...kv, role: 'mma' as const };
        const delta = step.storeKV(p, kv.at.hs, c0, cols, kAcc, vAcc, S.dk, S.dv, scale, eb, true);
        const ev = tr.emit(
          'write',
          step.base(ctx, w, 'writeKV', { ...delta, nonMatmulFlops: (delta.nonMatmulFlops ?? 0) + cols * d }),
          () => ({
            tensors: ['dK' as const, 'dV' as const],
            ...step.tag(w),
          }),
        );
        if (ev) yield ev;
      }

      // 3. Postprocess kernel: dQ = dQaccum × scale, in the input dtype.
      for (let i = 0; i < tRows; i++) {
        const [r0, r1] = rowsOf(i);
        const rows = r1 - r0;
        const w: step.Where = {
          b,
          h,
          outer: -1,
          inner: i,
          qBlock: i,
          kvBlock: -1,
          at: tilePos(p, b, h, r0, r1, 0, 0),
          role: 'postprocess',
        };
        const qb = w.at.hs.qBase + r0 * d;
        for (let e = 0; e < rows * d; e++) S.dq[qb + e] *= scale;
        yield* step.dqConvert(ctx, w, S.dq, eb);
      }
    }
  }
  const grads = finishGradients(S);
  const result: BackwardResult = {
    ...S.forward,
    counters: tr.counters,
    blocks: { blockM, blockN },
    ...grads,
    forward: S.forward,
    stats: { deterministic: deterministic ? 1 : 0 },
  };
  return result;
}

export const fa3Backward: BackwardAlgorithm = {
  id: 'fa3',
  name: 'FlashAttention-3 backward (Hopper)',
  pass: 'backward',
  linePrefix: 'fa3bwd',
  blocks: (p, o) => resolveBlocks(p, o, fa3BackwardTile(p)),
  run: runFa3Backward,
};
