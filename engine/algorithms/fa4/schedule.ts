// FlashAttention-4 on SM100 (seed 003: the FA4 forward kernel for Blackwell).
//
// One CTA owns two 128-row Q tiles (q_stage = 2) and 16 warps:
//   softmax0 (warps 0-3) and softmax1 (warps 4-7): one per Q tile, 200 registers;
//   correction (warps 8-11): rescales O in TMEM when the row max moved, 64 registers;
//   mma (warp 12): issues every tcgen05 MMA, 48 registers;
//   epilogue (warp 13): TMA-stores O, 48 registers;
//   load (warp 14): TMA loads of Q and K/V, 48 registers;
//   empty (warp 15): holds 24 registers and does nothing.
// TMEM (128 lanes × 512 columns): S0 at column 0, S1 at 128, O0 and O1 after them; P_i
// (16-bit, two per 32-bit column) is written over the second half of S_i (column 64 / 192).
// SMEM: sScale, sQ × 2, and the K/V ring. For d = 192, dv = 128 the ring is uneven:
// Large (K) + Small (V) + Large, stage stride (L+S)/2, and the middle stage moves right by
// (L−S)/2 when it holds V and left when it holds K, flipping with the barrier phase; a K
// landing in stage 0 must also wait for stage 1, whose previous K overlaps it.
// Load order (seed 003's table): Q0, K_last, Q1, V_last, then K/V of the remaining blocks
// from the right. The MMA warp computes S0 = Q0·Kᵀ, S1 = Q1·Kᵀ, then per block
// O_s += P_s·V (the first 3/4 as soon as softmax wrote 3/4 of P, the rest after) and the
// next S_s. Correction rescales O only when some row max grew by more than 8 (log2 units,
// 16-bit types): with lazy rescaling on it skips the rescale unless a row needs it.

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
  visibleKvRange,
  crossesDiagonal,
  kvBlocksOf,
  ioBytes,
  hbmOut,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
  RESCALE_AT_SWITCH,
  STAGES_SWITCH,
} from '../../hw/model.ts';
import { FA4_FEATURES } from './forward.ts';
import type { Kernel, MemSpec } from '../../hw/scheduler.ts';

/** Calibration (FA4 on B200 BF16, ~1600 TFLOP/s at d = 128): fraction of the tcgen05 datasheet rate reached in the loop. */
export const UMMA_EFFICIENCY = 0.75;
/** Cycles from an MMA's last instruction to its tcgen05.commit arriving. */
export const UMMA_LATENCY = 100;
/** TMEM ↔ register traffic per SM per cycle (4 sub-partitions × 32 lanes × 4 B; model assumption). */
export const TMEM_BYTES_PER_CLK = 512;
/** Lazy rescale threshold in log2 units for 16-bit types (seed 003; FA4 source). */
export const RESCALE_THRESHOLD_LOG2 = 8;
/** Blackwell's packed FFMA2 does two fp32 FMAs per lane per instruction: the softmax code is written with it. */
const PACKED = 2;

export const FA4_BLOCK_M = 128;
export const FA4_BLOCK_N = 128;
export const FA4_Q_STAGE = 2;

/** Fraction of exponentials the polynomial evaluates: FA4's e2e_freq 16 / e2e_res 4 on 32-element fragments, last fragment on MUFU. */
export function exp2EmulationFraction(blockN: number): number {
  const frg = blockN / 32;
  return frg <= 1 ? 0 : (4 / 16) * ((frg - 1) / frg);
}

export function fa4Uneven(shape: ProblemShape): boolean {
  return shape.d !== shape.dv && shape.d === 192 && shape.dv === 128;
}

function kvStages(shape: ProblemShape, f: HwFeatures): number {
  // The uneven Large-Small-Large ring is three stages by construction.
  if (fa4Uneven(shape)) return 3;
  return f.stages ?? 3;
}

interface Fa4Layout {
  sheet: ResourceSheet;
  qOff: number[];
  kvBase: number;
  kBytes: number;
  vBytes: number;
  stride: number;
  unevenShift: number;
  stages: number;
  tmem: { s: number[]; p: number[]; o: number[] };
}

function layout(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): Fa4Layout {
  const e = elemBytes(shape.dtype);
  const sheet = emptySheet('fa4', gpu, FA4_BLOCK_M, FA4_BLOCK_N);
  const stages = kvStages(shape, f);
  sheet.q_stage = FA4_Q_STAGE;
  sheet.kv_stage = stages;
  const dPad = Math.ceil(shape.d / 16) * 16;
  const dvPad = Math.ceil(shape.dv / 16) * 16;
  const kBytes = FA4_BLOCK_N * dPad * e;
  const vBytes = FA4_BLOCK_N * dvPad * e;
  const uneven = fa4Uneven(shape);
  // Struct order of the kernel's SharedStorage: mbarriers, TMEM holding word, sScale, sO (empty: O lives in TMEM), sQ, sK.
  const mbarBytes = 15 * 8;
  let off = 0;
  const push = (name: string, stage: number, bytes: number, align: number) => {
    off = Math.ceil(off / align) * align;
    sheet.smem.buffers.push({ name, stage, offset: off, bytes });
    off += bytes;
    return off - bytes;
  };
  push('mbarriers', 0, mbarBytes, 8);
  push('tmem_holding', 0, 4, 4);
  push('sScale', 0, FA4_Q_STAGE * FA4_BLOCK_M * 2 * 4, 4);
  off = Math.ceil(off / 1024) * 1024;
  const qOff = [push('sQ', 0, FA4_BLOCK_M * dPad * e, 1024), push('sQ', 1, FA4_BLOCK_M * dPad * e, 1)];
  off = Math.ceil(off / 1024) * 1024;
  const kvBase = off;
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
  for (let s = 0; s < stages; s++) sheet.smem.buffers.push({ name: 'sKV', stage: s, offset: kvBase + s * stride, bytes: uneven ? (s === 1 ? vBytes : kBytes) : stride });
  off = kvBase + ringBytes;
  sheet.smem.used_bytes = off;
  sheet.notes.push(`K/V tiles: ${FA4_Q_STAGE}×sQ = ${(2 * FA4_BLOCK_M * dPad * e) / 1024} KB, K/V ring = ${ringBytes / 1024} KB${uneven ? ' (Large-Small-Large)' : ''}; total with barriers, sScale and 1024-byte alignment = ${off} bytes.`);
  if (uneven) {
    sheet.notes.push(
      'Seed 003 sums SMEM to 224.5 KB counting sScale as 0.5 KB; sScale holds q_stage·128·2 fp32 = 2 KB, and with the 1024-byte alignment the struct ends at exactly 227 KB, the per-block limit.',
    );
  }
  // TMEM columns.
  const s = [0, FA4_BLOCK_N];
  const p = s.map((c) => c + FA4_BLOCK_N / 2);
  const o = [2 * FA4_BLOCK_N, 2 * FA4_BLOCK_N + dvPad];
  if (sheet.tmem) {
    sheet.tmem.buffers.push(
      { name: 'S0', column: s[0], columns: FA4_BLOCK_N },
      { name: 'S1', column: s[1], columns: FA4_BLOCK_N },
      { name: 'P0', column: p[0], columns: FA4_BLOCK_N / 2 },
      { name: 'P1', column: p[1], columns: FA4_BLOCK_N / 2 },
      { name: 'O0', column: o[0], columns: dvPad },
      { name: 'O1', column: o[1], columns: dvPad },
    );
    sheet.notes.push('P_i is written over the second half of S_i (16-bit values, two per 32-bit column) once softmax has read S_i.');
  }
  sheet.roles.push(
    { name: 'softmax0', warps: [0, 1, 2, 3], registers: 200 },
    { name: 'softmax1', warps: [4, 5, 6, 7], registers: 200 },
    { name: 'correction', warps: [8, 9, 10, 11], registers: 64 },
    { name: 'mma', warps: [12], registers: 48 },
    { name: 'epilogue', warps: [13], registers: 48 },
    { name: 'load', warps: [14], registers: 48 },
    { name: 'empty', warps: [15], registers: 24 },
  );
  if (gpu.sm !== 100) sheet.does_not_fit.push(`arch: FA4 is written for SM100 (tcgen05, TMEM); ${gpu.name} is SM${gpu.sm}`);
  if (shape.dtype === 'fp32') sheet.does_not_fit.push('dtype: FA4 takes fp16 or bf16 inputs (its MMAs have no fp32 path)');
  if (isFp8(shape.dtype)) sheet.does_not_fit.push('dtype: FlashScope models no FP8 path for FA4 (FP8 is modelled for FA3); pick fp16 or bf16');
  if (uneven && f.stages !== undefined && f.stages !== 3) sheet.does_not_fit.push(`stages: the uneven d = 192, dv = 128 K/V ring (Large-Small-Large) has exactly 3 stages, got ${f.stages}`);
  if (f.stages !== undefined && f.stages < 2) sheet.does_not_fit.push(`stages: FA4 needs at least 2 K/V stages (K and V of one block are in flight together), got ${f.stages}`);
  finishSheet(sheet, gpu);
  return { sheet, qOff, kvBase, kBytes, vBytes, stride, unevenShift, stages, tmem: { s, p, o } };
}

function grid(_gpu: GpuSpec, shape: ProblemShape): CtaWork[] {
  const rows = FA4_BLOCK_M * FA4_Q_STAGE;
  const out: CtaWork[] = [];
  for (let b = 0; b < shape.batch; b++)
    for (let h = 0; h < shape.hq; h++)
      for (let i = 0; i < ceilDiv(shape.nq, rows); i++) {
        const [kvFrom, kvTo] = visibleKvRange(shape, i * rows, Math.min(shape.nq, (i + 1) * rows), FA4_BLOCK_N);
        out.push({ b, h, qBlock: i, kvFrom, kvTo, reverse: true, split: 0 });
      }
  return out;
}

/** The load sequence of one CTA, in issue order, with SMEM placement (seed 003's table). */
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

export function fa4LoadOrder(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, kvBlocks: number[], qBlock = 0): Fa4Load[] {
  const L = layout(gpu, shape, f);
  const e = elemBytes(shape.dtype);
  const qBytes = FA4_BLOCK_M * Math.ceil(shape.d / 16) * 16 * e;
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
  const q = (s: number) => out.push({ tile: `Q${FA4_Q_STAGE * qBlock + s}`, kind: 'Q', stage: s, phase: 1, offset: L.qOff[s], bytes: qBytes, kvIndex: -1 });
  if (kvBlocks.length === 0) return out;
  q(0);
  kvLoad('K', kvBlocks[0]);
  q(1);
  kvLoad('V', kvBlocks[0]);
  for (let i = 1; i < kvBlocks.length; i++) {
    kvLoad('K', kvBlocks[i]);
    kvLoad('V', kvBlocks[i]);
  }
  return out;
}

function build(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, shape, features: f } = ctx;
  const L = layout(gpu, shape, f);
  const p = prefix(ctx);
  const e = elemBytes(shape.dtype);
  const kv = kvBlocksOf(work);
  const n = kv.length;
  const loads = fa4LoadOrder(gpu, shape, f, kv, work.qBlock);
  const S = L.stages;
  // K/V loads by their index in the K0 V0 K1 V1 ... sequence: K of iteration i is 2i, V is 2i + 1.
  const kvLoads = loads.filter((x) => x.kvIndex >= 0);
  k.fifoUnits.add('tensor');
  for (const b of L.sheet.smem.buffers) {
    if (b.name === 'mbarriers' || b.name === 'tmem_holding') continue;
    k.alloc({ space: 'smem', buffer: `${p}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });
  }
  const lanes = gpu.tmem?.lanes ?? 128;
  const tmemSpec = (name: string, col: number, cols: number, action: 'fill' | 'release', tile: string): MemSpec => ({
    space: 'tmem',
    buffer: `${p}tmem.${name}`,
    stage: 0,
    offset: col,
    bytes: cols * lanes * 4,
    action,
    tile,
  });
  for (const b of L.sheet.tmem?.buffers ?? []) k.alloc({ space: 'tmem', buffer: `${p}tmem.${b.name}`, stage: 0, offset: b.column, bytes: b.columns * lanes * 4 });

  const rate = tensorRate(gpu, shape.dtype) * UMMA_EFFICIENCY;
  const qk = mmaCycles(FA4_BLOCK_M, FA4_BLOCK_N, shape.d, rate);
  const pv = mmaCycles(FA4_BLOCK_M, shape.dv, FA4_BLOCK_N, rate);
  const elems = FA4_BLOCK_M * FA4_BLOCK_N;
  // The polynomial runs only where no mask is applied (FA4 passes e2e = mask_fn is None) and d <= 128.
  const emuFrac = f.exp2Emulation && shape.d <= 128 ? exp2EmulationFraction(FA4_BLOCK_N) : 0;
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const tmemMove = (bytes: number) => bytes / TMEM_BYTES_PER_CLK;

  const qFull = [k.mbarrier(`${p}load_q_full[0]`), k.mbarrier(`${p}load_q_full[1]`)];
  const kvFull: number[] = [];
  const kvEmpty: number[] = [];
  for (let s = 0; s < S; s++) {
    kvFull.push(k.mbarrier(`${p}kv_full[${s}]`));
    kvEmpty.push(
      k.mbarrier(`${p}kv_empty[${s}]`, 1, (ph) => {
        const ld = kvLoads[s + ph * S];
        return ld ? { space: 'smem', buffer: `${p}sKV`, stage: s, offset: ld.offset, bytes: ld.bytes, action: 'release', tile: ld.tile } : null;
      }),
    );
  }
  const sFull = [0, 1].map((s) => k.mbarrier(`${p}S_full[${s}]`));
  const corrFull = [0, 1].map((s) => k.mbarrier(`${p}softmax_corr_full[${s}]`));
  const corrEmpty = [0, 1].map((s) => k.mbarrier(`${p}softmax_corr_empty[${s}]`));
  const pFullORescaled = [0, 1].map((s) => k.mbarrier(`${p}P_full_O_rescaled[${s}]`, 2));
  const pFull2 = [0, 1].map((s) => k.mbarrier(`${p}P_full_2[${s}]`));
  const oFull = [0, 1].map((s) => k.mbarrier(`${p}O_full[${s}]`));
  const epiFull = [0, 1].map((s) => k.mbarrier(`${p}corr_epi_full[${s}]`));

  // Load warp.
  const ld = k.role({ name: `${p}load`, warps: [14], registers: 48, job: 'TMA loads: Q0, K, Q1, V, then K/V from the last block down' });
  for (const x of loads) {
    if (x.kind === 'Q') {
      ld.issue('tma', load(x.bytes), `tma ${x.tile}`, x.tile, {
        latency: gpu.copyLatencyCycles,
        arrive: [qFull[x.stage]],
        mem: [{ space: 'smem', buffer: `${p}sQ`, stage: x.stage, offset: x.offset, bytes: x.bytes, action: 'fill', tile: x.tile }],
      });
      continue;
    }
    const round = Math.floor(x.kvIndex / S);
    ld.wait(kvEmpty[x.stage], round - 1);
    // Uneven ring: a K landing in stage 0 overlaps the Large tile the middle stage held last round.
    if (L.unevenShift > 0 && x.kind === 'K' && x.stage === 0) ld.wait(kvEmpty[1], round - 1);
    ld.issue('tma', load(x.bytes), `tma ${x.tile}`, x.tile, {
      latency: gpu.copyLatencyCycles,
      arrive: [kvFull[x.stage]],
      mem: [{ space: 'smem', buffer: `${p}sKV`, stage: x.stage, offset: x.offset, bytes: x.bytes, action: 'fill', tile: x.tile }],
    });
  }

  // MMA warp.
  const kvOf = (kind: 'K' | 'V', i: number) => kvLoads[2 * i + (kind === 'K' ? 0 : 1)];
  const mma = k.role({ name: `${p}mma`, warps: [12], registers: 48, job: 'issues every tcgen05 MMA: S = Q·Kᵀ into TMEM, O += P·V with P read from TMEM' });
  const qkOp = (s: number, i: number, extraArrive: number[]) => {
    mma.issue('tensor', qk, `S${s}=Q${s}·K${kv[i]}ᵀ`, `S${s}`, {
      latency: UMMA_LATENCY,
      chunks: 1,
      arrive: [sFull[s], ...extraArrive],
      memBegin: [tmemSpec(`S${s}`, L.tmem.s[s], FA4_BLOCK_N, 'fill', `S${s}.${kv[i]}`)],
    });
  };
  const pvOps = (i: number, last: boolean) => {
    const vx = kvOf('V', i);
    for (let s = 0; s < 2; s++) {
      mma.wait(pFullORescaled[s], i);
      mma.issue('tensor', pv * 0.75, `O${s}+=P${s}·V${kv[i]} (3/4)`, `O${s}`, {
        latency: 0,
        memBegin: i === 0 ? [tmemSpec(`O${s}`, L.tmem.o[s], shape.dv, 'fill', `O${s}`)] : undefined,
      });
      mma.wait(pFull2[s], i);
      const arrive = [...(last ? [oFull[s]] : []), ...(s === 1 ? [kvEmpty[vx.stage]] : [])];
      mma.issue('tensor', pv * 0.25, `O${s}+=P${s}·V${kv[i]} (last 1/4)`, `O${s}`, {
        latency: UMMA_LATENCY,
        arrive,
        memDone: [tmemSpec(`P${s}`, L.tmem.p[s], FA4_BLOCK_N / 2, 'release', `P${s}.${kv[i]}`)],
      });
      if (!last && s === 0) mma.wait(kvFull[kvOf('K', i + 1).stage], Math.floor(kvOf('K', i + 1).kvIndex / S));
      if (!last) qkOp(s, i + 1, s === 1 ? [kvEmpty[kvOf('K', i + 1).stage]] : []);
    }
  };
  if (n > 0) {
    const k0 = kvOf('K', 0);
    mma.wait(qFull[0], 0);
    mma.wait(kvFull[k0.stage], Math.floor(k0.kvIndex / S));
    qkOp(0, 0, []);
    mma.wait(qFull[1], 0);
    qkOp(1, 0, [kvEmpty[k0.stage]]);
    for (let i = 0; i < n; i++) {
      const vx = kvOf('V', i);
      mma.wait(kvFull[vx.stage], Math.floor(vx.kvIndex / S));
      pvOps(i, i === n - 1);
    }
  }

  // Softmax warpgroups.
  for (let s = 0; s < 2; s++) {
    const sm = k.role({ name: `${p}softmax${s}`, warps: [4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3], registers: 200, job: `online softmax of Q tile ${s}: S from TMEM, P back over half of S` });
    for (let i = 0; i < n; i++) {
      const j = kv[i];
      sm.wait(sFull[s], i);
      sm.exec('tmem', tmemMove(elems * 4), `tcgen05.ld S${s}`, `S${s}`, { memDone: [tmemSpec(`S${s}`, L.tmem.s[s], FA4_BLOCK_N, 'release', `S${s}.${j}`)] });
      const masked = crossesDiagonal(shape, (FA4_Q_STAGE * work.qBlock + s) * FA4_BLOCK_M, j, FA4_BLOCK_N);
      const emu = masked ? 0 : emuFrac;
      if (masked) sm.exec('fma', (elems * 2) / (gpu.fmaPerClk * PACKED), 'causal mask', `S${s}`);
      sm.exec('fma', (elems * 1) / (gpu.fmaPerClk * PACKED), 'row max, scale to sScale', `S${s}`);
      sm.arrive(corrFull[s]);
      sm.exec('fma', elems / (gpu.fmaPerClk * PACKED), 'x·scale − max', `S${s}`);
      if (emu < 1) sm.exec('mufu', (elems * (1 - emu)) / gpu.mufuPerClk, `exp2 MUFU (${Math.round((1 - emu) * 100)}%)`, `P${s}`);
      if (emu > 0) sm.exec('fma', (elems * emu * EXP2_POLY_FMA_OPS) / (gpu.fmaPerClk * PACKED), `exp2 cubic polynomial (${Math.round(emu * 100)}%)`, `P${s}`);
      sm.exec('tmem', tmemMove((elems * e * 3) / 4), `tcgen05.st P${s} (3/4)`, `P${s}`, {
        mem: [tmemSpec(`P${s}`, L.tmem.p[s], FA4_BLOCK_N / 2, 'fill', `P${s}.${j}`)],
      });
      sm.arrive(pFullORescaled[s]);
      sm.exec('tmem', tmemMove((elems * e) / 4), `tcgen05.st P${s} (last 1/4)`, `P${s}`);
      sm.arrive(pFull2[s]);
      sm.wait(corrEmpty[s], i);
      sm.exec('fma', (elems * (SOFTMAX_FMA_OPS - 2)) / (gpu.fmaPerClk * PACKED), 'row sum, cvt', `P${s}`);
    }
  }

  // Correction warpgroup.
  const corr = k.role({ name: `${p}correction`, warps: [8, 9, 10, 11], registers: 64, job: 'rescales O in TMEM when a row max moved; normalizes O at the end' });
  const oBytes = FA4_BLOCK_M * shape.dv * 4;
  for (let i = 0; i < n; i++) {
    for (let s = 0; s < 2; s++) {
      corr.wait(corrFull[s], i);
      corr.exec('fma', (FA4_BLOCK_M * 4) / gpu.fmaPerClk, 'read scale, vote', `O${s}`);
      // Without lazy rescaling every block after the first multiplies O by exp2(m_old − m_new).
      // With it, O is rescaled only where the vote finds a row whose max grew by more than
      // 2^8: the iterations the numeric run reports (rescaleAt), else none once the first
      // block has set the max (growth that large needs outlier scores).
      const rescale = i > 0 && (f.lazyRescale ? (f.rescaleAt?.includes(i) ?? false) : true);
      if (rescale) {
        corr.exec('tmem', tmemMove(oBytes), `tcgen05.ld O${s}`, `O${s}`);
        corr.exec('fma', (FA4_BLOCK_M * shape.dv) / (gpu.fmaPerClk * PACKED), `O${s} *= exp2(m_old − m_new)`, `O${s}`);
        corr.exec('tmem', tmemMove(oBytes), `tcgen05.st O${s}`, `O${s}`);
      }
      corr.arrive(pFullORescaled[s]);
      corr.arrive(corrEmpty[s]);
    }
  }
  const qBytes = FA4_BLOCK_M * Math.ceil(shape.d / 16) * 16 * e;
  for (let s = 0; s < 2; s++) {
    if (n === 0) break;
    corr.wait(oFull[s], 0);
    corr.exec('tmem', tmemMove(oBytes), `tcgen05.ld O${s}`, `O${s}`, { memDone: [tmemSpec(`O${s}`, L.tmem.o[s], shape.dv, 'release', `O${s}`)] });
    corr.exec('fma', (FA4_BLOCK_M * shape.dv * 2) / (gpu.fmaPerClk * PACKED), `O${s} / l, cvt`, `O${s}`);
    // O is staged for the TMA store over sQ_s: Q_s was last read by the final S MMA, done before O_full.
    corr.mem({ space: 'smem', buffer: `${p}sQ`, stage: s, offset: L.qOff[s], bytes: qBytes, action: 'release', tile: `Q${FA4_Q_STAGE * work.qBlock + s}` });
    corr.exec('smem', (FA4_BLOCK_M * shape.dv * e) / gpu.smemBytesPerClk, `st.shared O${s}`, `O${s}`, {
      mem: [{ space: 'smem', buffer: `${p}sO`, stage: s, offset: L.qOff[s], bytes: FA4_BLOCK_M * shape.dv * e, action: 'fill', tile: `O${s}` }],
    });
    corr.arrive(epiFull[s]);
  }
  const epi = k.role({ name: `${p}epilogue`, warps: [13], registers: 48, job: 'TMA store of O from SMEM' });
  for (let s = 0; s < 2; s++) {
    if (n === 0) break;
    epi.wait(epiFull[s], 0);
    epi.issue('tma', load(FA4_BLOCK_M * shape.dv * e), `tma store O${s}`, `O${s}`, {
      latency: gpu.copyLatencyCycles,
      memDone: [
        { space: 'smem', buffer: `${p}sO`, stage: s, offset: L.qOff[s], bytes: FA4_BLOCK_M * shape.dv * e, action: 'release', tile: `O${s}` },
        hbmOut(shape, work, (FA4_Q_STAGE * work.qBlock + s) * FA4_BLOCK_M, FA4_BLOCK_M, `O${FA4_Q_STAGE * work.qBlock + s}`),
      ],
    });
  }
  k.role({ name: `${p}empty`, warps: [15], registers: 24, job: 'idle: gives its registers to the others' });
}

export const fa4Hw: HwAlgorithm = {
  id: 'fa4',
  name: 'FlashAttention-4 (SM100: TMEM, tcgen05, softmax/correction warpgroups)',
  arch: [100],
  switches: { lazyRescale: FA4_FEATURES.lazyRescale, exp2Emulation: FA4_FEATURES.exp2Emulation, stages: STAGES_SWITCH, rescaleAt: RESCALE_AT_SWITCH },
  longestFirst: true,
  resources: (gpu, shape, f) => layout(gpu, shape, f).sheet,
  grid,
  build,
  hbmBytes: ioBytes,
};
