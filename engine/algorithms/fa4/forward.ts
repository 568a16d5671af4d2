// FlashAttention-4 forward on Blackwell (SM100), after flash_fwd_sm100.py as seed 003 reads it.
//
// One CTA handles q_stage = 2 Q tiles of 128 rows (rows [256m, 256m + 128) and the next
// 128). Warp roles: a load warp (TMA: Q0, K, Q1, V, then K/V blocks into a 3-stage ring — the
// Large-Small-Large SMEM rotation), one MMA warp issuing tcgen05 GEMMs into TMEM, two
// softmax warpgroups (one per Q tile), a correction warpgroup (rescales O in TMEM and runs
// the epilogue). The numbers each role computes are real; the order of events is the
// MMA warp's issue order:
//
//   S0 = Q0·K_lastᵀ, S1 = Q1·K_lastᵀ; softmax0, softmax1
//   for each further block j (descending): O0 += P0·V_prev, S0 = Q0·K_jᵀ, O1 += P1·V_prev,
//     S1 = Q1·K_jᵀ; then per stage: mask, rowmax (→ correction rescales O if needed), exp2, rowsum
//   O0 += P0·V_first, O1 += P1·V_first; correction epilogue: O / l, write O and LSE.
//
// Numerics specific to FA4 (all switchable through RunOptions.features):
// - Log2 domain: logits are kept as s·log2 e (the kernel folds scale·log2 e into one FMA),
//   the row max lives in those units, and P = 2^(s − m). Events carry base2: true.
// - P is rounded to the 16-bit input type when stored to TMEM (kept fp32 for fp32 problems).
// - lazyRescale (default on), rescaleThreshold (default 8 = log2 units, the kernel's value
//   for 16-bit types): the max is only moved when it grows by more than the threshold;
//   otherwise the stale max stays, P may reach 2^8 = 256 (fine in fp16/bf16), and since
//   l is summed against the same stale max, O / l is still exact. The correction warp votes
//   per 32 rows (one warp) and rescales only warps with a row whose factor is not 1 —
//   rescaleCount counts the rows it touched, so lazy on/off differ on 'outlier-row'.
// - exp2Emulation (default on), exp2EmuFreq (16), exp2EmuRes (4): in 32-column fragments
//   of a row, the last `res` of every `freq` columns use the software exp2 of
//   exp2-emulation.ts (all fragments but the last), only on full unmasked blocks with d ≤ 128.
//   With the defaults that is 24 of 128 columns of an interior block.
//
// Support table: causal, sliding window, ALiBi (score_mod), softcap, learnable sinks,
// GQA/MQA, Nq ≠ Nk, d = 192 / dv = 128 (DeepSeek shape), any d ≤ 256: yes. fp32 inputs:
// not a tcgen05 kind::f16 type — FlashScope runs them with P kept fp32 to show the schedule.

import { ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { blockHasVisible } from '../../core/scores.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { exp2Emulated, exp2Hardware, isEmulatedColumn } from './exp2-emulation.ts';
import { readFeatures, type FeatureSpecs, type SwitchValues } from '../features.ts';
import { Producer } from '../producer.ts';
import * as step from '../tile-steps.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';

const evenPositive = (v: number) => (Number.isInteger(v) && v >= 2 && v % 2 === 0 ? undefined : `must be an even integer >= 2, got ${v}`);

export const FA4_FEATURES = {
  lazyRescale: { default: true, panel: true, doc: 'keep a stale row max unless it grew by more than rescaleThreshold (log2 units)' },
  rescaleThreshold: {
    default: 8,
    panel: true,
    inactive: (v: SwitchValues) => (v.lazyRescale ? undefined : 'applies with lazyRescale on only'),
    doc: 'log2-units growth of the row max that forces a rescale when lazyRescale is on',
    check: (v: number) => (v > 0 && v <= 64 ? undefined : `must be in (0, 64], got ${v}`),
  },
  exp2Emulation: { default: true, panel: true, doc: 'compute part of the exponentials with the polynomial exp2 on the FMA pipe' },
  exp2EmuFreq: { default: 16, doc: 'emulation pattern period in columns', check: evenPositive },
  exp2EmuRes: {
    default: 4,
    doc: 'emulated columns per period',
    check: (v: number) => (Number.isInteger(v) && v >= 0 && v % 2 === 0 ? undefined : `must be an even integer >= 0, got ${v}`),
  },
} satisfies FeatureSpecs;

export const FA4_Q_STAGES = 2;
export const FA4_KV_STAGES = 3;
/** Rows per correction-warp rescale vote (one warp, one thread per row). */
export const FA4_RESCALE_GROUP = 32;

function* runFa4(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures('fa4', FA4_FEATURES, opts.features);
  if (p.d > 256) throw new ProblemError('d', `FA4 instantiates head dims up to 256, got ${p.d}`);
  if (f.exp2EmuRes > f.exp2EmuFreq) {
    throw new ProblemError('features.exp2EmuRes', `must not exceed exp2EmuFreq (${f.exp2EmuFreq}), got ${f.exp2EmuRes}`);
  }
  const { blockM, blockN } = resolveBlocks(p, { ...opts, blockM: opts.blockM ?? 128, blockN: opts.blockN ?? 128 });
  const emulate = f.exp2Emulation && f.exp2EmuRes > 0 && p.d <= 128;
  const emuCols = new Uint8Array(blockN);
  for (let c = 0; c < blockN; c++) emuCols[c] = emulate && isEmulatedColumn(c, blockN, f.exp2EmuFreq, f.exp2EmuRes) ? 1 : 0;
  let emulated = 0;
  const ctx = step.makeContext(p, x, opts, {
    prefix: 'fa4',
    base2: true,
    lazyThreshold: f.lazyRescale ? f.rescaleThreshold : 0,
    rescaleGroup: FA4_RESCALE_GROUP,
    exp: (a, col, emulable) => {
      if (emulable && emuCols[col]) {
        emulated++;
        return exp2Emulated(a);
      }
      return exp2Hardware(a);
    },
  });
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const ctaRows = FA4_Q_STAGES * blockM;
  const nCta = blockCount(p.nq, ctaRows);
  const tc = blockCount(p.nk, blockN);
  const eb = ctx.eb;
  const lse = new Float64Array(blockM);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let m = 0; m < nCta; m++) {
        const r0 = m * ctaRows;
        const r1 = Math.min(p.nq, r0 + ctaRows);
        // The two Q tiles (stages) of this CTA; the second may be absent at the ragged end.
        const stages: { st: step.RowState; at: step.At; t: step.ScoreTile; qb: number }[] = [];
        for (let s = 0; s < FA4_Q_STAGES; s++) {
          const q0 = r0 + s * blockM;
          if (q0 >= r1) break;
          const rows = Math.min(r1, q0 + blockM) - q0;
          const qb = FA4_Q_STAGES * m + s;
          stages.push({
            st: new step.RowState(hk, q0, rows, p.dv),
            at: { b, h, outer: qb, inner: -1, qBlock: qb, warpgroup: s },
            t: new step.ScoreTile(rows, blockN),
            qb,
          });
        }
        const blocks: number[] = [];
        for (let j = tc - 1; j >= 0; j--) {
          if (blockHasVisible(ctx.sm, r0, r1, j * blockN, Math.min(p.nk, (j + 1) * blockN), p.nk)) blocks.push(j);
        }
        const colsOf = (j: number): [number, number] => [j * blockN, Math.min(p.nk, (j + 1) * blockN)];
        const KV = 0;
        const prod = new Producer([FA4_KV_STAGES]);
        const pushQ = (s: (typeof stages)[number]) =>
          prod.push(`Q${s.qb}`, -1, () =>
            step.load(ctx, { ...s.at, warpgroup: undefined }, 'loadQ', [s.st.r0, s.st.r0 + s.st.rows], [0, 0], -1, { Q: s.st.rows * p.d * eb }),
          );
        const pushKV = (j: number, t: 'K' | 'V') => {
          const [c0, c1] = colsOf(j);
          const at: step.At = { b, h, outer: FA4_Q_STAGES * m, inner: j, qBlock: FA4_Q_STAGES * m };
          prod.push(`${t}${j}`, KV, () =>
            step.load(ctx, at, t === 'K' ? 'loadK' : 'loadV', [r0, r1], [c0, c1], j, { [t]: (c1 - c0) * (t === 'K' ? p.d : p.dv) * eb }),
          );
        };
        // Load warp program order (seed 003): Q0, K_last, Q1, V_last, then K_j, V_j descending.
        pushQ(stages[0]);
        if (blocks.length) pushKV(blocks[0], 'K');
        if (stages[1]) pushQ(stages[1]);
        if (blocks.length) pushKV(blocks[0], 'V');
        for (let n = 1; n < blocks.length; n++) {
          pushKV(blocks[n], 'K');
          pushKV(blocks[n], 'V');
        }

        const softmax = function* (s: (typeof stages)[number], j: number) {
          const at: step.At = { ...s.at, inner: j };
          yield* step.mask(ctx, at, s.st, s.t);
          yield* step.rowmax(ctx, at, s.st, s.t);
          // The correction warpgroup rescales O as soon as the new max is published.
          yield* step.rescale(ctx, at, s.st, s.t);
          yield* step.exp(ctx, at, s.st, s.t);
          yield* step.rowsum(ctx, at, s.st, s.t);
        };
        const qkAll = function* (j: number) {
          for (const s of stages) {
            yield* prod.wait(`Q${s.qb}`);
            yield* prod.wait(`K${j}`);
            const [c0, c1] = colsOf(j);
            yield* step.qk(ctx, { ...s.at, inner: j }, s.st, s.t, j, c0, c1 - c0);
          }
        };

        for (const s of stages) yield* prod.wait(`Q${s.qb}`);
        if (blocks.length) {
          yield* qkAll(blocks[0]);
          prod.release(KV);
          yield* prod.pump();
          for (const s of stages) yield* softmax(s, blocks[0]);
          for (let n = 1; n < blocks.length; n++) {
            const prev = blocks[n - 1];
            const j = blocks[n];
            for (const s of stages) {
              yield* prod.wait(`V${prev}`);
              yield* step.pv(ctx, { ...s.at, inner: prev }, s.st, s.t);
              yield* prod.wait(`K${j}`);
              const [c0, c1] = colsOf(j);
              yield* step.qk(ctx, { ...s.at, inner: j }, s.st, s.t, j, c0, c1 - c0);
            }
            prod.release(KV); // V_prev
            prod.release(KV); // K_j
            yield* prod.pump();
            for (const s of stages) yield* softmax(s, j);
          }
          const lastB = blocks[blocks.length - 1];
          for (const s of stages) {
            yield* prod.wait(`V${lastB}`);
            yield* step.pv(ctx, { ...s.at, inner: lastB }, s.st, s.t);
          }
          prod.release(KV);
        }
        for (const s of stages) {
          yield* step.normalize(ctx, s.at, s.st, lse);
          step.storeRows(ctx, s.at, s.st, lse, o, lseOut);
          yield* step.write(ctx, s.at, 'write', [s.st.r0, s.st.r0 + s.st.rows], { O: s.st.rows * p.dv * eb, LSE: s.st.rows * 4 });
        }
      }
    }
  }
  const result: AlgorithmResult = {
    o,
    lse: lseOut,
    counters: ctx.tr.counters,
    blocks: { blockM, blockN },
    stats: { emulatedExp2: emulated },
  };
  return result;
}

export const fa4: StepAlgorithm = { id: 'fa4', name: 'FlashAttention-4 (Blackwell, SM100)', run: runFa4 };
