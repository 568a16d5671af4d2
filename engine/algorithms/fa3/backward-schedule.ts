// The FlashAttention-3 backward on SM90, as Dao-AILab/flash-attention's hopper/ code builds
// it (flash_bwd_kernel_sm90.h, mainloop_bwd_sm90_tma_gmma_ws.hpp, flash_bwd_launch_template.h).
// One CTA owns column block n of K and V (block_n keys) of one (batch, query head):
//   - producer warpgroup, setmaxnreg down to 24 registers (32 with three consumers):
//       warp 0 issues the TMA loads: K_n and V_n once, then for each row block m the pair
//         Q_m + LSE_m through a 2-stage ring and dO_m + D_m through a 1- or 2-stage ring;
//       warp 1 is the dQ writer: when a consumer has put its fp32 dQ partial in SMEM it
//         issues a TMA bulk reduce-add into the dQaccum buffer in HBM (the add itself
//         resolves in L2), waits for it, and hands the SMEM slot back;
//   - two (three at d = 192) consumer warpgroups, 240 (160) registers, each a slice of the
//     block_n keys: S = Q·Kᵀ and dP = dO·Vᵀ with wgmma, P = exp2(S·scale − LSE) on the
//     MUFU, dS = P ∘ (dP − D), dV += Pᵀ·dO and dK += dSᵀ·Q with P and dS taken from
//     registers (both stay on chip for the whole loop), dQ_m = dS·K from the dS tile in
//     SMEM, then dQ_m into the SMEM slot for the writer.
// After the loop dK (scaled) and dV are staged over sK/sV and stored with TMA; with GQA they
// are reduce-added in fp32 instead and converted by a later kernel. A preprocessing kernel
// (D = rowsum(dO ∘ O), dQaccum zeroed) runs before, the dQaccum → dQ conversion after.
// Deterministic mode (--deterministic): a semaphore per dQ row block makes the column blocks
// add in a fixed order; the waits are between CTAs, so the one-SM model cannot see them and
// crossCtaUs adds their cost to the kernel time (see CALIBRATION.md).
// Simplified: the Q/dO TMA multicast across a cluster (cluster size 1 in the shipped
// configurations), the LPT tile scheduler of causal deterministic runs, softcap and local
// windows are not modelled.

import { dispatchInputOf } from '../../hw/dispatch-input.ts';
import type { ResourceSheet, SchedulePhase } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import { aroundKernelsUs, backwardFlops, backwardGrid, backwardHbmBytes, tileCrossesDiagonal } from '../../hw/backward.ts';
import {
  ceilDiv,
  elemBytes,
  emptySheet,
  phase,
  finishSheet,
  kvBlocksOf,
  layoutSmem,
  mmaCycles,
  prefix,
  requireHalf,
  tensorRate,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
} from '../../hw/model.ts';
import type { Kernel, MemSpec } from '../../hw/scheduler.ts';
import { FA3_BACKWARD_FEATURES } from './backward.ts';
import { CONSUMER_OVERHEAD, WGMMA_LATENCY } from './schedule.ts';
import { fa3BwdDispatch, type Fa3BwdDispatch } from './dispatch.ts';

/**
 * Calibration (FA3 paper, backward at d = 128, N = 8K–16K on H100 SXM5, ~560 TFLOP/s):
 * the share of the wgmma rate the backward's five GEMMs reach. Lower than the forward's
 * 0.74: three of the five read both operands from SMEM and the M = 64/80 tiles are
 * narrower than the forward's 128 rows.
 */
export const WGMMA_BWD_EFFICIENCY = 0.6;
/** FMA-pipe operations per S element besides the exp: S·scale − LSE (1), dS = P·(dP − D) (2), two 16-bit conversions packed in pairs (1). */
export const BWD_ELEMENT_OPS = 4;
/**
 * Model assumption: one hand-off of a dQ row block's semaphore between two CTAs in
 * deterministic mode (the reduce-add becoming visible in L2, the next CTA's spin on the
 * flag seeing it), microseconds.
 */
export const DQ_SEMAPHORE_HANDOFF_US = 1.2;

export interface Fa3BwdConfig {
  blockM: number;
  blockN: number;
  /** Consumer warpgroups. */
  mmaWgs: number;
  stagesQ: number;
  stagesDo: number;
  stagesDs: number;
  /** dV and dK GEMMs take P and dS from registers (Mma_dKV_is_RS); otherwise P is staged in SMEM too. */
  dkvFromRegs: boolean;
  /** dQ partials go through SMEM and a TMA reduce-add (hdim < 256); at 256 the consumers add from registers. */
  dqViaTma: boolean;
  producerRegs: number;
  consumerRegs: number;
}

/** mha_bwd's decisions for this problem (./dispatch.ts). */
export function fa3BwdDispatchOf(shape: ProblemShape, deterministic: boolean): Fa3BwdDispatch {
  return fa3BwdDispatch(dispatchInputOf(shape), deterministic);
}

/** The launch template's choice per head dim (SM90 rows of flash_bwd_launch_template.h). */
export function fa3BwdConfig(shape: ProblemShape): Fa3BwdConfig {
  const d = Math.max(shape.d, shape.dv);
  const { blockM } = fa3BwdDispatchOf(shape, false);
  const base = { stagesQ: 2, producerRegs: 24, consumerRegs: 240, dqViaTma: true };
  if (d <= 64) return { ...base, blockM, blockN: 128, mmaWgs: 2, stagesDo: 2, stagesDs: 2, dkvFromRegs: true };
  if (d <= 96) return { ...base, blockM: 64, blockN: 128, mmaWgs: 2, stagesDo: 2, stagesDs: 2, dkvFromRegs: true };
  if (d <= 128) return { ...base, blockM, blockN: 128, mmaWgs: 2, stagesDo: 2, stagesDs: 2, dkvFromRegs: true };
  if (d <= 192)
    return {
      ...base,
      blockM: 64,
      blockN: 96,
      mmaWgs: 3,
      stagesDo: 1,
      stagesDs: 1,
      dkvFromRegs: false,
      producerRegs: 32,
      consumerRegs: 160,
    };
  return { ...base, blockM: 64, blockN: 80, mmaWgs: 2, stagesDo: 1, stagesDs: 1, dkvFromRegs: false, dqViaTma: false };
}

function resources(gpu: GpuSpec, shape: ProblemShape, deterministic = false): ResourceSheet {
  const c = fa3BwdConfig(shape);
  const e = elemBytes(shape.dtype);
  const sheet = emptySheet('fa3', gpu, c.blockM, c.blockN);
  sheet.q_stage = c.stagesQ;
  sheet.kv_stage = 1;
  const align = Math.max(shape.d, shape.dv) > 192 ? 256 : 128;
  const stat = Math.ceil(c.blockM / 64) * 64 * 4;
  const items = [
    { name: 'mbarriers', stages: 1, bytes: 8 * (1 + 2 * c.stagesQ + 2 * c.stagesDo), align: 8 },
    { name: 'sK', stages: 1, bytes: c.blockN * shape.d * e, align },
    { name: 'sV', stages: 1, bytes: c.blockN * shape.dv * e, align },
    ...(c.dqViaTma ? [{ name: 'sdQaccum', stages: c.mmaWgs, bytes: (c.blockM * shape.d * 4) / c.mmaWgs, align: 128 }] : []),
    { name: 'sQ', stages: c.stagesQ, bytes: c.blockM * shape.d * e, align },
    { name: 'sdO', stages: c.stagesDo, bytes: c.blockM * shape.dv * e, align },
    { name: 'sLSE', stages: c.stagesQ, bytes: stat, align: 128 },
    { name: 'sD', stages: c.stagesDo, bytes: stat, align: 128 },
    ...(c.dkvFromRegs ? [] : [{ name: 'sP', stages: c.stagesDs, bytes: c.blockM * c.blockN * e, align: 1024 }]),
    { name: 'sdS', stages: c.stagesDs, bytes: c.blockM * c.blockN * e, align: 1024 },
  ];
  layoutSmem(sheet, items);
  sheet.notes.push('dK and dV are staged over sK/sV for their TMA store: K and V are dead once the last row block is done.');
  if (!c.dqViaTma)
    sheet.notes.push(
      'd = 256: no sdQaccum; the consumers add their dQ partials into dQaccum from registers (atomicAdd), half a tile at a time.',
    );
  if (shape.hk !== shape.hq)
    sheet.notes.push(
      'GQA/MQA: dK and dV are reduce-added in fp32 into dKaccum/dVaccum (the query heads of a group share them) and converted by a later kernel.',
    );
  sheet.roles.push({ name: 'producer', warps: [0, 2, 3], registers: c.producerRegs });
  sheet.roles.push({ name: 'dq_writer', warps: [1], registers: c.producerRegs });
  for (let w = 0; w < c.mmaWgs; w++)
    sheet.roles.push({ name: `consumer${w}`, warps: [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w], registers: c.consumerRegs });
  requireHalf(sheet, shape, 'the FA3 backward');
  if (gpu.sm !== 90)
    sheet.does_not_fit.push(`arch: the FA3 backward is written for SM90 (wgmma, TMA, setmaxnreg); ${gpu.name} is SM${gpu.sm}`);
  if (Math.max(shape.d, shape.dv) > 256)
    sheet.does_not_fit.push(`head dim: the FA3 backward has tiles up to d = 256, got ${Math.max(shape.d, shape.dv)}`);
  const dp = fa3BwdDispatchOf(shape, deterministic);
  sheet.upstream = {
    config: {
      hdim: dp.hdim,
      mask: dp.isCausal ? 'causal' : dp.isLocal ? 'local' : 'none',
      block_m: dp.blockM,
      block_n: dp.blockN,
      deterministic,
    },
    why: dp.why,
  };
  if (dp.refused) sheet.does_not_fit.unshift(`upstream refuses: ${dp.refused}`);
  return finishSheet(sheet, gpu);
}

function build(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, shape } = ctx;
  const c = fa3BwdConfig(shape);
  const { blockM: M, blockN: N, mmaWgs: W } = c;
  const e = elemBytes(shape.dtype);
  const p = prefix(ctx);
  const sheet = resources(gpu, shape);
  const off = (name: string, stage: number) => sheet.smem.buffers.find((b) => b.name === name && b.stage === stage)!.offset;
  const rows = kvBlocksOf(work);
  const n = rows.length;
  const col = work.qBlock;
  const gqa = shape.hk !== shape.hq;
  k.fifoUnits.add('tensor');
  for (const b of sheet.smem.buffers)
    if (b.name !== 'mbarriers') k.alloc({ space: 'smem', buffer: `${p}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });

  const rate = tensorRate(gpu, shape.dtype) * WGMMA_BWD_EFFICIENCY;
  const nw = N / W;
  const gemmS = mmaCycles(M, nw, shape.d, rate);
  const gemmDp = mmaCycles(M, nw, shape.dv, rate);
  const gemmDv = mmaCycles(nw, shape.dv, M, rate);
  const gemmDq = mmaCycles(M, shape.d / W, N, rate);
  const gemmDk = mmaCycles(nw, shape.d, M, rate);
  const elems = M * nw;
  const copy = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const smemCycles = (bytes: number) => bytes / gpu.smemBytesPerClk;
  const stat = Math.ceil(M / 64) * 64 * 4;
  const tile = (buf: string, stage: number, bytes: number, name: string, action: 'fill' | 'release' = 'fill', at = 0): MemSpec => ({
    space: 'smem',
    buffer: `${p}${buf}`,
    stage,
    offset: off(buf, stage) + at,
    bytes,
    action,
    tile: name,
  });
  const regs = (w: number, buffer: string, name: string, bytes: number): MemSpec => ({
    space: 'regs',
    buffer: `${p}${buffer}`,
    stage: w,
    offset: 0,
    bytes,
    action: 'fill',
    tile: name,
  });
  const rowOf = (i: number) => rows[i];

  // Barriers: the Q/LSE ring, the dO/D ring, K/V once; named barriers of the consumers and of each consumer with the dQ writer.
  const fullKV = k.mbarrier(`${p}full_KV`);
  const fullQ: number[] = [];
  const emptyQ: number[] = [];
  for (let s = 0; s < c.stagesQ; s++) {
    fullQ.push(k.mbarrier(`${p}full_Q[${s}]`));
    emptyQ.push(
      k.mbarrier(`${p}empty_Q[${s}]`, W, (ph) => {
        const m = rows[s + ph * c.stagesQ];
        return m === undefined ? null : [tile('sQ', s, M * shape.d * e, `Q${m}`, 'release'), tile('sLSE', s, stat, `LSE${m}`, 'release')];
      }),
    );
  }
  const fullDo: number[] = [];
  const emptyDo: number[] = [];
  for (let s = 0; s < c.stagesDo; s++) {
    fullDo.push(k.mbarrier(`${p}full_dO[${s}]`));
    emptyDo.push(
      k.mbarrier(`${p}empty_dO[${s}]`, W, (ph) => {
        const m = rows[s + ph * c.stagesDo];
        return m === undefined ? null : [tile('sdO', s, M * shape.dv * e, `dO${m}`, 'release'), tile('sD', s, stat, `D${m}`, 'release')];
      }),
    );
  }
  const pds = k.named(`${p}PdS`, W);
  const epi = k.named(`${p}epilogue`, W);
  const dqEmpty: number[] = [];
  const dqFull: number[] = [];
  for (let w = 0; w < W; w++) {
    dqEmpty.push(k.named(`${p}dQEmpty_WG${w + 1}`, 2));
    dqFull.push(k.named(`${p}dQFull_WG${w + 1}`, 2));
  }

  // Producer warp 0: Q_m + LSE_m, K/V once, then dO_m + D_m and the next Q + LSE.
  const prod = k.role({
    name: `${p}producer`,
    warps: [0],
    registers: c.producerRegs,
    job: `warp 0 of the producer warpgroup: TMA loads of K${col}, V${col} once and of Q, LSE, dO, D per row block (warps 2-3 idle)`,
  });
  const loadQ = (i: number) => {
    const s = i % c.stagesQ;
    const m = rowOf(i);
    prod.wait(emptyQ[s], Math.floor(i / c.stagesQ) - 1);
    prod.issue('tma', copy(M * shape.d * e + M * 4), `tma Q${m}+LSE${m}`, `Q${m}`, {
      phase: phase(['load'], m, null, ['Q', 'LSE']),
      latency: gpu.copyLatencyCycles,
      arrive: [fullQ[s]],
      mem: [tile('sQ', s, M * shape.d * e, `Q${m}`), tile('sLSE', s, stat, `LSE${m}`)],
    });
  };
  if (n > 0) {
    loadQ(0);
    prod.issue('tma', copy(N * (shape.d + shape.dv) * e), `tma K${col}+V${col}`, `K${col}`, {
      phase: phase(['load'], null, null, ['K', 'V']),
      latency: gpu.copyLatencyCycles,
      arrive: [fullKV],
      mem: [tile('sK', 0, N * shape.d * e, `K${col}`), tile('sV', 0, N * shape.dv * e, `V${col}`)],
    });
    for (let i = 0; i < n; i++) {
      const s = i % c.stagesDo;
      const m = rowOf(i);
      prod.wait(emptyDo[s], Math.floor(i / c.stagesDo) - 1);
      prod.issue('tma', copy(M * shape.dv * e + M * 4), `tma dO${m}+D${m}`, `dO${m}`, {
        phase: phase(['load'], m, null, ['dO', 'D']),
        latency: gpu.copyLatencyCycles,
        arrive: [fullDo[s]],
        mem: [tile('sdO', s, M * shape.dv * e, `dO${m}`), tile('sD', s, stat, `D${m}`)],
      });
      if (i + 1 < n) loadQ(i + 1);
    }
  }

  // Producer warp 1: the dQ writer (TMA reduce-add of each consumer's slice into dQaccum).
  const dqSlice = (M * shape.d * 4) / W;
  const dqRowBytes = shape.d * 4;
  const dqHbm = (m: number, w: number): MemSpec => {
    const base = (work.b * shape.hq + work.h) * ceilDiv(shape.nq, M) * M * dqRowBytes;
    return {
      space: 'hbm',
      buffer: 'dQaccum',
      stage: 0,
      offset: base + m * M * dqRowBytes + w * dqSlice,
      bytes: dqSlice,
      action: 'fill',
      tile: `dQ${m}.${w}`,
    };
  };
  if (c.dqViaTma) {
    const writer = k.role({
      name: `${p}dq_writer`,
      warps: [1],
      registers: c.producerRegs,
      job: "warp 1 of the producer warpgroup: TMA reduce-add of each consumer's dQ partial from SMEM into dQaccum (fp32, HBM/L2)",
    });
    const red = k.counter(`${p}dQ_reduce`);
    let issued = 0;
    for (let w = 0; w < W; w++) writer.arrive(dqEmpty[w]);
    for (let i = 0; i < n; i++) {
      const m = rowOf(i);
      const mine: number[] = [];
      for (let w = 0; w < W; w++) {
        writer.sync(dqFull[w]);
        writer.issue('tma', copy(dqSlice), `tma reduce-add dQ${m}.${w}`, `dQ${m}`, {
          phase: phase(['dq'], m),
          latency: gpu.copyLatencyCycles,
          arrive: [red],
          memDone: [dqHbm(m, w)],
        });
        mine.push(issued++);
      }
      for (let w = 0; w < W; w++) {
        writer.wait(red, mine[w]);
        writer.mem(tile('sdQaccum', w, dqSlice, `dQ${m}.${w}`, 'release'));
        writer.arrive(dqEmpty[w]);
      }
    }
  }

  // Consumers.
  for (let w = 0; w < W; w++) {
    const cons = k.role({
      name: `${p}consumer${w}`,
      warps: [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w],
      registers: c.consumerRegs,
      job: `keys ${col * N + w * nw}-${col * N + (w + 1) * nw - 1}: S, dP, dS for its slice of every row block, dV and dK in registers, its half of dQ`,
    });
    const done = k.counter(`${p}wgmma_WG${w + 1}`);
    let issued = 0;
    const gemm = (cycles: number, kdim: number, op: string, t: string, ph: SchedulePhase, out?: MemSpec) => {
      cons.issue('tensor', cycles, op, t, {
        phase: ph,
        latency: WGMMA_LATENCY,
        chunks: kdim / 16,
        arrive: [done],
        memDone: out ? [out] : undefined,
      });
      return issued++;
    };
    if (n > 0) cons.wait(fullKV, 0);
    for (let i = 0; i < n; i++) {
      const m = rowOf(i);
      const sq = i % c.stagesQ;
      const sdo = i % c.stagesDo;
      const sds = i % c.stagesDs;
      cons.wait(fullQ[sq], Math.floor(i / c.stagesQ));
      const gS = gemm(gemmS, shape.d, `gemm S=Q${m}·K${col}ᵀ`, `S${m}`, phase(['qk'], m, w), regs(w, 'regs.S', `S${m}`, elems * 4));
      cons.wait(fullDo[sdo], Math.floor(i / c.stagesDo));
      const gDp = gemm(gemmDp, shape.dv, `gemm dP=dO${m}·V${col}ᵀ`, `dP${m}`, phase(['dp'], m, w), regs(w, 'regs.dP', `dP${m}`, elems * 4));
      cons.wait(done, gS);
      if (tileCrossesDiagonal(shape, m, col, M, N))
        cons.exec('fma', (elems * 2) / gpu.fmaPerClk, 'causal mask', `S${m}`, { phase: phase(['mask'], m, w) });
      cons.exec('fma', elems / gpu.fmaPerClk + CONSUMER_OVERHEAD, 'S·scale − LSE', `S${m}`, { phase: phase(['recompute'], m, w) });
      cons.exec('mufu', elems / gpu.mufuPerClk, 'exp2 → P', `P${m}`, {
        phase: phase(['recompute'], m, w),
        memDone: [regs(w, 'regs.P', `P${m}`, elems * e)],
      });
      cons.wait(done, gDp);
      cons.exec('fma', (elems * (BWD_ELEMENT_OPS - 1)) / gpu.fmaPerClk, 'dS=P∘(dP−D), cvt', `dS${m}`, {
        phase: phase(['ds'], m, w),
        memDone: [regs(w, 'regs.dS', `dS${m}`, elems * e)],
      });
      const half = elems * e;
      if (!c.dkvFromRegs) {
        if (c.stagesDs === 1) cons.sync(pds);
        cons.exec('smem', smemCycles(half), `st.shared P${m}`, `P${m}`, {
          phase: phase(['recompute'], m, w),
          memDone: [tile('sP', sds, half, `P${m}.${w}`, 'fill', w * half)],
        });
        cons.sync(pds);
      }
      cons.exec('smem', smemCycles(half), `st.shared dS${m}`, `dS${m}`, {
        phase: phase(['ds'], m, w),
        memDone: [tile('sdS', sds, half, `dS${m}.${w}`, 'fill', w * half)],
      });
      const gDv = gemm(gemmDv, M, `gemm dV+=P${m}ᵀ·dO${m}`, `dV${col}`, phase(['dv'], m, w));
      cons.sync(pds);
      const gDq = gemm(
        gemmDq,
        N,
        `gemm dQ${m}=dS${m}·K${col}`,
        `dQ${m}`,
        phase(['dq'], m, w),
        regs(w, 'regs.dQ', `dQ${m}`, (M * shape.d * 4) / W),
      );
      cons.wait(done, gDv);
      if (!c.dkvFromRegs) cons.mem(tile('sP', sds, half, `P${m}.${w}`, 'release', w * half));
      cons.arrive(emptyDo[sdo]);
      const gDk = gemm(gemmDk, M, `gemm dK+=dS${m}ᵀ·Q${m}`, `dK${col}`, phase(['dk'], m, w));
      cons.wait(done, gDq);
      if (c.dqViaTma) {
        cons.sync(dqEmpty[w]);
        cons.exec('smem', smemCycles(dqSlice), `st.shared dQ${m}`, `dQ${m}`, {
          phase: phase(['dq'], m, w),
          memDone: [tile('sdQaccum', w, dqSlice, `dQ${m}.${w}`)],
        });
        cons.arrive(dqFull[w]);
      } else {
        // d = 256: red.global.add.f32 straight from registers.
        cons.issue('store', copy(dqSlice), `atomicAdd dQ${m}`, `dQ${m}`, {
          phase: phase(['dq'], m, w),
          latency: gpu.copyLatencyCycles,
          memDone: [dqHbm(m, w)],
        });
      }
      cons.wait(done, gDk);
      cons.mem(tile('sdS', sds, half, `dS${m}.${w}`, 'release', w * half));
      cons.arrive(emptyQ[sq]);
    }
    // Epilogue: dK·scale and both to 16 bits, staged over sK/sV once every consumer is done with K and V.
    const kvRows = nw;
    cons.exec('fma', (kvRows * (shape.d + shape.dv) * 1.5) / gpu.fmaPerClk, `dK${col}·scale, cvt dK dV`, `dK${col}`, {
      phase: phase(['write'], null, w, ['dK', 'dV']),
    });
    cons.sync(epi);
    if (w === 0 && n > 0) {
      cons.mem(tile('sK', 0, N * shape.d * e, `K${col}`, 'release'));
      cons.mem(tile('sV', 0, N * shape.dv * e, `V${col}`, 'release'));
    }
    const outE = gqa ? 4 : e;
    const bytes = kvRows * (shape.d + shape.dv) * outE;
    const kvHead = gqa ? Math.floor(work.h / (shape.hq / shape.hk)) : work.h;
    const hbmRow = (work.b * shape.hk + kvHead) * shape.nk + col * N + w * kvRows;
    if (!gqa) {
      cons.exec('smem', smemCycles(bytes), `st.shared dK${col} dV${col}`, `dK${col}`, {
        phase: phase(['write'], null, w, ['dK', 'dV']),
        memDone: [
          tile('sK', 0, kvRows * shape.d * e, `dK${col}.${w}`, 'fill', w * kvRows * shape.d * e),
          tile('sV', 0, kvRows * shape.dv * e, `dV${col}.${w}`, 'fill', w * kvRows * shape.dv * e),
        ],
      });
    }
    cons.issue('tma', copy(bytes), gqa ? `tma reduce-add dK${col} dV${col} (fp32)` : `tma store dK${col} dV${col}`, `dK${col}`, {
      phase: phase(['write'], null, w, ['dK', 'dV']),
      latency: gpu.copyLatencyCycles,
      memDone: [
        {
          space: 'hbm',
          buffer: gqa ? 'dKaccum' : 'dK',
          stage: 0,
          offset: hbmRow * shape.d * outE,
          bytes: kvRows * shape.d * outE,
          action: 'fill',
          tile: `dK${col}.${w}`,
        },
        {
          space: 'hbm',
          buffer: gqa ? 'dVaccum' : 'dV',
          stage: 0,
          offset: hbmRow * shape.dv * outE,
          bytes: kvRows * shape.dv * outE,
          action: 'fill',
          tile: `dV${col}.${w}`,
        },
      ],
    });
  }
}

/** Deterministic mode: the column blocks of a head add into each dQ row block one after another; each wave of CTAs pays the hand-off chain once. */
function crossCtaUs(_gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, waves: number): number {
  if (!f.deterministic) return 0;
  const tc = ceilDiv(shape.nk, fa3BwdConfig(shape).blockN);
  return Math.max(1, waves) * (tc - 1) * DQ_SEMAPHORE_HANDOFF_US;
}

export const fa3BwdHw: HwAlgorithm = {
  id: 'fa3',
  name: 'FlashAttention-3 backward (SM90: TMA producer, dQ writer warp, wgmma consumers)',
  arch: [90],
  switches: { deterministic: FA3_BACKWARD_FEATURES.deterministic },
  // Each consumer warpgroup takes an equal slice of the CTA's keys.
  geometry: (sheet, shape) => ({ ctaRows: sheet.tiles.block_n, subRows: sheet.tiles.block_n / fa3BwdConfig(shape).mmaWgs }),
  resources: (gpu, shape, f) => resources(gpu, shape, f.deterministic === true),
  grid: (_gpu, shape) => {
    const c = fa3BwdConfig(shape);
    return backwardGrid(shape, c.blockM, c.blockN);
  },
  build,
  epilogueKernelUs: (gpu, shape) => aroundKernelsUs(gpu, shape),
  flops: backwardFlops,
  crossCtaUs,
  hbmBytes: backwardHbmBytes,
};
