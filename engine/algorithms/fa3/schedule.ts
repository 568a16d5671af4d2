// FlashAttention-3 forward on SM90 ("FlashAttention-3: Fast and Accurate Attention with
// Asynchrony and Low-precision", arXiv 2407.08608, §3.1-3.2), configured as the shipped kernel
// is (hopper/ at 0251105a, through fa3Config in engine/algorithms/fa3/tiles.ts). One CTA owns a
// block_m-row Q tile:
//   - a producer warpgroup (setmaxnreg down to 24, or 32 with three consumers) whose first
//     warp issues the TMA loads: Q once, then K_j and V_j into a 2-stage ring;
//   - block_m / 64 consumer warpgroups (240 registers each for two, 160 for three), 64 Q rows
//     apiece: S = Q·K_jᵀ (wgmma SS), the online softmax in registers, O += P·V_j (wgmma RS,
//     or SS with P written to shared memory first where tile_size.h says MmaPV_is_RS = false).
// Ping-pong (UseSchedulerBarrier): named barriers hand the tensor cores round-robin from one
// consumer to the next; the kernel has it for 16-bit inputs at d ≤ 128 and FP8 at d ≥ 128.
// Intra-warpgroup overlap: the next S GEMM is issued before the current P·V GEMM; O is rescaled
// after the P·V wait (before the GEMM is issued at d > 128, RescaleOBeforeGemm).
// The O tile is staged in shared memory over sV (the epilogue's storage is unioned with it).
// K/V blocks are visited from the last to the first, as the kernel does.

import type { ResourceSheet } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  SOFTMAX_FMA_OPS,
  ceilDiv,
  elemBytes,
  emptySheet,
  finishSheet,
  layoutSmem,
  mmaCycles,
  prefix,
  tensorRate,
  kvBlockRange,
  partialBytes,
  splitCombineUs,
  packShape,
  sequencesOf,
  kvBlocksOf,
  ioBytes,
  hbmOut,
  requireHalf,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
  phase,
  STAGES_SWITCH,
} from '../../hw/model.ts';
import { maskedKvBlocks, sparseKvBlocks } from '../../hw/mask-blocks.ts';
import { FA3_FEATURES } from './forward.ts';
import type { Kernel } from '../../hw/scheduler.ts';
import { maskLabel, maskedKvSteps, type KernelMask } from '../../hw/mask-steps.ts';
import { FA3_ROWS_PER_CONSUMER as ROWS_PER_WG, fa3Config, type Fa3Config } from './tiles.ts';
import { fa3Dispatch, type Fa3Dispatch } from './dispatch.ts';
import { dispatchInputOf } from '../../hw/dispatch-input.ts';
import { fa3CombineOf } from './combine-schedule.ts';
import { combineBarrier, combineNote, drawSplitCombine } from '../../hw/split-combine.ts';

/**
 * Calibration (FA3 paper, Table/Fig. ablation at d = 128, N = 8K on H100 SXM5 FP16):
 * wgmma delivers this fraction of the datasheet rate inside the attention loop (operand
 * fetch from swizzled SMEM, issue slots shared with softmax instructions).
 */
export const WGMMA_EFFICIENCY = 0.74;
/** Cycles from the last wgmma of a group to its results being readable (wgmma.wait_group). */
export const WGMMA_LATENCY = 120;
/** Per-iteration bookkeeping of a consumer (barrier waits, fences, index math), cycles. */
export const CONSUMER_OVERHEAD = 60;

/** mha_fwd's decisions for this problem (./dispatch.ts); `numSms` only moves num_splits and what follows it. */
export function fa3DispatchOf(shape: ProblemShape, numSms = 132): Fa3Dispatch {
  const hit = dispatchCache.get(shape)?.get(numSms);
  if (hit) return hit;
  const dp = fa3Dispatch(dispatchInputOf(shape), numSms);
  const bySms = dispatchCache.get(shape) ?? new Map<number, Fa3Dispatch>();
  bySms.set(numSms, dp);
  dispatchCache.set(shape, bySms);
  return dp;
}

// The schedule asks for the dispatch of the same shape object many times per run.
const dispatchCache = new WeakMap<ProblemShape, Map<number, Fa3Dispatch>>();

/** The shipped kernel's configuration for this shape (one table for stepper, simulator and describe). */
export function fa3Tiles(shape: ProblemShape): Fa3Config {
  const hit = tilesCache.get(shape);
  if (hit) return hit;
  const out = tilesOf(shape);
  tilesCache.set(shape, out);
  return out;
}
const tilesCache = new WeakMap<ProblemShape, Fa3Config>();

function tilesOf(shape: ProblemShape): Fa3Config {
  const dp = fa3DispatchOf(shape);
  return fa3Config({
    d: shape.d,
    dv: shape.dv,
    dtype: shape.dtype,
    causal: dp.isCausal,
    local: dp.isLocal,
    softcap: shape.softcap !== undefined && shape.softcap > 0,
    pagedKvNonTma: dp.pagedKvNonTma,
  });
}

/** The problem as the kernel tiles it: Q heads packed per KV head where pack_gqa is on. */
function kernelShape(shape: ProblemShape, gpu: GpuSpec): ProblemShape {
  const hit = packedCache.get(shape)?.get(gpu.smCount);
  if (hit) return hit;
  const dp = fa3DispatchOf(shape, gpu.smCount);
  const out = dp.packGqa ? packShape(shape, Math.ceil(shape.hq / shape.hk)) : shape;
  const bySms = packedCache.get(shape) ?? new Map<number, ProblemShape>();
  bySms.set(gpu.smCount, out);
  packedCache.set(shape, bySms);
  return out;
}
const packedCache = new WeakMap<ProblemShape, Map<number, ProblemShape>>();

interface Fa3Smem {
  sheet: ResourceSheet;
  oBytes: number;
}

function resources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): ResourceSheet {
  const { sheet } = smemPlan(gpu, shape, f);
  const dp = fa3DispatchOf(shape, gpu.smCount);
  sheet.upstream = {
    config: {
      instance: `${dp.instance.d}x${dp.instance.dv}`,
      mask: dp.isCausal ? 'causal' : dp.isLocal ? `local(${dp.windowLeft},${dp.windowRight})` : 'none',
      block_m: dp.blockM,
      block_n: dp.blockN,
      mma_pv: dp.mmaPvIsRs ? 'RS' : 'SS',
      intra_wg_overlap: dp.intraWgOverlap,
      stages: dp.stages,
      num_splits: dp.numSplits,
      pack_gqa: dp.packGqa,
      paged_kv_non_tma: dp.pagedKvNonTma,
      cluster: dp.cluster,
      warpgroups: dp.consumers + 1,
      registers: `${dp.producerRegisters}/${dp.consumerRegisters}`,
      tiles: dp.tiles,
      grid: dp.gridCtas,
      scheduler: dp.scheduler,
    },
    why: dp.numSplits > 1 && !dp.refused ? [...dp.why, ...fa3CombineOf(shape, dp.numSplits).why] : dp.why,
  };
  if (dp.refused) sheet.does_not_fit.unshift(`upstream refuses: ${dp.refused}`);
  if (dp.numSplits > 1) {
    sheet.notes.push(combineNote(gpu, fa3CombineOf(shape, dp.numSplits), dp.numSplits));
  }
  if (shape.mask?.maskMod !== undefined) sheet.notes.push(FA3_MASK_MOD_NOTE);
  if (dp.cluster === 2)
    sheet.notes.push(
      'Thread-block cluster of 2 along M (ClusterM = 2): each CTA of the pair loads half of every K/V block by TMA and multicasts it into both CTAs’ shared memory; the timeline shows this CTA’s half.',
    );
  if (sheet.does_not_fit.length > 0) sheet.ctas_per_sm = 0;
  return sheet;
}

function smemPlan(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): Fa3Smem {
  const c = fa3Tiles(shape);
  const { blockM, blockN } = c;
  const stages = f.stages ?? c.stages;
  const e = elemBytes(shape.dtype);
  const fp8 = c.transposeV;
  const sheet = emptySheet('fa3', gpu, blockM, blockN);
  sheet.kv_stage = stages;
  // The epilogue's sO is unioned with the mainloop's sV, lined up with its start; the mainloop
  // is padded when O is larger (flash_fwd_kernel_sm90.h@0251105a l. 90-103). FP8 writes O as bf16.
  const oBytes = blockM * shape.dv * (fp8 ? 2 : e);
  const vRing = stages * blockN * shape.dv * e;
  const pad = Math.max(0, oBytes - vRing);
  sheet.smem.buffers.push({ name: 'sO', stage: 0, offset: 0, bytes: oBytes });
  sheet.smem.used_bytes = pad;
  // Struct order of the mainloop's TensorStorage: sV, (sVt), sQ, sK, (sP), then the barriers.
  const items: { name: string; stages: number; bytes: number; align: number }[] = [
    { name: 'sV', stages, bytes: blockN * shape.dv * e, align: 128 },
  ];
  if (fp8) items.push({ name: 'sVt', stages, bytes: blockN * shape.dv * e, align: 1024 });
  items.push(
    { name: 'sQ', stages: 1, bytes: blockM * shape.d * e, align: 1024 },
    { name: 'sK', stages, bytes: blockN * shape.d * e, align: 1024 },
  );
  if (!c.mmaPvIsRs) items.push({ name: 'sP', stages: 1, bytes: blockM * blockN * e, align: 1024 });
  items.push({ name: 'mbarriers', stages: 1, bytes: 8 * (1 + 4 * stages + (fp8 ? 2 * stages : 0)), align: 16 });
  layoutSmem(sheet, items);
  sheet.notes.push(
    `sO is unioned with sV (starts where sV starts${pad > 0 ? `, ${pad} bytes of padding ahead of the mainloop` : ''}): O is written once the last P·V has read V.`,
  );
  if (fp8)
    sheet.notes.push(
      'FP8: V lands by TMA in sVt and the producer warpgroup transposes it into sV (FP8 wgmma reads K-major operands only); O is written as bf16.',
    );
  if (!c.mmaPvIsRs)
    sheet.notes.push(
      `P·V reads P from shared memory (MmaPV_is_RS = false for this head dim): each consumer writes its P to sP before the GEMM.`,
    );
  if (!c.schedulerBarrier)
    sheet.notes.push('No ping-pong: the kernel has no scheduler barrier for this head dim and dtype (UseSchedulerBarrier = false).');
  if (c.rescaleOBeforeGemm) sheet.notes.push('d > 128: O is rescaled before the P·V GEMM is issued (RescaleOBeforeGemm).');
  sheet.roles.push({ name: 'producer', warps: [0, 1, 2, 3], registers: c.producerRegisters });
  for (let w = 0; w < c.consumers; w++)
    sheet.roles.push({ name: `consumer${w}`, warps: [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w], registers: c.consumerRegisters });
  requireHalf(sheet, shape, 'FA3', gpu, true);
  if (shape.d > 256 || shape.dv > 512)
    sheet.does_not_fit.push(`head dim: FA3 instantiates d up to 256 (dv up to 512 with d ≤ 64), got d = ${shape.d}, dv = ${shape.dv}`);
  if (gpu.sm !== 90) sheet.does_not_fit.push(`arch: FA3 is written for SM90 (wgmma, TMA, setmaxnreg); ${gpu.name} is SM${gpu.sm}`);
  // The warpgroups set their registers with setmaxnreg (flash_fwd_kernel_sm90.h l. 309, 361).
  finishSheet(sheet, gpu, true);
  return { sheet, oBytes };
}

/** The tiles the scheduler hands out, each with the K/V blocks it loads (block.h's n_block_min/max). */
function grid(gpu: GpuSpec, given: ProblemShape): CtaWork[] {
  const shape = kernelShape(given, gpu);
  const { blockM, blockN } = fa3Tiles(shape);
  const { numSplits: splits, attentionChunk: chunk } = fa3DispatchOf(given, gpu.smCount);
  const out: CtaWork[] = [];
  sequencesOf(shape).forEach((seq, sb) => {
    const tr = ceilDiv(seq.nq, blockM);
    for (let b = 0; b < seq.batch; b++)
      for (let h = 0; h < shape.hq; h++)
        for (let i = 0; i < tr; i++)
          for (let sp = 0; sp < splits; sp++) {
            const [kvFrom, kvTo] = kvBlockRange(seq, i * blockM, Math.min(seq.nq, (i + 1) * blockM), blockN, sp, splits, chunk);
            const kvList = maskedKvBlocks(seq, b + sb, h, i * blockM, Math.min(seq.nq, (i + 1) * blockM), blockN, kvFrom, kvTo);
            out.push({ b: b + sb, h, qBlock: i, kvFrom, kvTo, ...(kvList && { kvList }), reverse: true, split: sp });
          }
  });
  return out;
}

/** The mask the kernel is compiled with, as the dispatch resolved it. */
function kernelMaskOf(dp: ReturnType<typeof fa3DispatchOf>): KernelMask {
  return {
    causal: dp.isCausal,
    local: dp.isLocal,
    left: dp.isLocal ? dp.windowLeft : null,
    right: dp.isLocal ? dp.windowRight : null,
    chunk: dp.attentionChunk,
  };
}

/** What the memory map says of a mask_mod on FA3 (describe's why line cites hopper/flash_api.cpp's mha_fwd). */
export const FA3_MASK_MOD_NOTE =
  "FA3's kernel takes no mask_mod (hopper/flash_api.cpp mha_fwd): this mask is FlashScope's what-if. K/V blocks the mask empties are skipped and every partially masked block runs the masking step, as FA4's block-sparse kernel does.";

/**
 * The blocks mainloop_fwd_sm90_tma_gmma_ws.hpp runs with a mask (engine/hw/mask-steps.ts), over the
 * CTA's kBlockM rows; under a mask_mod (FlashScope's what-if: hopper/ takes none) every partially
 * masked block too, as FA4's block-sparse path charges them.
 */
function maskStepsOf(gpu: GpuSpec, given: ProblemShape, work: CtaWork): Set<number> {
  const shape = kernelShape(given, gpu);
  const { blockM, blockN } = fa3Tiles(shape);
  const mask = kernelMaskOf(fa3DispatchOf(given, gpu.smCount));
  const seq = sequencesOf(shape)[work.b] ?? shape;
  const steps = maskedKvSteps(seq, work.qBlock, blockM, blockN, work.kvFrom, work.kvTo, mask);
  if (work.kvList === undefined) return steps;
  const m0 = work.qBlock * blockM;
  const sparse = sparseKvBlocks(seq, work.b, work.h, m0, Math.min(seq.nq, m0 + blockM), blockN, work.kvFrom, work.kvTo);
  for (const j of sparse?.partial ?? []) steps.add(j);
  return steps;
}

function build(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, features: f } = ctx;
  const shape = kernelShape(ctx.shape, gpu);
  // Split KV writes fp32 partials of O (and LSE) that the combine kernel merges.
  const dp = fa3DispatchOf(ctx.shape, gpu.smCount);
  const { numSplits: splits, cluster } = dp;
  const c = fa3Tiles(shape);
  const { blockM, blockN, consumers: CONSUMERS } = c;
  const S = f.stages ?? c.stages;
  const e = elemBytes(shape.dtype);
  const p = prefix(ctx);
  const { sheet } = smemPlan(gpu, shape, f);
  const off = (name: string, stage: number) => sheet.smem.buffers.find((b) => b.name === name && b.stage === stage)!.offset;
  const kv = kvBlocksOf(work);
  const n = kv.length;
  const qTile = `Q${work.qBlock}`;
  k.fifoUnits.add('tensor');
  // The switches can only take away what the kernel has for this configuration.
  const pingpong = f.pingpong && c.schedulerBarrier;
  const overlap = f.intraOverlap && c.intraWgOverlap;

  const rate = tensorRate(gpu, shape.dtype) * WGMMA_EFFICIENCY;
  const gemm0Cycles = mmaCycles(ROWS_PER_WG, blockN, shape.d, rate);
  const gemm1 = mmaCycles(ROWS_PER_WG, shape.dv, blockN, rate);
  const elems = ROWS_PER_WG * blockN;
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;

  for (const b of sheet.smem.buffers)
    if (b.name !== 'mbarriers') k.alloc({ space: 'smem', buffer: `${p}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });

  // FP8 (Transpose_V): TMA lands V in sVt; the producer warpgroup transposes it into sV (the
  // buffer wgmma reads) and frees sVt itself; the consumers read and free sV.
  const fp8 = c.transposeV;
  const oE = fp8 ? 2 : e;
  const vLand = fp8 ? 'sVt' : 'sV';
  const fullQ = k.mbarrier(`${p}full_Q`);
  const fullK: number[] = [];
  const fullV: number[] = [];
  const emptyK: number[] = [];
  const emptyV: number[] = [];
  const fullVt: number[] = [];
  const emptyVt: number[] = [];
  for (let s = 0; s < S; s++) {
    fullK.push(k.mbarrier(`${p}full_K[${s}]`));
    const rel = (name: 'sK' | 'sV' | 'sVt', t: 'K' | 'V') => (ph: number) => {
      const j = kv[s + ph * S];
      return j === undefined
        ? null
        : {
            space: 'smem' as const,
            buffer: `${p}${name}`,
            stage: s,
            offset: off(name, s),
            bytes: blockN * (t === 'K' ? shape.d : shape.dv) * e,
            action: 'release' as const,
            tile: `${t}${j}`,
          };
    };
    emptyK.push(k.mbarrier(`${p}empty_K[${s}]`, CONSUMERS, rel('sK', 'K')));
    if (fp8) {
      fullVt.push(k.mbarrier(`${p}full_Vt[${s}]`));
      emptyVt.push(k.mbarrier(`${p}empty_Vt[${s}]`, 1, rel('sVt', 'V')));
    }
    fullV.push(k.mbarrier(`${p}full_V[${s}]`));
    emptyV.push(k.mbarrier(`${p}empty_V[${s}]`, CONSUMERS, rel('sV', 'V')));
  }
  const landFull = fp8 ? fullVt : fullV;
  const landEmpty = fp8 ? emptyVt : emptyV;
  const pp = Array.from({ length: CONSUMERS }, (_, w) => k.named(`${p}pingpong_WG${w + 1}`, 2));
  const epi = k.named(`${p}epilogue`, CONSUMERS);
  // Drawn split KV: the combine kernel starts once every consumer of this SM has stored its partial.
  const combineAfter = ctx.drawn && splits > 1 ? combineBarrier(k, CONSUMERS * ctx.ctaCount) : undefined;

  // ClusterM 2: each CTA of the pair loads half of every K/V block and multicasts it to both
  // (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a l. 255-267, 670-673, 741-767), so a block costs this SM half the copy.
  const mcast = cluster > 1 ? ` (½, multicast ×${cluster})` : '';
  const prod = k.role({
    name: `${p}producer`,
    warps: [0, 1, 2, 3],
    registers: c.producerRegisters,
    job: fp8
      ? 'warp 0 issues TMA loads of Q and the K/V ring; the warpgroup transposes each V block'
      : 'warp 0 issues TMA loads of Q and the K/V ring; warps 1-3 idle',
  });
  prod.issue('tma', load(blockM * shape.d * e), `tma ${qTile}`, qTile, {
    phase: phase(['load'], null, null, ['Q']),
    latency: gpu.copyLatencyCycles,
    arrive: [fullQ],
    mem: [{ space: 'smem', buffer: `${p}sQ`, stage: 0, offset: off('sQ', 0), bytes: blockM * shape.d * e, action: 'fill', tile: qTile }],
  });
  for (let i = 0; i < n; i++) {
    const s = i % S;
    const round = Math.floor(i / S);
    const j = kv[i];
    prod.wait(emptyK[s], round - 1);
    prod.issue('tma', load((blockN * shape.d * e) / cluster), `tma K${j}${mcast}`, `K${j}`, {
      phase: phase(['load'], j, null, ['K']),
      latency: gpu.copyLatencyCycles,
      arrive: [fullK[s]],
      mem: [
        { space: 'smem', buffer: `${p}sK`, stage: s, offset: off('sK', s), bytes: blockN * shape.d * e, action: 'fill', tile: `K${j}` },
      ],
    });
    prod.wait(landEmpty[s], round - 1);
    prod.issue('tma', load((blockN * shape.dv * e) / cluster), `tma V${j}${mcast}`, `V${j}`, {
      phase: phase(['load'], j, null, ['V']),
      latency: gpu.copyLatencyCycles,
      arrive: [landFull[s]],
      mem: [
        {
          space: 'smem',
          buffer: `${p}${vLand}`,
          stage: s,
          offset: off(vLand, s),
          bytes: blockN * shape.dv * e,
          action: 'fill',
          tile: `V${j}`,
        },
      ],
    });
    if (fp8) {
      // LDSM.T out of sVt, STSM into sV: every byte read and written once through shared memory.
      const vBytes = blockN * shape.dv * e;
      prod.wait(fullVt[s], round);
      prod.wait(emptyV[s], round - 1);
      prod.exec('smem', (2 * vBytes) / gpu.smemBytesPerClk, `transpose V${j} → sV`, `V${j}`, {
        arrive: [fullV[s], emptyVt[s]],
        mem: [{ space: 'smem', buffer: `${p}sV`, stage: s, offset: off('sV', s), bytes: vBytes, action: 'fill', tile: `V${j}` }],
      });
    }
  }

  const kernelMask = kernelMaskOf(dp);
  const maskSteps = maskStepsOf(gpu, ctx.shape, work);
  const maskOp = maskLabel(kernelMask);
  for (let w = 0; w < CONSUMERS; w++) {
    const warps = [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w];
    const cr = k.role({
      name: `${p}consumer${w}`,
      warps,
      registers: c.consumerRegisters,
      job: `rows ${w * ROWS_PER_WG}-${(w + 1) * ROWS_PER_WG - 1} of the Q tile: both GEMMs and the online softmax`,
    });
    const done = k.counter(`${p}wgmma_WG${w + 1}`);
    let issued = 0;
    const next = pp[(w + 1) % CONSUMERS];
    const mine = pp[w];
    const regs = (buffer: string, tile: string, bytes: number) => ({
      space: 'regs' as const,
      buffer: `${p}${buffer}`,
      stage: w,
      offset: 0,
      bytes,
      action: 'fill' as const,
      tile,
    });
    const rescaleO = (j: number) =>
      cr.exec('fma', (ROWS_PER_WG * shape.dv) / gpu.fmaPerClk, 'rescale O', `P${j}`, { phase: phase(['rescale'], j, w) });
    const issueGemm1 = (idx: number) => {
      const j = kv[idx];
      const s = idx % S;
      cr.wait(fullV[s], Math.floor(idx / S));
      const pBytes = ROWS_PER_WG * blockN * e;
      const sP = c.mmaPvIsRs
        ? []
        : [
            {
              space: 'smem' as const,
              buffer: `${p}sP`,
              stage: 0,
              offset: off('sP', 0) + w * pBytes,
              bytes: pBytes,
              action: 'release' as const,
              tile: `P${j}.${w}`,
            },
          ];
      cr.issue('tensor', gemm1, `gemm1 O+=P·V${j}${c.mmaPvIsRs ? '' : ' (P from sP)'}`, `O${work.qBlock}`, {
        phase: phase(['pv'], j, w),
        latency: WGMMA_LATENCY,
        chunks: blockN / 16,
        arrive: [done],
        memDone: [regs('regs.O', `O${work.qBlock}`, ROWS_PER_WG * shape.dv * 4), ...sP],
      });
      return issued++;
    };
    const releaseV = (idx: number) => cr.arrive(emptyV[idx % S]);
    const issueGemm0 = (j: number) => {
      cr.issue('tensor', gemm0Cycles, `gemm0 S=Q·K${j}ᵀ`, `S${j}`, {
        phase: phase(['qk'], j, w),
        latency: WGMMA_LATENCY,
        chunks: shape.d / 16,
        arrive: [done],
        memDone: [regs('regs.S', `S${j}`, ROWS_PER_WG * blockN * 4)],
      });
      return issued++;
    };
    // P in 16 bits (or FP8) for the P·V GEMM; SS variant: stored to sP for wgmma to read.
    const convertP = (j: number) => {
      // After the row sum in this order, so the row-sum step's cursor covers the conversion too.
      cr.exec('fma', (elems * 0.5) / gpu.fmaPerClk, 'cvt P', `P${j}`, {
        phase: phase(['rowsum'], j, w),
        memDone: [regs('regs.P', `P${j}`, ROWS_PER_WG * blockN * e)],
      });
      if (!c.mmaPvIsRs) {
        cr.exec('smem', (ROWS_PER_WG * blockN * e) / gpu.smemBytesPerClk, `st.shared P${j} → sP`, `P${j}`, {
          phase: phase(['rowsum'], j, w),
          mem: [
            {
              space: 'smem',
              buffer: `${p}sP`,
              stage: 0,
              offset: off('sP', 0) + w * ROWS_PER_WG * blockN * e,
              bytes: ROWS_PER_WG * blockN * e,
              action: 'fill',
              tile: `P${j}.${w}`,
            },
          ],
        });
      }
    };
    const softmaxHead = (j: number, first: boolean) => {
      // Every warpgroup walks the CTA's blocks alike: the first with the seqlen_k bound, then the causal and local edges.
      if (first || maskSteps.has(j)) cr.exec('fma', (elems * 2) / gpu.fmaPerClk, maskOp, `S${j}`, { phase: phase(['mask'], j, w) });
      // Row max, exp2 on the MUFU, then the scale-subtract FFMA and the row-sum add.
      cr.exec(
        'fma',
        elems / gpu.fmaPerClk + CONSUMER_OVERHEAD,
        first ? 'rowmax (first block: O is zero, nothing to rescale)' : 'rowmax',
        `S${j}`,
        {
          phase: phase(first ? ['rowmax', 'rescale'] : ['rowmax'], j, w),
        },
      );
      cr.exec('mufu', elems / gpu.mufuPerClk, 'exp2', `P${j}`, { phase: phase(['exp'], j, w) });
      cr.exec('fma', (elems * (SOFTMAX_FMA_OPS - 1.5)) / gpu.fmaPerClk, 'rowsum', `P${j}`, { phase: phase(['rowsum'], j, w) });
    };
    if (pingpong && w === CONSUMERS - 1) cr.arrive(pp[0]);
    cr.wait(fullQ, 0);
    for (let i = 0; i < n; i++) {
      const j = kv[i];
      const s = i % S;
      cr.wait(fullK[s], Math.floor(i / S));
      if (pingpong) cr.sync(mine);
      if (overlap) {
        // fwd_step: S_j issued, (d > 128: O rescaled,) P_{j+1}·V issued, wait for S_j, softmax,
        // wait for P·V, release V, cvt P, rescale O (mainloop_fwd_sm90_tma_gmma_ws.hpp l. 1170-1207).
        const g0 = issueGemm0(j);
        let g1 = -1;
        if (i > 0) {
          if (c.rescaleOBeforeGemm) rescaleO(j);
          g1 = issueGemm1(i - 1);
        }
        if (pingpong) cr.arrive(next);
        cr.wait(done, g0);
        cr.arrive(emptyK[s]);
        softmaxHead(j, i === 0);
        if (g1 >= 0) {
          cr.wait(done, g1);
          releaseV(i - 1);
        }
        convertP(j);
        if (!c.rescaleOBeforeGemm && i > 0) rescaleO(j);
      } else {
        // Without overlap: S_j, its softmax, then P_j·V_j, each waited for in turn.
        const g0 = issueGemm0(j);
        if (pingpong) cr.arrive(next);
        cr.wait(done, g0);
        cr.arrive(emptyK[s]);
        softmaxHead(j, i === 0);
        convertP(j);
        if (i > 0) rescaleO(j);
        if (pingpong) cr.sync(mine);
        const g1 = issueGemm1(i);
        if (pingpong) cr.arrive(next);
        cr.wait(done, g1);
        releaseV(i);
      }
    }
    if (n > 0 && overlap) {
      if (pingpong) cr.sync(mine);
      const g1 = issueGemm1(n - 1);
      if (pingpong) cr.arrive(next);
      cr.wait(done, g1);
      releaseV(n - 1);
    }
    // Epilogue: O / l and conversion in registers; the consumers meet at a named barrier, each
    // writes its 64 rows into sO (over sV, free once every P·V has run), then the TMA store.
    cr.exec('fma', (ROWS_PER_WG * shape.dv * 2) / gpu.fmaPerClk, 'normalize O/l', `O${work.qBlock}`, {
      phase: phase(['normalize'], null, w),
    });
    cr.sync(epi);
    const rowsBytes = ROWS_PER_WG * shape.dv * oE;
    cr.issue('tma', load(rowsBytes), `tma store O${work.qBlock}`, `O${work.qBlock}`, {
      phase: phase(['write'], null, w, ['O']),
      latency: gpu.copyLatencyCycles,
      mem: [
        {
          space: 'smem',
          buffer: `${p}sO`,
          stage: 0,
          offset: w * rowsBytes,
          bytes: rowsBytes,
          action: 'fill',
          tile: `O${work.qBlock}.${w}`,
        },
      ],
      memDone: [
        {
          space: 'smem',
          buffer: `${p}sO`,
          stage: 0,
          offset: w * rowsBytes,
          bytes: rowsBytes,
          action: 'release',
          tile: `O${work.qBlock}.${w}`,
        },
        hbmOut(shape, work, work.qBlock * blockM + w * ROWS_PER_WG, ROWS_PER_WG, `O${work.qBlock}.${w}`, splits > 1, splits),
      ],
      ...(combineAfter !== undefined ? { arrive: [combineAfter] } : {}),
    });
  }
  if (combineAfter !== undefined && ctx.ctaIndex === ctx.ctaCount - 1)
    drawSplitCombine(k, ctx, splits, combineAfter, fa3CombineOf(ctx.shape, splits));
}

export const fa3Hw: HwAlgorithm = {
  id: 'fa3',
  name: 'FlashAttention-3 (SM90: TMA producer, ping-pong consumers)',
  arch: [90],
  switches: {
    pingpong: {
      ...FA3_FEATURES.pingpong,
      absent: (shape) =>
        fa3Tiles(shape).schedulerBarrier
          ? undefined
          : `the kernel has no scheduler barrier here (UseSchedulerBarrier: 16-bit d ≤ 128 or FP8 d ≥ 128 only; hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a)`,
    },
    intraOverlap: {
      ...FA3_FEATURES.intraOverlap,
      absent: (shape) =>
        fa3Tiles(shape).intraWgOverlap ? undefined : 'the kernel does not overlap here (IntraWGOverlap; hopper/tile_size.h@0251105a)',
    },
    stages: STAGES_SWITCH,
  },
  // Sub-units are the consumer warpgroups, 64 rows each.
  geometry: (sheet) => ({ ctaRows: sheet.tiles.block_m, subRows: ROWS_PER_WG }),
  longestFirst: true,
  // StaticPersistentTileScheduler: tile_idx += gridDim.x (tile_scheduler.hpp@0251105a l. 161-212); the dynamic
  // schedulers claim the next tile by atomicAdd as the producer finishes loading one (l. 336-339; the mainloop's l. 883), as list scheduling does.
  staticPersistent: (shape, gpu) => fa3DispatchOf(shape, gpu.smCount).scheduler === 'static-persistent',
  resources,
  grid,
  build,
  maskedSteps: (gpu, shape, _f, work) => maskStepsOf(gpu, shape, work).size,
  epilogueKernelUs: (gpu, shape) => splitCombineUs(gpu, shape, fa3DispatchOf(shape, gpu.smCount).numSplits),
  hbmBytes: (shape, _f, gpu) => ioBytes(shape) + partialBytes(shape, fa3DispatchOf(shape, gpu.smCount).numSplits),
};
