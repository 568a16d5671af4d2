// FlashAttention-4 forward on SM100 ("FlashAttention-4: Algorithm and Kernel Pipelining
// Co-Design for Asymmetric Hardware Scaling", arXiv 2603.05451), configured as
// flash_attn/cute/flash_fwd_sm100.py at 0251105a is (through fa4Config in
// engine/algorithms/fa4/tiles.ts). One CTA owns q_stage (2, or 1 when seqlen_q ≤ 128) Q tiles
// of 128 rows and 16 warps:
//   softmax0 (warps 0-3) and softmax1 (warps 4-7, idle when q_stage = 1): one per Q tile;
//   correction (warps 8-11): rescales O in TMEM when the row max moved, then the epilogue;
//   mma (warp 12), epilogue (warp 13), load (warp 14), empty (warp 15).
// Register targets by head dim: 200/64/48 below d = 96, else _TUNING_CONFIG or 192/80, the
// other warps getting what is left of 512 per thread-quad.
// 2-CTA mode (use_2cta_instrs: non-causal, dense, d ∈ {128, 192}, dv = 128, seqlen_q > 256):
// two CTAs on two SMs form a pair; the leader's MMA warp issues cta_group::2 MMAs of
// M = 256 rows, each CTA's tensor core computing its own 128 rows into its own TMEM, and each
// CTA holds half of every K/V tile in SMEM, so a stage costs half the bytes and the ring is
// deeper. Q tile s of the pair's m-block goes to the leader for even, the peer for odd tile
// indices (m_tile_idx = (m_block·q_stage + stage)·2 + rank, l. 2129, 2716). One build holds
// both CTAs (pair.ts): barriers the pipelines span across the cluster (consumer groups ×
// cta_group_size, l. 989-1000) are one object with both CTAs' arrivals. d = dv = 256 runs the
// dedicated kernel of hd256.ts. TMEM: S0 at column 0, S1 at 128, O_i after them; P_i (16-bit) over the second
// half of S_i. SMEM: sScale, sQ × q_stage, sO × q_stage (over sQ at d = 192), the K/V ring
// with min((224 KiB − sQ − sO) / stage bytes, 32) stages. For d = 192, dv = 128 on one CTA the
// ring is uneven: Large (K) + Small (V) + Large, stage stride (L+S)/2, the middle stage
// moving by (L−S)/2 with the barrier phase. Load order: K_last, Q0, Q1, V_last, then K/V of
// the remaining blocks from the right. Correction rescales O only when some row max grew by
// more than 8 (log2 units, 16-bit types): with lazy rescaling on it skips the rescale unless
// a row needs it.

import { isFp8 } from '../../core/problem.ts';
import type { ResourceSheet } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  SOFTMAX_FMA_OPS,
  EXP2_POLY_FMA_OPS,
  ceilDiv,
  elemBytes,
  emptySheet,
  finishSheet,
  mmaCycles,
  prefix,
  tensorRate,
  kvBlockRange,
  partialBytes,
  splitCombineUs,
  packShape,
  sequencesOf,
  unpackShape,
  kvBlocksOf,
  ioBytes,
  hbmOut,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
  phase as opPhase,
  RESCALE_AT_SWITCH,
  STAGES_SWITCH,
} from '../../hw/model.ts';
import { sparseKvBlocks } from '../../hw/mask-blocks.ts';
import { maskLabel, maskedKvSteps, sparseMaskedSteps, type KernelMask } from '../../hw/mask-steps.ts';
import { FA4_FEATURES } from './forward.ts';
import type { Kernel } from '../../hw/scheduler.ts';
import { FA4_TILE, exp2EmulatedShare, fa4Config, fa4HeadDimRefusal, type Fa4Config } from './tiles.ts';
import { buildHd256, hd256Layout, hd256MaskedSteps } from './hd256.ts';
import { allocCtaMemory, ctaSides, type CtaSide } from './pair.ts';
import { SmemPacker } from './smem-packer.ts';
import { fa4Dispatch, type Fa4Dispatch } from './dispatch.ts';
import { dispatchInputOf } from '../../hw/dispatch-input.ts';
import { combineBarrier, combineNote, drawSplitCombine } from '../../hw/split-combine.ts';
import { fa4CombineOf } from './combine-schedule.ts';

/** Calibration (FA4 on B200 BF16, ~1600 TFLOP/s at d = 128): fraction of the tcgen05 datasheet rate reached in the loop. */
export const UMMA_EFFICIENCY = 0.75;
/** Cycles from an MMA's last instruction to its tcgen05.commit arriving. */
export const UMMA_LATENCY = 100;
/** TMEM ↔ register traffic per SM per cycle (4 sub-partitions × 32 lanes × 4 B; model assumption). */
export const TMEM_BYTES_PER_CLK = 512;
/** Lazy rescale threshold in log2 units for 16-bit types (flash_fwd_sm100.py@0251105a, rescale_threshold). */
export const RESCALE_THRESHOLD_LOG2 = 8;
/** Blackwell's packed FFMA2 does two fp32 FMAs per lane per instruction: the softmax code is written with it. */
const PACKED = 2;

export const FA4_BLOCK_M = FA4_TILE;
export const FA4_BLOCK_N = FA4_TILE;

/** The shipped kernel's configuration for this shape (one table for stepper, simulator and describe). */
export function fa4Tiles(shape: ProblemShape): Fa4Config {
  const hit = tilesCache.get(shape);
  if (hit) return hit;
  const out = tilesOf(shape);
  tilesCache.set(shape, out);
  return out;
}
const tilesCache = new WeakMap<ProblemShape, Fa4Config>();

function tilesOf(shape: ProblemShape): Fa4Config {
  const dp = fa4DispatchOf(shape);
  const c = fa4Config({
    d: shape.d,
    dv: shape.dv,
    dtype: shape.dtype,
    causal: dp.isCausal,
    local: dp.isLocal,
    nq: unpackShape(shape).nq,
    rows: dp.packedRows,
    twoCta: dp.ctaGroup === 2,
    splitKv: dp.numSplits > 1,
    tileN: dp.tileN,
  });
  return { ...c, registers: dp.registers, exp2: { ...c.exp2, freq: dp.exp2Freq } };
}

/** _flash_attn_fwd's decisions for this problem (./dispatch.ts); `numSms` only moves a num_splits heuristic. */
export function fa4DispatchOf(shape: ProblemShape, numSms = 148, backward = false): Fa4Dispatch {
  const key = `${numSms}/${backward}`;
  const hit = dispatchCache.get(shape)?.get(key);
  if (hit) return hit;
  const dp = fa4Dispatch({ ...dispatchInputOf(shape), backward }, numSms);
  const byKey = dispatchCache.get(shape) ?? new Map<string, Fa4Dispatch>();
  byKey.set(key, dp);
  dispatchCache.set(shape, byKey);
  return dp;
}

/** The mask the kernel is compiled with, as the dispatch resolved it (_resolve_causal_local_window). */
function kernelMaskOf(dp: Fa4Dispatch): KernelMask {
  return { causal: dp.isCausal, local: dp.isLocal, left: dp.windowLeft, right: dp.windowRight };
}

// The schedule asks for the dispatch of the same shape object many times per run.
const dispatchCache = new WeakMap<ProblemShape, Map<string, Fa4Dispatch>>();

/** The problem as the kernel tiles it: Q heads packed per KV head where pack_gqa is on. */
function kernelShape(shape: ProblemShape): ProblemShape {
  const hit = packedCache.get(shape);
  if (hit) return hit;
  const dp = fa4DispatchOf(shape);
  const out = dp.packGqa ? packShape(shape, dp.qheadPerKvhead) : shape;
  packedCache.set(shape, out);
  return out;
}
const packedCache = new WeakMap<ProblemShape, ProblemShape>();

/** The uneven Large-Small-Large ring: d 192 / dv 128 on one CTA with three stages. */
export function fa4Uneven(shape: ProblemShape): boolean {
  const c = fa4Tiles(shape);
  return c.dPad === 192 && c.dvPad === 128 && c.kvStage === 3 && c.ctaGroup === 1;
}

function kvStages(shape: ProblemShape, f: HwFeatures): number {
  if (fa4Uneven(shape)) return 3;
  return f.stages ?? fa4Tiles(shape).kvStage;
}

interface Fa4Layout {
  cfg: Fa4Config;
  sheet: ResourceSheet;
  qOff: number[];
  /** Where O_s is staged for the TMA store: its own sO, or over sQ_s at d = 192. */
  oOff: number[];
  kvBase: number;
  /** Bytes of one K / V tile this CTA holds (half the tile in 2-CTA mode). */
  kBytes: number;
  vBytes: number;
  stride: number;
  unevenShift: number;
  stages: number;
  tmem: { s: number[]; p: number[]; o: number[] };
}

/** What does not fit or is not modelled, the same for both kernels. */
function refusals(sheet: ResourceSheet, gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): void {
  if (gpu.sm !== 100) sheet.does_not_fit.push(`arch: FA4 is written for SM100 (tcgen05, TMEM); ${gpu.name} is SM${gpu.sm}`);
  if (shape.dtype === 'fp32') sheet.does_not_fit.push('dtype: FA4 takes fp16 or bf16 inputs (its MMAs have no fp32 path)');
  if (isFp8(shape.dtype) && fa4Tiles(shape).dedicatedHd256)
    sheet.does_not_fit.push(
      'dtype: FlashScope models FA4’s FP8 path in the main kernel (flash_fwd_sm100.py), not in the d = dv = 256 kernel; pick fp16 or bf16',
    );
  const refusal = fa4HeadDimRefusal(shape.d, shape.dv, shape.dtype);
  if (refusal) sheet.does_not_fit.push(`head dim: ${refusal}`);
  else if (shape.dv > 256)
    sheet.does_not_fit.push(
      "head dim: the dv = 512 MLA shapes run upstream's MLA kernel (flash_fwd_mla_sm100.py, picked when qv is given: interface.py l. 1290-1305), which FlashScope does not model",
    );
  if (f.stages !== undefined && f.stages < 2)
    sheet.does_not_fit.push(`stages: FA4 needs at least 2 K/V stages (K and V of one block are in flight together), got ${f.stages}`);
}

function layout(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): Fa4Layout {
  const cfg = fa4Tiles(shape);
  const Q = cfg.qStage;
  const e = elemBytes(shape.dtype);
  const N = cfg.blockN;
  const sheet = emptySheet('fa4', gpu, FA4_BLOCK_M, N);
  sheet.cta_group = cfg.ctaGroup;
  const stages = kvStages(shape, f);
  sheet.q_stage = Q;
  sheet.kv_stage = stages;
  const { dPad, dvPad } = cfg;
  const kBytes = (N * dPad * e) / cfg.ctaGroup;
  const vBytes = (N * dvPad * e) / cfg.ctaGroup;
  const uneven = fa4Uneven(shape);
  // Struct order of the kernel's SharedStorage: mbarriers, TMEM holding word, sScale, sO, sQ, sK/V.
  const mbarBytes = (2 * Q + 2 * stages + 11) * 8;
  const smem = new SmemPacker(sheet);
  const push = smem.push.bind(smem);
  push('mbarriers', 0, mbarBytes, 8);
  push('tmem_holding', 0, 4, 4);
  push('sScale', 0, Q * FA4_BLOCK_M * 2 * 4, 4);
  // FP8 kernels write O in bf16 (interface.py l. 700).
  const oTile = FA4_BLOCK_M * dvPad * (isFp8(shape.dtype) ? 2 : e);
  const qTile = FA4_BLOCK_M * dPad * e;
  const oOff: number[] = [];
  if (!cfg.overlapSOSQ) for (let q = 0; q < Q; q++) oOff.push(push('sO', q, oTile, q === 0 ? 1024 : 1));
  const qOff: number[] = [];
  // Overlapped, sQ is sized for the larger of Q and O (flash_fwd_sm100.py l. 747): FP8 Q under a bf16 O.
  const qSlot = cfg.overlapSOSQ ? Math.max(qTile, oTile) : qTile;
  for (let q = 0; q < Q; q++) qOff.push(push('sQ', q, qSlot, q === 0 ? 1024 : 1));
  if (cfg.overlapSOSQ) oOff.push(...qOff);
  const kvBase = smem.align(1024);
  let stride: number;
  let unevenShift = 0;
  let ringBytes: number;
  if (uneven) {
    // cosize of the uneven layout: two Large and one Small slot.
    stride = (kBytes + vBytes) / 2;
    unevenShift = (kBytes - vBytes) / 2;
    ringBytes = 2 * kBytes + vBytes;
  } else {
    stride = Math.max(kBytes, vBytes);
    ringBytes = stages * stride;
  }
  for (let s = 0; s < stages; s++)
    sheet.smem.buffers.push({ name: 'sKV', stage: s, offset: kvBase + s * stride, bytes: uneven ? (s === 1 ? vBytes : kBytes) : stride });
  smem.end = kvBase + ringBytes;
  sheet.smem.used_bytes = smem.end;
  const kb = (n: number) => `${n / 1024} KiB`;
  // The ring as laid out: "3 × 32 KiB" when the slots are equal, "48 + 32 + 48 KiB" when not.
  const slots = sheet.smem.buffers.filter((b) => b.name === 'sKV').map((b) => b.bytes);
  const ringText = slots.every((b) => b === slots[0])
    ? `${slots.length} × ${kb(slots[0])}`
    : `${slots.map((b) => b / 1024).join(' + ')} KiB`;
  sheet.notes.push(
    `SMEM: ${Q}×sQ = ${kb(Q * qTile)}, ${cfg.overlapSOSQ ? `sO over sQ (${cfg.dPad === 192 ? 'd 192' : 'dv ≥ 128 with split KV'})` : `${Q}×sO = ${kb(Q * oTile)}`}, K/V ring = ${ringText} = ${kb(ringBytes)}${uneven ? ' (Large-Small-Large)' : ''}; ${smem.end} bytes with barriers, sScale and 1024-byte alignment. Stages: min((224 KiB − sQ − sO) / stage bytes, 32) = ${cfg.kvStage}.`,
  );
  if (cfg.ctaGroup === 2) {
    sheet.notes.push(
      `2-CTA mode (cta_group::2): this CTA and its peer on another SM form a pair over ${2 * Q * FA4_BLOCK_M} Q rows; the leader's MMA warp issues M = 256 MMAs, each CTA's tensor core writes its own 128 rows into its own TMEM, and each CTA holds half of every K/V tile (${N / 2} of ${N} rows), so a stage takes half the bytes.`,
    );
  }
  if (uneven) {
    sheet.notes.push('The uneven ring ends the struct at 227 KiB, the per-block limit (sScale holds q_stage·128·2 fp32 = 2 KiB).');
  }
  // TMEM columns: S0, S1 (s_stage = 2), then O per Q stage.
  const s = [0, N];
  const p = s.map((c) => c + N / 2);
  // P in the input type: two 16-bit or four 8-bit values per 32-bit column (tP_width_ratio, flash_fwd_sm100.py l. 1152).
  const pColumns = (N * e) / 4;
  const o = Array.from({ length: Q }, (_, q) => 2 * N + q * dvPad);
  if (sheet.tmem) {
    sheet.tmem.buffers.push(
      { name: 'S0', column: s[0], columns: N },
      { name: 'S1', column: s[1], columns: N },
      { name: 'P0', column: p[0], columns: pColumns },
      { name: 'P1', column: p[1], columns: pColumns },
      ...o.map((c, q) => ({ name: `O${q}`, column: c, columns: dvPad })),
    );
    sheet.notes.push(
      e === 1
        ? 'P_i is written over the third quarter of S_i (FP8 values, four per 32-bit column) once softmax has read S_i.'
        : 'P_i is written over the second half of S_i (16-bit values, two per 32-bit column) once softmax has read S_i.',
    );
  }
  if (e === 1) {
    sheet.notes.push(
      'FP8: Q, K, V and P are 8-bit and the MMAs run at the FP8 rate; O is written in bf16 (interface.py l. 700); P is scaled by 2^8 before P·V (max_offset, flash_fwd_sm100.py l. 2620-2622).',
    );
  }
  const r = cfg.registers;
  // The softmax warpgroups are the consumers, one per Q stage (flash_fwd_sm100.py@0251105a
  // softmax0/1_warp_ids; q_stage 1 drops softmax1); correction serves both stages.
  sheet.roles.push({ name: 'consumer0', kernel_name: 'softmax0', warps: [0, 1, 2, 3], registers: r.softmax });
  if (Q === 2) sheet.roles.push({ name: 'consumer1', kernel_name: 'softmax1', warps: [4, 5, 6, 7], registers: r.softmax });
  sheet.roles.push(
    { name: 'correction', warps: [8, 9, 10, 11], registers: r.correction },
    { name: 'mma', warps: [12], registers: r.other },
    { name: 'epilogue', warps: [13], registers: r.other },
    { name: 'load', warps: [14], registers: r.other },
    { name: 'empty', warps: Q === 2 ? [15] : [15, 4, 5, 6, 7], registers: r.other },
  );
  if (Q === 1) sheet.notes.push('q_stage = 1 (seqlen_q ≤ 128): one Q tile, warps 4-7 join the empty warp.');
  refusals(sheet, gpu, shape, f);
  if (uneven && f.stages !== undefined && f.stages !== 3)
    sheet.does_not_fit.push(`stages: the uneven d = 192, dv = 128 K/V ring (Large-Small-Large) has exactly 3 stages, got ${f.stages}`);
  finishSheet(sheet, gpu, true);
  return { cfg, sheet, qOff, oOff, kvBase, kBytes, vBytes, stride, unevenShift, stages, tmem: { s, p, o } };
}

/** The resource sheet of one CTA (in 2-CTA mode each CTA of the pair holds the same). */
function resources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): ResourceSheet {
  const sheet = resourceSheet(gpu, shape, f);
  const dp = fa4DispatchOf(shape, gpu.smCount);
  sheet.upstream = {
    config: {
      mask: dp.isCausal ? 'causal' : dp.isLocal ? `local(${dp.windowLeft ?? 'None'},${dp.windowRight ?? 'None'})` : 'none',
      pack_gqa: dp.packGqa,
      packed_rows: dp.packedRows,
      tile_m: dp.tileM,
      tile_n: dp.tileN,
      q_stage: dp.qStage,
      kv_stage: dp.kvStage,
      cta_group: dp.ctaGroup,
      dedicated_hd256: dp.dedicatedHd256,
      num_splits: dp.numSplits,
      paged_kv_non_tma: dp.pagedKvNonTma,
      tma_q: dp.useTmaQ,
      tma_o: dp.useTmaO,
      registers: `${dp.registers.softmax}/${dp.registers.correction}/${dp.registers.other}`,
      exp2_emu_freq: dp.exp2Freq,
      tiles: dp.tiles,
      scheduler: dp.tileScheduler,
    },
    why: dp.numSplits > 1 && !dp.refused ? [...dp.why, ...fa4CombineOf(shape, dp.numSplits).why] : dp.why,
  };
  if (dp.refused) sheet.does_not_fit.unshift(`upstream refuses: ${dp.refused}`);
  if (dp.numSplits > 1) sheet.notes.push(combineNote(gpu, fa4CombineOf(shape, dp.numSplits), dp.numSplits));
  if (!dp.useTmaQ || !dp.useTmaO)
    sheet.notes.push(
      'Q or O moves without TMA here (packed GQA with tile_m not a multiple of the heads per KV head, split, or varlen Q); the model keeps TMA timings.',
    );
  if (sheet.does_not_fit.length > 0) sheet.ctas_per_sm = 0;
  return sheet;
}

function resourceSheet(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): ResourceSheet {
  const cfg = fa4Tiles(shape);
  if (!cfg.dedicatedHd256) return layout(gpu, shape, f).sheet;
  const { sheet } = hd256Layout(gpu, shape, cfg, f);
  refusals(sheet, gpu, shape, f);
  // warpgroup_reg_alloc(256) for the softmax warps (sm100_hd256_2cta_fmha_forward.py l. 1318).
  return finishSheet(sheet, gpu, true);
}

/** Q rows of one CTA: q_stage tiles, or the one tile of the d = 256 kernel. */
function ctaRows(cfg: Fa4Config): number {
  return FA4_BLOCK_M * (cfg.dedicatedHd256 ? 1 : cfg.qStage);
}

/** One entry per CTA, or per CTA pair in 2-CTA mode (both CTAs visit the pair's K/V range), with block_info's K/V range. */
function grid(gpu: GpuSpec, given: ProblemShape): CtaWork[] {
  const shape = kernelShape(given);
  const cfg = fa4Tiles(shape);
  const N = cfg.blockN;
  const splits = fa4DispatchOf(given, gpu.smCount).numSplits;
  const rows = ctaRows(cfg) * cfg.ctaGroup;
  const out: CtaWork[] = [];
  sequencesOf(shape).forEach((seq, sb) => {
    for (let b = 0; b < seq.batch; b++)
      for (let h = 0; h < shape.hq; h++)
        for (let i = 0; i < ceilDiv(seq.nq, rows); i++) {
          const m0 = i * rows;
          const m1 = Math.min(seq.nq, (i + 1) * rows);
          const [from, to] = kvBlockRange(seq, m0, m1, N);
          const sparse = sparseKvBlocks(seq, b + sb, h, m0, m1, N, from, to);
          for (let sp = 0; sp < splits; sp++) {
            const at = { b: b + sb, h, qBlock: i, reverse: true, split: sp };
            if (!sparse) {
              const [kvFrom, kvTo] = kvBlockRange(seq, m0, m1, N, sp, splits);
              out.push({ ...at, kvFrom, kvTo });
              continue;
            }
            // Each split takes its share of the partial list and of the full list (split_block_range, block_sparse_utils.py@0251105a l. 619-625, 1079-1088).
            const kvFull = splitShare(sparse.full, sp, splits);
            const kvList = splits === 1 ? sparse.all : [...splitShare(sparse.partial, sp, splits), ...kvFull].sort((x, y) => x - y);
            out.push({ ...at, kvFrom: from, kvTo: to, kvList, kvFull });
          }
        }
  });
  return out;
}

/** Split `split` of `splits`' share of a block list: ceil(count / splits) blocks each, the last ones fewer. */
function splitShare(list: number[], split: number, splits: number): number[] {
  if (splits === 1) return list;
  const per = ceilDiv(list.length, splits);
  const begin = Math.min(split * per, list.length);
  return list.slice(begin, Math.min(begin + per, list.length));
}

/** The load sequence of one CTA, in issue order, with SMEM placement (flash_fwd_sm100.py@0251105a, load: l. 1624-1651). */
export interface Fa4Load {
  tile: string;
  kind: 'Q' | 'K' | 'V';
  /** Ring stage (K/V) or Q stage. */
  stage: number;
  /** Producer phase of the K/V ring when issued (starts at 1, flips when the ring wraps). */
  phase: number;
  offset: number;
  bytes: number;
  /** Index in the K/V sequence (K0 V0 K1 V1 ...), -1 for Q. */
  kvIndex: number;
}

export function fa4LoadOrder(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, kvBlocks: number[], qBlock = 0, rank: 0 | 1 = 0): Fa4Load[] {
  const L = layout(gpu, shape, f);
  const e = elemBytes(shape.dtype);
  const qBytes = FA4_BLOCK_M * L.cfg.dPad * e;
  const Q = L.cfg.qStage;
  const G = L.cfg.ctaGroup;
  const out: Fa4Load[] = [];
  let c = 0;
  const kvLoad = (kind: 'K' | 'V', j: number) => {
    const stage = c % L.stages;
    const phase = 1 ^ (Math.floor(c / L.stages) & 1);
    let offset = L.kvBase + stage * L.stride;
    // Middle stage of the uneven ring: right by the shift when the consumer phase (phase ^ 1) is 0, left when 1.
    if (L.unevenShift > 0 && stage === 1) offset += L.unevenShift * (1 - 2 * (phase ^ 1));
    out.push({ tile: `${kind}${j}`, kind, stage, phase, offset, bytes: kind === 'K' ? L.kBytes : L.vBytes, kvIndex: c });
    c++;
  };
  const q = (s: number) =>
    out.push({ tile: `Q${(Q * qBlock + s) * G + rank}`, kind: 'Q', stage: s, phase: 1, offset: L.qOff[s], bytes: qBytes, kvIndex: -1 });
  if (kvBlocks.length === 0) return out;
  kvLoad('K', kvBlocks[0]);
  q(0);
  if (Q === 2) q(1);
  kvLoad('V', kvBlocks[0]);
  for (let i = 1; i < kvBlocks.length; i++) {
    kvLoad('K', kvBlocks[i]);
    kvLoad('V', kvBlocks[i]);
  }
  return out;
}

function build(k: Kernel, given: BuildContext, work: CtaWork): void {
  const ctx = { ...given, shape: kernelShape(given.shape) };
  const cfg = fa4Tiles(ctx.shape);
  if (cfg.dedicatedHd256) {
    const L = hd256Layout(ctx.gpu, ctx.shape, cfg, ctx.features);
    const mask = kernelMaskOf(fa4DispatchOf(ctx.shape, ctx.gpu.smCount));
    buildHd256(k, ctx, work, cfg, L, { efficiency: UMMA_EFFICIENCY, latency: UMMA_LATENCY, tmemBytesPerClk: TMEM_BYTES_PER_CLK }, mask);
    return;
  }
  buildMain(k, ctx, work);
}

/**
 * The blocks upstream's softmax loop runs with mask_fn (engine/hw/mask-steps.ts) for Q stage s,
 * over the CTA's m block of q_stage tiles (`shape` as the kernel tiles it): block-sparse CTAs walk
 * their two lists, each stage checking its own tile's end against seqlen_q.
 */
function maskStepsPerStage(gpu: GpuSpec, shape: ProblemShape, work: CtaWork): (s: number) => Set<number> {
  const { qStage: Q, ctaGroup: G, blockN: N } = fa4Tiles(shape);
  const seq = sequencesOf(shape)[work.b] ?? shape;
  const denseSteps = maskedKvSteps(
    seq,
    work.qBlock,
    Q * G * FA4_BLOCK_M,
    N,
    work.kvFrom,
    work.kvTo,
    kernelMaskOf(fa4DispatchOf(shape, gpu.smCount)),
  );
  const auxTensors = Object.keys(shape.mask?.aux ?? {}).length > 0;
  return (s) =>
    work.kvFull
      ? sparseMaskedSteps(work, auxTensors && (Q * work.qBlock + s + 1) * G * FA4_BLOCK_M > seq.nq / (seq.packRatio ?? 1))
      : denseSteps;
}

/** Masking steps a CTA runs over all its Q stages (simulate times CTAs alike in block count and in this once). */
function maskedSteps(gpu: GpuSpec, given: ProblemShape, _f: HwFeatures, work: CtaWork): number {
  const shape = kernelShape(given);
  const cfg = fa4Tiles(shape);
  if (cfg.dedicatedHd256) return hd256MaskedSteps(shape, work, kernelMaskOf(fa4DispatchOf(shape, gpu.smCount))).size;
  const steps = maskStepsPerStage(gpu, shape, work);
  let total = 0;
  for (let s = 0; s < cfg.qStage; s++) total += steps(s).size;
  return total;
}

function buildMain(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, shape, features: f } = ctx;
  // Split KV writes fp32 partials of O (and LSE) that the combine kernel merges.
  const dispatch = fa4DispatchOf(shape, gpu.smCount);
  const splits = dispatch.numSplits;
  const L = layout(gpu, shape, f);
  const N = L.cfg.blockN;
  const p = prefix(ctx);
  const e = elemBytes(shape.dtype);
  const kv = kvBlocksOf(work);
  const n = kv.length;
  const G = L.cfg.ctaGroup;
  const sides = ctaSides(G);
  const loadsOf = sides.map((side) => fa4LoadOrder(gpu, shape, f, kv, work.qBlock, side.rank));
  const loads = loadsOf[0];
  const S = L.stages;
  // K/V loads by their index in the K0 V0 K1 V1 ... sequence: K of iteration i is 2i, V is 2i + 1.
  const kvLoads = loads.filter((x) => x.kvIndex >= 0);
  k.fifoUnits.add('tensor');
  const lanes = gpu.tmem?.lanes ?? 128;
  const tmemSpec = allocCtaMemory(k, sides, L.sheet, p, lanes, ['mbarriers', 'tmem_holding']);

  const rate = tensorRate(gpu, shape.dtype) * UMMA_EFFICIENCY;
  // In a pair each SM's tensor core computes its own CTA's 128 rows of the M = 256 MMA.
  const qk = mmaCycles(FA4_BLOCK_M, N, shape.d, rate);
  const pv = mmaCycles(FA4_BLOCK_M, shape.dv, N, rate);
  const elems = FA4_BLOCK_M * N;
  // apply_exp2_convert runs the same pattern on masked and unmasked blocks; its frequency and
  // start fragment come from _TUNING_CONFIG (fa4Config).
  const emuFrac = f.exp2Emulation ? exp2EmulatedShare(N, L.cfg.exp2) : 0;
  const Q = L.cfg.qStage;
  // Drawn split KV: the combine kernel starts once every epilogue of this SM has stored its partial.
  const combineAfter = ctx.drawn && splits > 1 ? combineBarrier(k, sides.length * Q * ctx.ctaCount) : undefined;
  const pair = G === 2 ? ' (cta_group::2)' : '';
  /** An MMA's phase: in a pair it serves Q tile s of both CTAs (pair-local tiles G·s and G·s + 1). */
  const mmaPhase = (kinds: Parameters<typeof opPhase>[0], j: number, s: number) =>
    G === 2 ? { ...opPhase(kinds, j, G * s), subEnd: G * s + 1 } : opPhase(kinds, j, s);
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const tmemMove = (bytes: number) => bytes / TMEM_BYTES_PER_CLK;
  /** Pair-local index of Q tile s of a CTA: the leader takes even, the peer odd tiles. */
  const sub = (side: CtaSide, s: number) => G * s + side.rank;
  const qTileName = (side: CtaSide, s: number) => `Q${(Q * work.qBlock + s) * G + side.rank}`;

  // Barriers a cluster-wide pipeline completes once both CTAs arrived (TMA bytes of both
  // halves, both CTAs' softmax or correction); the MMA's commits reach both CTAs.
  const qFull = Array.from({ length: Q }, (_, s) => k.mbarrier(`${p}load_q_full[${s}]`, G));
  const kvFull: number[] = [];
  const kvEmpty: number[] = [];
  for (let s = 0; s < S; s++) {
    kvFull.push(k.mbarrier(`${p}kv_full[${s}]`, G));
    kvEmpty.push(
      k.mbarrier(`${p}kv_empty[${s}]`, 1, (ph) => {
        const ld = kvLoads[s + ph * S];
        return ld
          ? sides.map((side) => ({
              space: 'smem',
              buffer: `${p}${side.tag}sKV`,
              stage: s,
              offset: ld.offset,
              bytes: ld.bytes,
              action: 'release',
              tile: ld.tile,
            }))
          : null;
      }),
    );
  }
  const sFull = [0, 1].map((s) => k.mbarrier(`${p}S_full[${s}]`));
  const pFullORescaled = [0, 1].map((s) => k.mbarrier(`${p}P_full_O_rescaled[${s}]`, 2 * G));
  const pFull2 = [0, 1].map((s) => k.mbarrier(`${p}P_full_2[${s}]`, G));
  const oFull = [0, 1].map((s) => k.mbarrier(`${p}O_full[${s}]`));
  const local = sides.map((side) => ({
    corrFull: [0, 1].map((s) => k.mbarrier(`${p}${side.tag}softmax_corr_full[${s}]`)),
    corrEmpty: [0, 1].map((s) => k.mbarrier(`${p}${side.tag}softmax_corr_empty[${s}]`)),
    epiFull: [0, 1].map((s) => k.mbarrier(`${p}${side.tag}corr_epi_full[${s}]`)),
  }));
  const R = L.cfg.registers;

  // Roles in pairs, leader above peer, so the timeline shows each job of the two CTAs side by side.
  const lds = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}load`,
      warps: [14],
      registers: R.other,
      job: `TMA loads: K, Q0${Q === 2 ? ', Q1' : ''}, V, then K/V from the last block down${G === 2 ? ` (rows ${side.rank === 0 ? '0-63' : '64-127'} of each K/V tile; its bytes count on the leader's barriers)` : ''}`,
    }),
  );
  const mmas = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}mma`,
      warps: [12],
      registers: R.other,
      job:
        G === 1
          ? 'issues every tcgen05 MMA: S = Q·Kᵀ into TMEM, O += P·V with P read from TMEM'
          : side.rank === 0
            ? "issues every tcgen05 MMA with cta_group::2: M = 256 over this CTA's rows and its peer's, each half into its own CTA's TMEM"
            : "issues nothing (is_leader_cta is false): this SM's tensor core runs the leader's cta_group::2 MMAs",
    }),
  );
  const sms: { side: number; s: number; role: ReturnType<Kernel['role']> }[] = [];
  for (let s = 0; s < Q; s++)
    for (const [r, side] of sides.entries())
      sms.push({
        side: r,
        s,
        role: k.role({
          name: `${p}${side.tag}softmax${s}`,
          warps: [4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3],
          registers: R.softmax,
          job: `online softmax of ${qTileName(side, s)}: S from ${G === 2 ? 'its own ' : ''}TMEM, P back over half of S`,
        }),
      });
  const corrs = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}correction`,
      warps: [8, 9, 10, 11],
      registers: R.correction,
      job: `rescales O in ${G === 2 ? 'its own ' : ''}TMEM when a row max moved; normalizes O at the end`,
    }),
  );
  const epis = sides.map((side) =>
    k.role({ name: `${p}${side.tag}epilogue`, warps: [13], registers: R.other, job: 'TMA store of O from SMEM' }),
  );
  sides.map((side) =>
    k.role({
      name: `${p}${side.tag}empty`,
      warps: Q === 2 ? [15] : [15, 4, 5, 6, 7],
      registers: R.other,
      job: 'idle: gives its registers to the others',
    }),
  );

  // Load warps.
  for (const [r, side] of sides.entries()) {
    const ld = lds[r];
    const unit = side.unit('tma');
    for (const x of loadsOf[r]) {
      if (x.kind === 'Q') {
        ld.issue(unit, load(x.bytes), `tma ${x.tile}`, x.tile, {
          phase: opPhase(['load'], null, sub(side, x.stage), ['Q']),
          latency: gpu.copyLatencyCycles,
          arrive: [qFull[x.stage]],
          mem: [
            { space: 'smem', buffer: `${p}${side.tag}sQ`, stage: x.stage, offset: x.offset, bytes: x.bytes, action: 'fill', tile: x.tile },
          ],
        });
        continue;
      }
      const round = Math.floor(x.kvIndex / S);
      ld.wait(kvEmpty[x.stage], round - 1);
      // Uneven ring: a K landing in stage 0 overlaps the Large tile the middle stage held last round.
      if (L.unevenShift > 0 && x.kind === 'K' && x.stage === 0) ld.wait(kvEmpty[1], round - 1);
      ld.issue(unit, load(x.bytes), `tma ${x.tile}`, x.tile, {
        phase: opPhase(['load'], Number(x.tile.slice(1)), null, [x.kind]),
        latency: gpu.copyLatencyCycles,
        arrive: [kvFull[x.stage]],
        mem: [
          { space: 'smem', buffer: `${p}${side.tag}sKV`, stage: x.stage, offset: x.offset, bytes: x.bytes, action: 'fill', tile: x.tile },
        ],
      });
    }
  }

  // The MMA warp (the leader's, in a pair).
  const kvOf = (kind: 'K' | 'V', i: number) => kvLoads[2 * i + (kind === 'K' ? 0 : 1)];
  const mma = mmas[0];
  const qkOp = (s: number, i: number, extraArrive: number[]) => {
    mma.issue('tensor', qk, `S${s}=Q${s}·K${kv[i]}ᵀ${pair}`, `S${s}`, {
      phase: mmaPhase(['qk'], kv[i], s),
      latency: UMMA_LATENCY,
      chunks: 1,
      arrive: [sFull[s], ...extraArrive],
      memBegin: sides.map((side) => tmemSpec(side, `S${s}`, L.tmem.s[s], N, 'fill', `S${s}.${kv[i]}`)),
    });
  };
  const pvOps = (i: number, last: boolean) => {
    const vx = kvOf('V', i);
    for (let s = 0; s < Q; s++) {
      mma.wait(pFullORescaled[s], i);
      mma.issue('tensor', pv * 0.75, `O${s}+=P${s}·V${kv[i]} (3/4)${pair}`, `O${s}`, {
        phase: mmaPhase(['pv'], kv[i], s),
        latency: 0,
        memBegin: i === 0 ? sides.map((side) => tmemSpec(side, `O${s}`, L.tmem.o[s], shape.dv, 'fill', `O${s}`)) : undefined,
      });
      mma.wait(pFull2[s], i);
      const arrive = [...(last ? [oFull[s]] : []), ...(s === Q - 1 ? [kvEmpty[vx.stage]] : [])];
      mma.issue('tensor', pv * 0.25, `O${s}+=P${s}·V${kv[i]} (last 1/4)${pair}`, `O${s}`, {
        phase: mmaPhase(['pv'], kv[i], s),
        latency: UMMA_LATENCY,
        arrive,
        memDone: sides.map((side) => tmemSpec(side, `P${s}`, L.tmem.p[s], N / 2, 'release', `P${s}.${kv[i]}`)),
      });
      if (!last && s === 0) mma.wait(kvFull[kvOf('K', i + 1).stage], Math.floor(kvOf('K', i + 1).kvIndex / S));
      if (!last) qkOp(s, i + 1, s === Q - 1 ? [kvEmpty[kvOf('K', i + 1).stage]] : []);
    }
  };
  if (n > 0) {
    const k0 = kvOf('K', 0);
    mma.wait(qFull[0], 0);
    mma.wait(kvFull[k0.stage], Math.floor(k0.kvIndex / S));
    qkOp(0, 0, Q === 1 ? [kvEmpty[k0.stage]] : []);
    if (Q === 2) {
      mma.wait(qFull[1], 0);
      qkOp(1, 0, [kvEmpty[k0.stage]]);
    }
    for (let i = 0; i < n; i++) {
      const vx = kvOf('V', i);
      mma.wait(kvFull[vx.stage], Math.floor(vx.kvIndex / S));
      pvOps(i, i === n - 1);
    }
  }

  const kernelMask = kernelMaskOf(dispatch);
  const maskStepsOf = maskStepsPerStage(gpu, shape, work);
  const maskOp = maskLabel(kernelMask);

  // Softmax warpgroups, each on its own CTA's SM.
  for (const { side: r, s, role: sm } of sms) {
    const side = sides[r];
    const u = side.unit;
    const B = local[r];
    const ix = sub(side, s);
    const maskSteps = maskStepsOf(s);
    for (let i = 0; i < n; i++) {
      const j = kv[i];
      sm.wait(sFull[s], i);
      sm.exec(u('tmem'), tmemMove(elems * 4), `tcgen05.ld S${s}`, `S${s}`, {
        phase: opPhase(['mask'], j, ix),
        memDone: [tmemSpec(side, `S${s}`, L.tmem.s[s], N, 'release', `S${s}.${j}`)],
      });
      const masked = maskSteps.has(j);
      const emu = emuFrac;
      if (masked) sm.exec(u('fma'), (elems * 2) / (gpu.fmaPerClk * PACKED), maskOp, `S${s}`, { phase: opPhase(['mask'], j, ix) });
      sm.exec(u('fma'), (elems * 1) / (gpu.fmaPerClk * PACKED), 'row max, scale to sScale', `S${s}`, { phase: opPhase(['rowmax'], j, ix) });
      sm.arrive(B.corrFull[s]);
      sm.exec(u('fma'), elems / (gpu.fmaPerClk * PACKED), 'x·scale − max', `S${s}`, { phase: opPhase(['exp'], j, ix) });
      if (emu < 1)
        sm.exec(u('mufu'), (elems * (1 - emu)) / gpu.mufuPerClk, `exp2 MUFU (${Math.round((1 - emu) * 100)}%)`, `P${s}`, {
          phase: opPhase(['exp'], j, ix),
        });
      if (emu > 0)
        sm.exec(
          u('fma'),
          (elems * emu * EXP2_POLY_FMA_OPS) / (gpu.fmaPerClk * PACKED),
          `exp2 cubic polynomial (${Math.round(emu * 100)}%)`,
          `P${s}`,
          { phase: opPhase(['exp'], j, ix) },
        );
      sm.exec(u('tmem'), tmemMove((elems * e * 3) / 4), `tcgen05.st P${s} (3/4)`, `P${s}`, {
        phase: opPhase(['exp'], j, ix),
        mem: [tmemSpec(side, `P${s}`, L.tmem.p[s], N / 2, 'fill', `P${s}.${j}`)],
      });
      sm.arrive(pFullORescaled[s]);
      sm.exec(u('tmem'), tmemMove((elems * e) / 4), `tcgen05.st P${s} (last 1/4)`, `P${s}`, { phase: opPhase(['exp'], j, ix) });
      sm.arrive(pFull2[s]);
      sm.wait(B.corrEmpty[s], i);
      sm.exec(u('fma'), (elems * (SOFTMAX_FMA_OPS - 2)) / (gpu.fmaPerClk * PACKED), 'row sum, cvt', `P${s}`, {
        phase: opPhase(['rowsum'], j, ix),
      });
    }
  }

  // Correction warpgroup and epilogue warp of each CTA.
  const oBytes = FA4_BLOCK_M * shape.dv * 4;
  const qBytes = FA4_BLOCK_M * L.cfg.dPad * e;
  const oTile = FA4_BLOCK_M * shape.dv * (isFp8(shape.dtype) ? 2 : e);
  for (const [r, side] of sides.entries()) {
    const u = side.unit;
    const B = local[r];
    const corr = corrs[r];
    for (let i = 0; i < n; i++) {
      for (let s = 0; s < Q; s++) {
        const ix = sub(side, s);
        corr.wait(B.corrFull[s], i);
        corr.exec(u('fma'), (FA4_BLOCK_M * 4) / gpu.fmaPerClk, 'read scale, vote', `O${s}`, { phase: opPhase(['rescale'], kv[i], ix) });
        // Without lazy rescaling every block after the first multiplies O by exp2(m_old − m_new).
        // With it, O is rescaled only where the vote finds a row whose max grew by more than
        // 2^8: the iterations the numeric run reports (rescaleAt), else none once the first
        // block has set the max (growth that large needs outlier scores).
        const rescale = i > 0 && (f.lazyRescale ? (f.rescaleAt?.includes(i) ?? false) : true);
        if (rescale) {
          const rescaled = { phase: opPhase(['rescale'], kv[i], ix) };
          corr.exec(u('tmem'), tmemMove(oBytes), `tcgen05.ld O${s}`, `O${s}`, rescaled);
          corr.exec(u('fma'), (FA4_BLOCK_M * shape.dv) / (gpu.fmaPerClk * PACKED), `O${s} *= exp2(m_old − m_new)`, `O${s}`, rescaled);
          corr.exec(u('tmem'), tmemMove(oBytes), `tcgen05.st O${s}`, `O${s}`, rescaled);
        }
        corr.arrive(pFullORescaled[s]);
        corr.arrive(B.corrEmpty[s]);
      }
    }
    for (let s = 0; s < Q; s++) {
      if (n === 0) break;
      const ix = sub(side, s);
      corr.wait(oFull[s], 0);
      corr.exec(u('tmem'), tmemMove(oBytes), `tcgen05.ld O${s}`, `O${s}`, {
        phase: opPhase(['normalize'], null, ix),
        memDone: [tmemSpec(side, `O${s}`, L.tmem.o[s], shape.dv, 'release', `O${s}`)],
      });
      corr.exec(u('fma'), (FA4_BLOCK_M * shape.dv * 2) / (gpu.fmaPerClk * PACKED), `O${s} / l, cvt`, `O${s}`, {
        phase: opPhase(['normalize'], null, ix),
      });
      // d 192 (overlap_sO_sQ): O is staged over sQ_s, whose Q was last read by the final S MMA, done before O_full.
      if (L.cfg.overlapSOSQ)
        corr.mem({
          space: 'smem',
          buffer: `${p}${side.tag}sQ`,
          stage: s,
          offset: L.qOff[s],
          bytes: qBytes,
          action: 'release',
          tile: qTileName(side, s),
        });
      corr.exec(u('smem'), oTile / gpu.smemBytesPerClk, `st.shared O${s}`, `O${s}`, {
        phase: opPhase(['write'], null, ix, ['O']),
        mem: [{ space: 'smem', buffer: `${p}${side.tag}sO`, stage: s, offset: L.oOff[s], bytes: oTile, action: 'fill', tile: `O${s}` }],
      });
      corr.arrive(B.epiFull[s]);
    }
    const epi = epis[r];
    for (let s = 0; s < Q; s++) {
      if (n === 0) {
        // A split with no K/V block stores nothing, but the combine still counts it.
        if (combineAfter !== undefined) epi.arrive(combineAfter);
        continue;
      }
      const ix = sub(side, s);
      const oName = qTileName(side, s).replace('Q', 'O');
      epi.wait(B.epiFull[s], 0);
      epi.issue(u('tma'), load(oTile), `tma store O${s}`, `O${s}`, {
        phase: opPhase(['write'], null, ix, ['O']),
        latency: gpu.copyLatencyCycles,
        memDone: [
          { space: 'smem', buffer: `${p}${side.tag}sO`, stage: s, offset: L.oOff[s], bytes: oTile, action: 'release', tile: `O${s}` },
          hbmOut(shape, work, (Q * G * work.qBlock + ix) * FA4_BLOCK_M, FA4_BLOCK_M, oName, splits > 1, splits),
        ],
        ...(combineAfter !== undefined ? { arrive: [combineAfter] } : {}),
      });
    }
  }
  if (combineAfter !== undefined && ctx.ctaIndex === ctx.ctaCount - 1)
    drawSplitCombine(k, ctx, splits, combineAfter, fa4CombineOf(shape, splits));
}

export const fa4Hw: HwAlgorithm = {
  id: 'fa4',
  name: 'FlashAttention-4 (SM100: TMEM, tcgen05, softmax/correction warpgroups)',
  arch: [100],
  switches: {
    lazyRescale: {
      ...FA4_FEATURES.lazyRescale,
      absent: (shape) =>
        fa4Tiles(shape).dedicatedHd256
          ? 'the d = 256 kernel rescales O after every block, with no threshold (correction_rescale, sm100_hd256_2cta_fmha_forward.py@0251105a)'
          : undefined,
    },
    exp2Emulation: FA4_FEATURES.exp2Emulation,
    stages: STAGES_SWITCH,
    rescaleAt: RESCALE_AT_SWITCH,
  },
  // A CTA holds q_stage Q tiles, each its own sub-unit (softmax warpgroup, correction stage).
  // A grid entry is one CTA, or one pair in 2-CTA mode: sub-units are its 128-row Q tiles (pair-local index).
  geometry: (sheet, shape) => {
    const cfg = fa4Tiles(shape);
    return { ctaRows: ctaRows(cfg) * cfg.ctaGroup, subRows: sheet.tiles.block_m };
  },
  // The dispatch's tile scheduler decides the order; the d = 256 kernel is not persistent
  // (is_persistent = False, l. 115) and its blocks start in grid order.
  longestFirst: (shape) => fa4DispatchOf(shape).longestFirst,
  // StaticPersistentTileScheduler: tile_idx += grid_dim (tile_scheduler.py@0251105a l. 402-434).
  staticPersistent: (shape, gpu) => fa4DispatchOf(shape, gpu.smCount).tileScheduler === 'StaticPersistentTileScheduler',
  resources,
  grid,
  build,
  maskedSteps,
  kvTile: (shape) => ({ blockN: fa4DispatchOf(shape).tileN }),
  epilogueKernelUs: (gpu, shape) => splitCombineUs(gpu, shape, fa4DispatchOf(shape, gpu.smCount).numSplits),
  hbmBytes: (shape, _f, gpu) => ioBytes(shape) + partialBytes(shape, fa4DispatchOf(shape, gpu.smCount).numSplits),
};
