// FlashAttention-3 forward ("FlashAttention-3", Shah et al. 2024, arXiv 2407.08608; hopper/ at 0251105a), the Hopper (SM90) schedule.
//
// One CTA per (batch, head, Q tile). A producer warp issues TMA copies — Q, then K/V
// blocks into two-stage rings — while consumer warpgroups of 64 rows each run the math.
// The numbers are FA2's (online softmax, one division at the end); what FA3 changes is
// *when* each piece runs, and the trace follows that order:
//
// - K/V blocks are visited from the last one down to the first, as the kernel does (the
//   causal diagonal block, the only one needing a mask, comes first).
// - intraOverlap (default on; paper §3.2 and Algorithm 2): S_next =
//   Q·K_jᵀ is issued *before* O += P_cur·V_{j−1}; the softmax of S_next runs while that
//   GEMM is in flight, and O is rescaled once it lands. The trace therefore interleaves two
//   K/V blocks: qk(j), pv(j−1), rowmax/exp/rowsum(j), rescale. Off: qk(j), softmax(j), pv(j).
//   Both orders compute the same numbers: acc ← (acc + P_{j−1}V_{j−1})·f_j either way.
// - pingpong (default on), where the kernel has a scheduler barrier (UseSchedulerBarrier:
//   16-bit d ≤ 128, FP8 d ≥ 128; hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a l. 352-356):
//   named barriers hand the tensor cores to the consumer warpgroups in turn — WG0's GEMMs,
//   then WG1's while WG0 does its softmax, round-robin. Elsewhere, or switched off, each
//   warpgroup runs its own mainloop (flash_fwd_kernel_sm90.h@0251105a, the consumer branch
//   calls mainloop.mma per warpgroup) tied to the others only by the K/V pipeline's full and
//   empty barriers; they start together and run the same program, so the trace lists each
//   phase for every warpgroup before the next phase. Either way each warpgroup owns 64 rows
//   of the Q tile and its events carry `warpgroup`.
//
// Tile sizes default to the kernel's table for 16-bit inputs (hopper/tile_size.h):
//   d ≤ 64: 192 × (causal/window ? 128 : 192); d ≤ 96: 192 × (window ? 128 : 144);
//   d ≤ 128: 128 × (causal/window ? 128 : 176); d ≤ 192: 128 × (window ? 96 : dv ≤ 128 ? 128 : 112);
//   d ≤ 256: 128 × (window ? 64 : 80). Overridable with blockM / blockN.
//
// Support table (FlashScope runs each for real):
//   causal, sliding window, softcap, GQA/MQA, Nq ≠ Nk, d ≠ dv: supported by the kernel.
//   ALiBi: not in FA3; added to S as FA2 does. Attention sinks: not in the original FA3
//   release; added at the final normalization as FA2 does.
//   dtype fp32: the kernel takes fp16/bf16/fp8 only; FlashScope runs fp32 inputs unrounded
//   so the schedule can be studied without rounding noise.
//   dtype fp8e4m3 / fp8e5m2: FA3's FP8 forward (engine/algorithms/fa3/fp8.ts): Q, K, V quantized
//   per tensor or per tile, optionally after a Hadamard rotation of Q and K; S in fp32; P
//   scaled and cast to e4m3 before P·V; O written in bf16. The kernel's 1-byte tile table
//   (128×224 at d = 128). No ALiBi or sinks there; d = dv, or d 192 with dv 128.
//   d > 256: rejected (no kernel instance).

import { FA3_SUPPORTS } from './supports.ts';
import { requireSupported } from '../capabilities.ts';
import { isFp8, ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { roundBf16 } from '../../core/dtype.ts';
import { FA3_FP8_FEATURES, prepareFp8 } from './fp8.ts';
import { kvHead, type AttentionInputs } from '../../core/inputs.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { fa3Config, type Fa3Config } from './tiles.ts';
import { readFeatures, type FeatureSpecs } from '../features.ts';
import { Producer } from '../producer.ts';
import * as step from '../tile-steps.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';
import type { TraceEvent } from '../../trace/events.ts';

/** The warp-scheduling switches, shared with the backward. */
export const FA3_SCHEDULE_FEATURES = {
  intraOverlap: {
    default: true,
    label: 'intra-warpgroup overlap',
    doc: 'issue S_next = Q·K_jᵀ before O += P·V_{j−1}, so the softmax runs under the second GEMM',
  },
  pingpong: {
    default: true,
    label: 'ping-pong',
    doc: 'the consumer warpgroups take turns on the tensor cores (named barriers), so one softmax hides under the next one’s GEMMs; the kernel has this only for 16-bit d ≤ 128 and FP8 d ≥ 128, elsewhere (or off) the warpgroups run side by side',
  },
} satisfies FeatureSpecs;

export const FA3_FEATURES = {
  ...FA3_SCHEDULE_FEATURES,
  reverseKv: {
    default: true,
    panel: true,
    doc: 'visit K/V blocks last to first as the kernel does (off: first to last; with FP8 this decides which P values flush)',
  },
  ...FA3_FP8_FEATURES,
} satisfies FeatureSpecs;

/** Rows per consumer warpgroup (one wgmma M tile). */
export const FA3_ROWS_PER_WARPGROUP = 64;
/** Pipeline depth of the K and V rings. */
export const FA3_STAGES = 2;

/** The shipped kernel's configuration for a problem (hopper/ at 0251105a, through fa3Config). */
function configFor(p: AttentionProblem): Fa3Config {
  // attention_chunk makes the kernel local too (hopper/flash_api.cpp@0251105a l. 148-149).
  const local = (p.window !== undefined && (p.window.left >= 0 || p.window.right >= 0)) || p.attentionChunk !== undefined;
  return fa3Config({ d: p.d, dv: p.dv, dtype: p.dtype, causal: p.causal, local, softcap: p.softcap !== undefined && p.softcap > 0 });
}

/** The kernel's default tile for a problem (hopper/tile_size.h@0251105a through fa3Config). */
export function fa3DefaultTile(p: AttentionProblem): { blockM: number; blockN: number } {
  const c = configFor(p);
  return { blockM: c.blockM, blockN: c.blockN };
}

const BARRIER_SRC = 'UseSchedulerBarrier, hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a';

/**
 * How the stepper orders its consumer warpgroups for this problem, and why: round-robin
 * (ping-pong) only where the kernel has the scheduler barrier and the switch is on.
 */
export function fa3WarpgroupOrder(
  p: AttentionProblem,
  blockM: number,
  pingpongSwitch: boolean,
): { pingpong: boolean; warpgroups: number; why: string } {
  const c = configFor(p);
  const n = Math.ceil(blockM / FA3_ROWS_PER_WARPGROUP);
  if (n < 2)
    return {
      pingpong: false,
      warpgroups: n,
      why: `One consumer warpgroup (block_m ${blockM}): there is no other warpgroup to take turns with.`,
    };
  const sideBySide = `the ${n} consumer warpgroups run side by side, each through its own mainloop (flash_fwd_kernel_sm90.h@0251105a), tied only by the K/V pipeline's full and empty barriers: the trace lists each phase for every warpgroup before the next phase`;
  if (!c.schedulerBarrier) {
    const where = p.dv > 256 ? 'at dv > 256' : isFp8(p.dtype) ? 'for FP8 at d < 128' : 'for 16-bit inputs at d > 128';
    return {
      pingpong: false,
      warpgroups: n,
      why: `No ping-pong: the kernel has no scheduler barrier ${where} (${BARRIER_SRC}), so ${sideBySide}.`,
    };
  }
  if (!pingpongSwitch) return { pingpong: false, warpgroups: n, why: `Ping-pong switched off: ${sideBySide}.` };
  return {
    pingpong: true,
    warpgroups: n,
    why: `Ping-pong: a scheduler barrier hands the tensor cores to the ${n} consumer warpgroups in turn (${BARRIER_SRC}), so one warpgroup's softmax runs under the next one's GEMMs; the trace goes round-robin.`,
  };
}

type Gen = Generator<TraceEvent, void, void>;

function* runFa3(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures('fa3', FA3_FEATURES, opts.features);
  requireSupported('fa3', FA3_SUPPORTS, 'forward', p);
  const fp8 = isFp8(p.dtype);
  if (!fp8) {
    const given = Object.keys(opts.features ?? {}).filter((k) => k in FA3_FP8_FEATURES);
    if (given.length)
      throw new ProblemError(`features.${given[0]}`, `applies to FP8 runs only (dtype fp8e4m3 or fp8e5m2), the dtype is ${p.dtype}`);
  }
  const { blockM, blockN } = fa3.blocks(p, opts);
  // FP8: quantize (and rotate) once up front, as the caller of the kernel does; the schedule
  // then reads the quantized tensors and casts P before each P·V.
  const q8 = fp8 ? prepareFp8(p, x, f, blockM, blockN) : undefined;
  const ctx = step.makeContext(p, q8 ? q8.x : x, opts, {
    prefix: 'fa3',
    ...(q8 ? { fp8: q8, dotRound: Math.fround, outRound: roundBf16 } : {}),
  });
  step.walkBlockMask(ctx, blockM, blockN);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const tr = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  const eb = ctx.eb;
  const order = fa3WarpgroupOrder(p, blockM, f.pingpong);
  const lse = new Float64Array(blockM);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < tr; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        // One consumer unit per warpgroup: 64 rows of the tile each.
        const units: { st: step.RowState; at: step.At; cur: step.ScoreTile; next: step.ScoreTile }[] = [];
        for (let w0 = r0, w = 0; w0 < r1; w0 += FA3_ROWS_PER_WARPGROUP, w++) {
          const rows = Math.min(r1, w0 + FA3_ROWS_PER_WARPGROUP) - w0;
          const at: step.At = { b, h, outer: i, inner: -1, qBlock: i, warpgroup: w };
          units.push({
            st: new step.RowState(hk, w0, rows, p.dv),
            at,
            cur: new step.ScoreTile(rows, blockN),
            next: new step.ScoreTile(rows, blockN),
          });
        }
        const cta: step.At = { b, h, outer: i, inner: -1, qBlock: i };
        // K/V blocks this tile needs; with reverseKv last first (n_block_max − 1 down to n_block_min).
        const blocks = yield* step.visitedKv(ctx, cta, [i], 0, tc);
        if (f.reverseKv) blocks.reverse();
        const rowsAll: [number, number] = [r0, r1];
        const colsOf = (j: number): [number, number] => [j * blockN, Math.min(p.nk, (j + 1) * blockN)];
        const K = 0;
        const V = 1;
        const prod = new Producer([FA3_STAGES, FA3_STAGES]);
        const quant = (scale: number, saturated: number) => (q8 ? () => ({ scale, saturated }) : undefined);
        prod.push('Q', -1, () =>
          step.load(
            ctx,
            cta,
            'loadQ',
            rowsAll,
            [0, 0],
            -1,
            { Q: (r1 - r0) * p.d * eb },
            q8 && quant(q8.qScale(b, h, r0), q8.qSaturated(b, h, r0)),
          ),
        );
        const pushK = (j: number) =>
          prod.push(`K${j}`, K, () =>
            step.load(
              ctx,
              { ...cta, inner: j },
              'loadK',
              rowsAll,
              colsOf(j),
              j,
              { K: (colsOf(j)[1] - colsOf(j)[0]) * p.d * eb },
              q8 && quant(q8.kScale(b, hk, j * blockN), q8.kSaturated(b, hk, j * blockN)),
            ),
          );
        const pushV = (j: number) =>
          prod.push(`V${j}`, V, () =>
            step.load(
              ctx,
              { ...cta, inner: j },
              'loadV',
              rowsAll,
              colsOf(j),
              j,
              { V: (colsOf(j)[1] - colsOf(j)[0]) * p.dv * eb },
              q8 && quant(q8.vScale(b, hk, j * blockN), q8.vSaturated(b, hk, j * blockN)),
            ),
          );
        // The producer's program order: with overlap the consumer needs K_j before V_{j−1}.
        if (f.intraOverlap) {
          if (blocks.length) pushK(blocks[0]);
          for (let n = 1; n < blocks.length; n++) {
            pushK(blocks[n]);
            pushV(blocks[n - 1]);
          }
          if (blocks.length) pushV(blocks[blocks.length - 1]);
        } else {
          for (const j of blocks) {
            pushK(j);
            pushV(j);
          }
        }

        // Each consumer unit's work as alternating phases: G(n) tensor-core GEMMs, S(n) softmax.
        // G(0) = qk(b0); S(n) = mask, rowmax, exp, rowsum, rescale; G(n) for n ≥ 1 holds
        // pv(b_{n−1}) and qk(b_n) — in the overlap order qk first; G(last) = pv(b_last).
        const nb = blocks.length;
        const gemm = function* (u: (typeof units)[number], n: number): Gen {
          const at = (j: number): step.At => ({ ...u.at, inner: j });
          const doQk = function* (): Gen {
            const j = blocks[n];
            yield* prod.wait(`K${j}`);
            const [c0, c1] = colsOf(j);
            yield* step.qk(ctx, at(j), u.st, u.next, j, c0, c1 - c0);
          };
          const doPv = function* (): Gen {
            const j = blocks[n - 1];
            yield* prod.wait(`V${j}`);
            yield* step.pv(ctx, at(j), u.st, u.cur);
          };
          if (n === 0) yield* doQk();
          else if (n === nb) yield* doPv();
          else if (f.intraOverlap) {
            yield* doQk();
            yield* doPv();
          } else {
            yield* doPv();
            yield* doQk();
          }
        };
        const softmax = function* (u: (typeof units)[number], n: number): Gen {
          const j = blocks[n];
          const at: step.At = { ...u.at, inner: j };
          // The freshly computed S becomes the current tile; the old P was consumed by pv above.
          const t = u.next;
          u.next = u.cur;
          u.cur = t;
          yield* step.mask(ctx, at, u.st, t);
          yield* step.rowmax(ctx, at, u.st, t);
          yield* step.exp(ctx, at, u.st, t);
          yield* step.rowsum(ctx, at, u.st, t);
          yield* step.rescale(ctx, at, u.st, t);
        };
        // Stages are released once every unit is done with them.
        const releases = (n: number, last: boolean) => {
          // After G(n) of the last unit: K of block n was read (n < nb); V of block n−1 (n ≥ 1).
          if (!last) return;
          if (n < nb) prod.release(K);
          if (n >= 1) prod.release(V);
        };

        yield* prod.wait('Q');
        if (nb > 0) {
          const nu = units.length;
          // G(0) of every unit; then per n, ping-pong: S_w(n) followed by G_w(n+1), so the next
          // warpgroup's GEMMs overlap this softmax; side by side: S(n) of every unit, then G(n+1) of every unit.
          for (let w = 0; w < nu; w++) {
            yield* gemm(units[w], 0);
            releases(0, w === nu - 1);
            yield* prod.pump();
          }
          for (let n = 0; n < nb; n++) {
            if (!order.pingpong) for (const u of units) yield* softmax(u, n);
            for (let w = 0; w < nu; w++) {
              if (order.pingpong) yield* softmax(units[w], n);
              yield* gemm(units[w], n + 1);
              releases(n + 1, w === nu - 1);
              yield* prod.pump();
            }
          }
        }
        for (const u of units) {
          yield* step.normalize(ctx, u.at, u.st, lse);
          step.storeRows(ctx, u.at, u.st, lse, o, lseOut);
        }
        yield* step.write(ctx, cta, 'write', rowsAll, { O: (r1 - r0) * p.dv * (fp8 ? 2 : eb), LSE: (r1 - r0) * 4 });
      }
    }
  }
  const result: AlgorithmResult = { o, lse: lseOut, counters: ctx.tr.counters, blocks: { blockM, blockN }, schedule: order.why };
  if (q8) result.stats = { flushedP: ctx.tally.flushedP, castP: ctx.tally.castP, saturated: q8.saturated };
  return result;
}

export const fa3: StepAlgorithm = {
  id: 'fa3',
  name: 'FlashAttention-3 (Hopper, SM90)',
  blocks: (p, o) => resolveBlocks(p, o, fa3DefaultTile(p)),
  run: runFa3,
};
