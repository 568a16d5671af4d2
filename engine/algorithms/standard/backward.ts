// Standard attention's backward (the FA1 paper's Algorithm 3): the forward left S and P in
// HBM, and the backward materializes two more N×N matrices there, dP and dS. Five passes
// over row strips of Br rows (the trace granularity; a strip spans every key):
//   1. dV = Pᵀ dO      (P and dO read; dV written)
//   2. dP = dO Vᵀ      (dO read; dP written, fp32)
//   3. dS = P ∘ (dP − rowsum(dP ∘ P))   (P and dP read, and S with a softcap for its
//      derivative; dS written in the input dtype)
//   4. dQ = τ dS K     (dS read; dQ written)
//   5. dK = τ dSᵀ Q    (dS and Q read; dK written)
// No exponential is evaluated and S is not recomputed: that is the 4·N² of memory standard
// attention pays instead (the counters show the bytes). The P read here is the forward's
// stored P, exp(S − LSE) rounded to the input dtype, which is the forward's
// exp(S − m) / l up to its fp32 rounding.

import { blockCount } from '../blocks.ts';
import { readFeatures } from '../features.ts';
import { standard, standardBlocks } from './forward.ts';
import type { RunOptions } from '../types.ts';
import { finishGradients, setUpBackward } from '../../backward/setup.ts';
import * as g from '../../backward/tile-grad.ts';
import * as step from '../../backward/tile-events.ts';
import type { BackwardAlgorithm, BackwardGenerator, BackwardResult } from '../../backward/types.ts';
import type { AttentionInputs } from '../../core/inputs.ts';
import { softmaxScale, type AttentionProblem } from '../../core/problem.ts';
import type { HbmTensor } from '../../core/counters.ts';

function* runStandardBackward(p: AttentionProblem, xIn: AttentionInputs, opts: RunOptions): BackwardGenerator {
  readFeatures('standard', {}, opts.features);
  const { blockM } = standardBlocks(p, opts);
  const S = setUpBackward(p, xIn, standard, { blockM }, opts.trace);
  const { x, sm, tr, eb } = S;
  const { d, dv, nq, nk } = p;
  const scale = softmaxScale(p);
  const cap = p.softcap !== undefined;
  // "HBM": S, P, dP and dS of one head, reused across heads; strips are views into them.
  const full = new g.GradTile(nq, nk, d);
  const vAcc = new Float32Array(nk * dv);
  const kAcc = new Float32Array(nk * d);
  const lse = S.forward.lse;
  const tRows = blockCount(nq, blockM);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const rowBase = (b * p.hq + h) * nq;
      const strip = (pass: number, i: number) => {
        const r0 = i * blockM;
        const r1 = Math.min(nq, r0 + blockM);
        const tile = new g.GradTile(r1 - r0, nk, d, { tile: full, r0 });
        const ctx: step.BwdContext = { p, x, sm, tr, trace: opts.trace, prefix: 'standardbwd', rounder: S.rounder, tile };
        const w: step.Where = { b, h, outer: pass, inner: i, qBlock: i, kvBlock: 0, at: g.tilePos(p, b, h, r0, r1, 0, nk) };
        return { ctx, w, rows: r1 - r0, r0 };
      };
      const whole = (pass: number): step.Where => ({
        b,
        h,
        outer: pass,
        inner: -1,
        qBlock: -1,
        kvBlock: 0,
        at: g.tilePos(p, b, h, 0, 0, 0, nk),
      });
      const ctx0 = strip(1, 0).ctx;
      const io = (w: step.Where, kind: 'load' | 'write', line: string, bytes: Partial<Record<HbmTensor, number>>) =>
        tr.emit(kind, step.base(ctx0, w, line, kind === 'load' ? { hbmRead: bytes } : { hbmWritten: bytes }), () => ({
          tensors: Object.keys(bytes) as HbmTensor[],
          ...step.tag(w),
        }));

      // Pass 1: dV = Pᵀ dO.
      vAcc.fill(0);
      for (let i = 0; i < tRows; i++) {
        const { ctx, w, rows, r0 } = strip(1, i);
        const ev = io(w, 'load', 'loadPdO', { P: rows * nk * eb, dO: rows * dv * eb });
        if (ev) yield ev;
        // The stored P (see the header): S with its modifiers and mask, then exp(S − LSE).
        g.scores(p, sm, x, ctx.tile, w.at);
        g.mask(p, sm, ctx.tile, w.at);
        for (let r = 0; r < rows; r++) ctx.tile.lse[r] = lse[rowBase + r0 + r];
        g.recompute(ctx.tile, w.at, S.rounder);
        yield* step.dv(ctx, w, vAcc);
      }
      let ev = tr.emit(
        'write',
        step.base(ctx0, whole(1), 'writedV', step.storeGrad(p, h, 'dV', vAcc, S.dv, strip(1, 0).w.at.hs.vBase, nk * dv, 1, eb, false)),
        () => ({
          tensors: ['dV' as const],
          ...step.tag(whole(1)),
        }),
      );
      if (ev) yield ev;

      // Pass 2: dP = dO Vᵀ.
      ev = io(whole(2), 'load', 'loadV', { V: nk * dv * eb });
      if (ev) yield ev;
      for (let i = 0; i < tRows; i++) {
        const { ctx, w, rows } = strip(2, i);
        ev = io(w, 'load', 'loaddO', { dO: rows * dv * eb });
        if (ev) yield ev;
        yield* step.dp(ctx, w);
        ev = io(w, 'write', 'writedP', { dP: rows * nk * 4 });
        if (ev) yield ev;
      }

      // Pass 3: dS = P ∘ (dP − rowsum(dP ∘ P)), the softcap derivative from S.
      for (let i = 0; i < tRows; i++) {
        const { ctx, w, rows } = strip(3, i);
        ev = io(
          w,
          'load',
          'loadPdP',
          cap ? { P: rows * nk * eb, dP: rows * nk * 4, S: rows * nk * 4 } : { P: rows * nk * eb, dP: rows * nk * 4 },
        );
        if (ev) yield ev;
        const t = ctx.tile;
        for (let r = 0; r < rows; r++) {
          let acc = 0;
          for (let c = 0; c < nk; c++) acc += t.dp[r * nk + c] * t.p16[r * nk + c];
          t.D[r] = Math.fround(acc);
        }
        yield* step.ds(ctx, w, 'p16', 2 * rows * nk);
        ev = io(w, 'write', 'writedS', { dS: rows * nk * eb });
        if (ev) yield ev;
      }

      // Pass 4: dQ = τ dS K.
      ev = io(whole(4), 'load', 'loadK', { K: nk * d * eb });
      if (ev) yield ev;
      for (let i = 0; i < tRows; i++) {
        const { ctx, w, rows } = strip(4, i);
        ev = io(w, 'load', 'loaddS', { dS: rows * nk * eb });
        if (ev) yield ev;
        yield* step.dq(ctx, w, S.dq, scale, () => ({ contributors: [0], atomic: false, collidesWith: [], hbm: {} }));
        ev = io(w, 'write', 'writedQ', { dQ: rows * d * eb });
        if (ev) yield ev;
      }

      // Pass 5: dK = τ dSᵀ Q.
      kAcc.fill(0);
      for (let i = 0; i < tRows; i++) {
        const { ctx, w, rows } = strip(5, i);
        ev = io(w, 'load', 'loaddSQ', { dS: rows * nk * eb, Q: rows * d * eb });
        if (ev) yield ev;
        yield* step.dk(ctx, w, kAcc, scale);
      }
      ev = tr.emit(
        'write',
        step.base(ctx0, whole(5), 'writedK', step.storeGrad(p, h, 'dK', kAcc, S.dk, strip(5, 0).w.at.hs.kBase, nk * d, 1, eb, false)),
        () => ({
          tensors: ['dK' as const],
          ...step.tag(whole(5)),
        }),
      );
      if (ev) yield ev;
    }
  }
  const grads = finishGradients(S);
  const result: BackwardResult = { ...S.forward, counters: tr.counters, blocks: { blockM, blockN: nk }, ...grads, forward: S.forward };
  return result;
}

export const standardBackward: BackwardAlgorithm = {
  id: 'standard',
  name: 'Standard attention backward (P, dP, dS in HBM)',
  pass: 'backward',
  linePrefix: 'standardbwd',
  blocks: standardBlocks,
  run: runStandardBackward,
};
