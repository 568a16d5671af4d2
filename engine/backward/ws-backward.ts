// The backward of the warp-specialized Hopper and Blackwell kernels (FA3's hopper/ backward,
// FA4's flash_bwd_sm100.py), as the step engine shows it: three kernels, the middle one split
// into warp roles. Shown per (b, h):
//
// 1. Preprocess kernel (role `preprocess`): per row block, D_i = rowsum(dO_i ∘ O_i) (the
//    kernels' dPsum), the LSE rescaled to log2 units for exp2, and dQaccum zeroed.
// 2. Main kernel: one CTA per column block j (the K/V-outer loop of FA2), which walks its
//    visible row blocks in ascending order:
//    - `producer` (FA3's producer warp, FA4's load warp): loads K_j, V_j once (TMA) and
//      streams Q_i with LSE_i through one ring and dO_i with D_i through another; a copy
//      waits for a free slot, so loads run ahead of the math by at most the ring depth
//      (`stage` = the slot).
//    - `mma` (the MMA warpgroups, or FA4's MMA and compute warps): S and dP, P from the LSE,
//      dS = P ∘ (dP − D_i), dV_j += Pᵀ dO_i, the dQ partial dS K_j and dK_j += dSᵀ Q_i, which
//      stay on chip (registers on SM90, TMEM on SM100) until the CTA ends.
//    - `dqwriter` (FA3's dQ writer warp, FA4's reduce warps): adds the dQ partial into the fp32
//      dQaccum in HBM with a bulk reduce-add (TMA), the atomic add of these kernels. With the
//      deterministic feature a semaphore per dQ row block makes the column blocks add in a
//      fixed order: ascending, or from the last visible block down (the kernel's choice),
//      in which case the CTAs are traced from the last column block down.
//    - epilogue (`mma`): dK_j × scale and dV_j written (GQA: added into fp32 accumulators).
// 3. Postprocess kernel (role `postprocess`): dQ = dQaccum × scale in the input dtype.
//
// Simplifications, written down for the lesson: the CTAs that run at once on the GPU run one
// after another here (the `dq` events' collidesWith says which adds would overlap); the
// warps that split a tile are shown as one unit; the asynchrony inside one step is shown in
// program order; the dQ gemm's FLOPs are counted on the `dq` event that adds its result. The
// numbers are those the kernel computes, with the scale applied where the kernel applies it
// (dQaccum and dK hold unscaled sums). fp32 inputs run unrounded (the kernels take 16-bit
// only), as in the forward models.

import { requireSupported, type Supports } from '../algorithms/capabilities.ts';
import { blockCount, resolveBlocks } from '../algorithms/blocks.ts';
import { readFeatures, type FeatureSpecs } from '../algorithms/features.ts';
import { Producer } from '../algorithms/producer.ts';
import type { RunOptions, StepAlgorithm } from '../algorithms/types.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { TraceEvent } from '../trace/events.ts';
import { finishGradients } from './setup.ts';
import { setUpTiledBackward } from './tiled-setup.ts';
import { tilePos } from './tile-grad.ts';
import * as step from './tile-events.ts';
import type { BackwardAlgorithm, BackwardGenerator, BackwardResult } from './types.ts';

/** What one warp-specialized kernel brings: its forward, switches, tile, ring depths and deterministic order. */
export interface WsBackwardKernel {
  id: string;
  name: string;
  /** Line id prefix of its events, e.g. 'fa3bwd'. */
  prefix: string;
  forward: StepAlgorithm;
  /** Its switches: `deterministic` and the forward's, which the forward run takes. */
  features: FeatureSpecs & { deterministic: FeatureSpecs[string] };
  supports: Supports;
  /** The kernel's backward tile for a problem (the debugger's Br/Bc replace it when given). */
  tile: (p: AttentionProblem) => { blockM: number; blockN: number };
  /** Slots of the Q/LSE ring and of the dO/D ring. */
  stages: (p: AttentionProblem) => { q: number; dO: number };
  /** Deterministic runs hand out the column blocks from the last one down. */
  lastColumnFirst: (p: AttentionProblem) => boolean;
}

type Gen = Generator<TraceEvent, void, void>;

function* run(k: WsBackwardKernel, p: AttentionProblem, xIn: AttentionInputs, opts: RunOptions): BackwardGenerator {
  const f = readFeatures(k.id, k.features, opts.features);
  requireSupported(k.id, k.supports, 'backward', p);
  const { blockM, blockN } = resolveBlocks(p, opts, k.tile(p));
  const { deterministic, ...forwardFeatures } = f;
  const S = setUpTiledBackward(p, xIn, k.forward, { blockM, blockN, features: forwardFeatures }, opts.trace, k.prefix);
  const { tr, eb, scale, ctx, kAcc, vAcc, acc } = S;
  const tile = ctx.tile;
  const { d, dv, nq, nk } = p;
  const dHbm = new Float32Array(p.batch * p.hq * nq);
  const o = S.forward.o;
  const lse = S.forward.lse;
  const tRows = blockCount(nq, blockM);
  const tCols = blockCount(nk, blockN);
  const stages = k.stages(p);
  const descending = deterministic === true && k.lastColumnFirst(p);
  const ctaOrder = Array.from({ length: tCols }, (_, j) => (descending ? tCols - 1 - j : j));

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      acc.reset();
      const rowBase = (b * p.hq + h) * nq;
      const rowsOf = (i: number) => [i * blockM, Math.min(nq, (i + 1) * blockM)] as const;

      // 1. Preprocess kernel.
      for (let i = 0; i < tRows; i++) {
        const w = step.rowBlock(p, b, h, i, blockM, 'preprocess');
        const { r0, rows } = w.at;
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
        const { c0, c1, cols, kv } = step.columnBlock(p, b, h, j, blockN);
        const visits = acc.visits[j];
        if (visits.length === 0) continue;
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
        const w = step.rowBlock(p, b, h, i, blockM, 'postprocess');
        const { r0, rows } = w.at;
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

/** The BackwardAlgorithm of a warp-specialized kernel. */
export function wsBackward(k: WsBackwardKernel): BackwardAlgorithm {
  return {
    id: k.id,
    name: k.name,
    pass: 'backward',
    linePrefix: k.prefix,
    blocks: (p, o) => resolveBlocks(p, o, k.tile(p)),
    run: (p, x, o) => run(k, p, x, o),
  };
}
