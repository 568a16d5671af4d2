// FlashAttention-4 forward on Blackwell (SM100): "FlashAttention-4: Algorithm and Kernel
// Pipelining Co-Design for Asymmetric Hardware Scaling" (arXiv 2603.05451) as
// flash_attn/cute/flash_fwd_sm100.py at 0251105a implements it (configuration: tiles.ts).
//
// One CTA handles q_stage Q tiles of 128 rows (2, or 1 when seqlen_q ≤ 128). Warp roles: a
// load warp (TMA: K, Q0, Q1, V, then K/V blocks into the K/V ring), one MMA warp issuing
// tcgen05 GEMMs into TMEM, one softmax warpgroup per Q tile, a correction warpgroup (rescales
// O in TMEM and runs the epilogue). The numbers each role computes are real; the order of
// events is the MMA warp's issue order:
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
// - exp2Emulation (default on): softmax.py's apply_exp2_convert pattern. In each 32-element
//   fragment of a row from ex2_emu_start_frg on, all but the last fragment, the pairs whose
//   index mod freq is ≥ freq − res use the software exp2 of exp2-emulation.ts, on masked and
//   unmasked blocks alike. freq, res and the start fragment default to the kernel's value for
//   the configuration (_TUNING_CONFIG, else 16 / 4 / 1: 16 of 128 columns); exp2EmuFreq,
//   exp2EmuRes and exp2EmuStartFrg override them.
//
// - FP8 (dtype fp8e4m3 / fp8e5m2): the kernel's FP8 forward (./fp8.ts): inputs quantized with one
//   descale per (batch, KV head), P·2^8 cast to the input format before P·V, no lazy rescale,
//   O in bf16.
//
// Support table: causal, sliding window, ALiBi (score_mod), softcap, learnable sinks,
// GQA/MQA, Nq ≠ Nk: yes. Head dims: those upstream's _validate_head_dims accepts on SM100
// (d, dv ≤ 128; 192/128; 256/256; the MLA shapes with dv 512); others are refused. fp32
// inputs: not a tcgen05 kind::f16 type — FlashScope runs them with P kept fp32 to show the schedule.

import { isFp8, ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { roundBf16 } from '../../core/dtype.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { exp2Emulated, exp2Hardware } from './exp2-emulation.ts';
import { fa4Fp8RescaleThreshold, prepareFa4Fp8 } from './fp8.ts';
import { fa4Config, isEmulatedElement, type Fa4Exp2 } from './tiles.ts';
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
    dtypes: ['fp32', 'fp16', 'bf16'],
    dtypeWhy: 'FP8 runs rescale whenever the row max grows: rescale_threshold is 0 for 8-bit inputs, flash_fwd_sm100.py l. 2190',
    doc: 'log2-units growth of the row max that forces a rescale when lazyRescale is on',
    check: (v: number) => (v > 0 && v <= 64 ? undefined : `must be in (0, 64], got ${v}`),
  },
  exp2Emulation: { default: true, panel: true, doc: 'compute part of the exponentials with the polynomial exp2 on the FMA pipe' },
  exp2EmuFreq: {
    default: 0,
    doc: "emulation pattern period in columns (0: the kernel's value for this configuration)",
    check: (v: number) => (v === 0 ? undefined : evenPositive(v)),
  },
  exp2EmuRes: {
    default: 0,
    doc: "emulated columns per period (0: the kernel's value, 4, or 6 at d = 256)",
    check: (v: number) => (Number.isInteger(v) && v >= 0 && v % 2 === 0 ? undefined : `must be an even integer >= 0, got ${v}`),
  },
  exp2EmuStartFrg: {
    default: -1,
    doc: "first 32-column fragment that uses the polynomial (-1: the kernel's value, 1 unless _TUNING_CONFIG says 0)",
    check: (v: number) => (Number.isInteger(v) && v >= -1 && v <= 8 ? undefined : `must be an integer in [-1, 8], got ${v}`),
  },
} satisfies FeatureSpecs;

/** Rows per correction-warp rescale vote (one warp, one thread per row). */
export const FA4_RESCALE_GROUP = 32;

/** The kernel configuration this problem selects. */
function fa4ConfigFor(p: AttentionProblem): ReturnType<typeof fa4Config> {
  // fp32 runs (a teaching mode, no kernel takes them) are configured as the 16-bit kernel.
  const dtype = p.dtype === 'fp32' ? 'bf16' : p.dtype;
  // The arithmetic is exact at any head dim, so the stepper runs them all; the hardware model
  // (schedule, describe, simulate) refuses the head dims upstream does not compile.
  const local = p.window !== undefined && (p.window.left >= 0 || p.window.right >= 0);
  return fa4Config({ d: p.d, dv: p.dv, dtype, causal: p.causal, local, nq: p.nq });
}

function* runFa4(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures('fa4', FA4_FEATURES, opts.features);
  const cfg = fa4ConfigFor(p);
  const pattern: Fa4Exp2 = {
    freq: f.exp2EmuFreq || cfg.exp2.freq,
    res: f.exp2EmuRes || cfg.exp2.res,
    startFrg: f.exp2EmuStartFrg >= 0 ? f.exp2EmuStartFrg : cfg.exp2.startFrg,
  };
  if (pattern.freq > 0 && pattern.res > pattern.freq) {
    throw new ProblemError('features.exp2EmuRes', `must not exceed exp2EmuFreq (${pattern.freq}), got ${pattern.res}`);
  }
  const { blockM, blockN } = fa4.blocks(p, opts);
  const Q_STAGES = cfg.qStage;
  const emuCols = new Uint8Array(blockN);
  for (let c = 0; c < blockN; c++) emuCols[c] = f.exp2Emulation && isEmulatedElement(c, blockN, pattern) ? 1 : 0;
  let emulated = 0;
  // FP8: quantize once up front (./fp8.ts); the schedule reads the quantized tensors, casts P
  // before each P·V and writes O in bf16.
  const q8 = isFp8(p.dtype) ? prepareFa4Fp8(p, x, blockM, blockN) : undefined;
  const threshold = q8 ? fa4Fp8RescaleThreshold(p, opts.features?.rescaleThreshold as number | undefined) : f.rescaleThreshold;
  const ctx = step.makeContext(p, q8 ? q8.x : x, opts, {
    prefix: 'fa4',
    base2: true,
    ...(q8 ? { fp8: q8, dotRound: Math.fround, outRound: roundBf16 } : {}),
    lazyThreshold: f.lazyRescale ? threshold : 0,
    rescaleGroup: FA4_RESCALE_GROUP,
    // The pattern runs on every block, masked or not (masked -inf entries never reach exp).
    exp: (a, col) => {
      if (emuCols[col]) {
        emulated++;
        return exp2Emulated(a);
      }
      return exp2Hardware(a);
    },
  });
  step.walkBlockMask(ctx, blockM, blockN);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const ctaRows = Q_STAGES * blockM;
  const nCta = blockCount(p.nq, ctaRows);
  const tc = blockCount(p.nk, blockN);
  const eb = ctx.eb;
  const oBytes = q8 ? 2 : eb;
  const lse = new Float64Array(blockM);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let m = 0; m < nCta; m++) {
        const r0 = m * ctaRows;
        const r1 = Math.min(p.nq, r0 + ctaRows);
        // The two Q tiles (stages) of this CTA; the second may be absent at the ragged end.
        const stages: { st: step.RowState; at: step.At; t: step.ScoreTile; qb: number }[] = [];
        for (let s = 0; s < Q_STAGES; s++) {
          const q0 = r0 + s * blockM;
          if (q0 >= r1) break;
          const rows = Math.min(r1, q0 + blockM) - q0;
          const qb = Q_STAGES * m + s;
          stages.push({
            st: new step.RowState(hk, q0, rows, p.dv),
            at: { b, h, outer: qb, inner: -1, qBlock: qb, warpgroup: s },
            t: new step.ScoreTile(rows, blockN),
            qb,
          });
        }
        // K/V blocks either Q tile needs, last first.
        const ctaAt: step.At = { b, h, outer: Q_STAGES * m, inner: -1, qBlock: Q_STAGES * m };
        const blocks = (yield* step.visitedKv(
          ctx,
          ctaAt,
          stages.map((s) => s.qb),
          0,
          tc,
        )).reverse();
        const colsOf = (j: number): [number, number] => [j * blockN, Math.min(p.nk, (j + 1) * blockN)];
        const KV = 0;
        const prod = new Producer([cfg.kvStage]);
        const pushQ = (s: (typeof stages)[number]) =>
          prod.push(`Q${s.qb}`, -1, () =>
            step.load(ctx, { ...s.at, warpgroup: undefined }, 'loadQ', [s.st.r0, s.st.r0 + s.st.rows], [0, 0], -1, {
              Q: s.st.rows * p.d * eb,
            }),
          );
        const pushKV = (j: number, t: 'K' | 'V') => {
          const [c0, c1] = colsOf(j);
          const at: step.At = { b, h, outer: Q_STAGES * m, inner: j, qBlock: Q_STAGES * m };
          prod.push(`${t}${j}`, KV, () =>
            step.load(ctx, at, t === 'K' ? 'loadK' : 'loadV', [r0, r1], [c0, c1], j, { [t]: (c1 - c0) * (t === 'K' ? p.d : p.dv) * eb }),
          );
        };
        // Load warp program order (flash_fwd_sm100.py@0251105a l. 1624-1651): K_last, Q0, Q1, V_last, then K_j, V_j descending.
        if (blocks.length) pushKV(blocks[0], 'K');
        pushQ(stages[0]);
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
          yield* step.write(ctx, s.at, 'write', [s.st.r0, s.st.r0 + s.st.rows], { O: s.st.rows * p.dv * oBytes, LSE: s.st.rows * 4 });
        }
      }
    }
  }
  const result: AlgorithmResult = {
    o,
    lse: lseOut,
    counters: ctx.tr.counters,
    blocks: { blockM, blockN },
    stats: { emulatedExp2: emulated, ...(q8 ? { flushedP: ctx.tally.flushedP, castP: ctx.tally.castP, saturated: q8.saturated } : {}) },
  };
  return result;
}

export const fa4: StepAlgorithm = {
  id: 'fa4',
  name: 'FlashAttention-4 (Blackwell, SM100)',
  blocks: (p, o) => resolveBlocks(p, o, fa4ConfigFor(p)),
  run: runFa4,
};
