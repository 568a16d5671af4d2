// The FlashAttention-2 backward on SM80 (Dao-AILab/flash-attention csrc/flash_attn/src:
// flash_bwd_kernel.h, the sequence-parallel path; flash_bwd_launch_template.h for the
// tiles). One CTA of 8 warps owns column block n of K and V (block_n keys) of one
// (batch, query head); there is no warp specialization. K_n and V_n are loaded once with
// cp.async; then, for every row block m that sees those keys, all warps together:
//   S = Q_m·K_nᵀ and dP = dO_m·V_nᵀ (mma.sync, the warps tiled over the block),
//   P = exp2(S·scale − LSE_m), dS = P ∘ (dP − D_m), both written to SMEM in 16 bits,
//   __syncthreads, dV += Pᵀ·dO_m, __syncthreads (dO_m may be overwritten: the next dO
//   load starts), dQ_m = dS·K_n and dK += dSᵀ·Q_m, and each thread adds its part of dQ_m
//   into the fp32 dQaccum in HBM with atomicAdd (red.global.add.f32).
// Q is double-buffered (Q_{m+1} loads during step m), dO has one buffer. dK and dV leave
// through SMEM at the end; a preprocessing kernel computes D before, a conversion kernel
// turns dQaccum into dQ after. On SM90/SM100 the same code runs with mma.sync at the
// GPU's mmaSyncFraction of the native rate (the FA3 paper's "FA2" backward on H100).

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
  mmaCycles,
  prefix,
  regAlloc,
  requireHalf,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type ProblemShape,
} from '../../hw/model.ts';
import type { Kernel, MemSpec } from '../../hw/scheduler.ts';
import { mmaSyncRate } from '../../hw/schedules/warp-tiled.ts';
import { BWD_ELEMENT_OPS } from '../fa3/backward-schedule.ts';

/**
 * Calibration (FA2 paper Fig. 6, A100 backward, 196 TFLOP/s at d = 128 and 170 at d = 64
 * for 16K tokens): the share of the mma.sync rate the backward's GEMMs reach. Below the
 * forward's 0.8: each operand is re-read from SMEM through ldmatrix by two to four warps.
 */
export const MMA_SYNC_BWD_EFFICIENCY = 0.78;
/** Per-iteration bookkeeping of a warp (index math, predicates, barrier arrival), cycles. */
export const FA2_BWD_WARP_OVERHEAD = 40;

const WARPS = 8;

export interface Fa2BwdConfig {
  blockM: number;
  blockN: number;
  /** Q buffers: 2, or 1 where the tiles would not fit (No_double_buffer). */
  qStages: number;
}

/** The launch template's SM80 rows for GPUs with at least 144 KB of SMEM per block. */
export function fa2BwdConfig(gpu: GpuSpec, shape: ProblemShape): Fa2BwdConfig {
  const d = Math.max(shape.d, shape.dv);
  if (d <= 64) return { blockM: 128, blockN: 128, qStages: 2 };
  if (d <= 128) return { blockM: 64, blockN: 128, qStages: 2 };
  // d = 256 drops the Q double buffer below 176 KB (A100).
  if (d > 192 && gpu.smemPerCtaBytes < 176 * 1024) return { blockM: 64, blockN: 64, qStages: 1 };
  return { blockM: 64, blockN: 64, qStages: 2 };
}

function registersPerThread(cfg: Fa2BwdConfig, shape: ProblemShape): number {
  // dK and dV accumulators (block_n × d fp32 over 256 threads), S/dP fragments, addresses.
  const acc = (cfg.blockN * (shape.d + shape.dv)) / (WARPS * 32);
  const sdp = (2 * cfg.blockM * cfg.blockN) / (WARPS * 32);
  return Math.min(255, regAlloc(acc + sdp + 64));
}

function layout(sheet: ResourceSheet, gpu: GpuSpec, shape: ProblemShape): Fa2BwdConfig {
  const cfg = fa2BwdConfig(gpu, shape);
  const e = elemBytes(shape.dtype);
  let off = 0;
  const put = (name: string, stage: number, bytes: number) => {
    off = Math.ceil(off / 128) * 128;
    sheet.smem.buffers.push({ name, stage, offset: off, bytes });
    off += bytes;
  };
  for (let s = 0; s < cfg.qStages; s++) put('sQ', s, cfg.blockM * shape.d * e);
  put('sdO', 0, cfg.blockM * shape.dv * e);
  put('sK', 0, cfg.blockN * shape.d * e);
  put('sV', 0, cfg.blockN * shape.dv * e);
  put('sdS', 0, cfg.blockM * cfg.blockN * e);
  put('sP', 0, cfg.blockM * cfg.blockN * e);
  for (let s = 0; s < cfg.qStages; s++) put('sLSE', s, cfg.blockM * 4);
  put('sD', 0, cfg.blockM * 4);
  sheet.smem.used_bytes = off;
  sheet.q_stage = cfg.qStages;
  return cfg;
}

function resources(gpu: GpuSpec, shape: ProblemShape): ResourceSheet {
  const cfg = fa2BwdConfig(gpu, shape);
  const sheet = emptySheet('fa2', gpu, cfg.blockM, cfg.blockN);
  layout(sheet, gpu, shape);
  const regs = registersPerThread(cfg, shape);
  for (let w = 0; w < WARPS; w++) sheet.roles.push({ name: `warp${w}`, warps: [w], registers: regs });
  sheet.notes.push('dQ partials go from registers straight into dQaccum (fp32, HBM) with atomicAdd; nothing in SMEM holds them.');
  sheet.notes.push(
    'The LSE and D rows of the current block sit in SMEM next to the tiles (the kernel keeps them in a small buffer after the tiles).',
  );
  if (gpu.sm > 80)
    sheet.notes.push(
      `Runs on SM${gpu.sm} with SM80 instructions: mma.sync at ${Math.round(gpu.mmaSyncFraction * 100)}% of the native tensor rate.`,
    );
  if (Math.max(shape.d, shape.dv) > 256)
    sheet.does_not_fit.push(`head dim: the FA2 backward has tiles up to d = 256, got ${Math.max(shape.d, shape.dv)}`);
  requireHalf(sheet, shape, 'the FA2 backward');
  return finishSheet(sheet, gpu);
}

function build(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, shape } = ctx;
  const sheet = resources(gpu, shape);
  const cfg = fa2BwdConfig(gpu, shape);
  const { blockM: M, blockN: N } = cfg;
  const e = elemBytes(shape.dtype);
  const p = prefix(ctx);
  const rows = kvBlocksOf(work);
  const n = rows.length;
  const col = work.qBlock;
  const off = (name: string, stage: number) => sheet.smem.buffers.find((b) => b.name === name && b.stage === stage)!.offset;
  for (const b of sheet.smem.buffers) k.alloc({ space: 'smem', buffer: `${p}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });
  const tile = (buf: string, stage: number, bytes: number, name: string, action: 'fill' | 'release' = 'fill'): MemSpec => ({
    space: 'smem',
    buffer: `${p}${buf}`,
    stage,
    offset: off(buf, stage),
    bytes,
    action,
    tile: name,
  });

  // Each warp does an eighth of every GEMM on its sub-partition's tensor core.
  const spRate = (mmaSyncRate(gpu, shape) * MMA_SYNC_BWD_EFFICIENCY) / 4;
  const share = (m: number, nn: number, kk: number) => mmaCycles(m, nn, kk, spRate) / WARPS;
  const gS = share(M, N, shape.d);
  const gDp = share(M, N, shape.dv);
  const gDv = share(N, shape.dv, M);
  const gDq = share(M, shape.d, N);
  const gDk = share(N, shape.d, M);
  const elems = (M * N) / WARPS;
  const fma = gpu.fmaPerClk / 4;
  const mufu = gpu.mufuPerClk / 4;
  const copy = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const qBytes = M * shape.d * e + M * 4;
  const doBytes = M * shape.dv * e + M * 4;
  const sync = k.named(`${p}__syncthreads`, WARPS);

  for (let w = 0; w < WARPS; w++) {
    const sp = (ctx.ctaIndex * WARPS + w) % 4;
    const lead = w === 0;
    const r = k.role({
      name: `${p}warp${w}`,
      warps: [w],
      registers: sheet.roles[0].registers,
      job: `FA2 backward warp: an eighth of every GEMM of column block ${col}, of the exps and dS, of every copy and of the dQ atomics`,
    });
    r.delay((ctx.ctaIndex / ctx.ctaCount) * (gS + gDp + gDv + gDq + gDk));
    const cp = k.counter(`${p}cp.async_warp${w}`);
    let groups = 0;
    const group = (bytes: number, op: string, t: string, mem: MemSpec[], ph: SchedulePhase) => {
      r.issue('cpasync', copy(bytes / WARPS), op, t, {
        phase: ph,
        latency: gpu.copyLatencyCycles,
        arrive: [cp],
        mem: lead ? mem : undefined,
      });
      return groups++;
    };
    const mark = (m: MemSpec) => {
      if (lead) r.mem(m);
    };
    if (n === 0) continue;
    const m0 = rows[0];
    group(
      N * (shape.d + shape.dv) * e,
      `cpasync K${col}+V${col}`,
      `K${col}`,
      [tile('sK', 0, N * shape.d * e, `K${col}`), tile('sV', 0, N * shape.dv * e, `V${col}`)],
      phase(['load'], null, null, ['K', 'V']),
    );
    const loadQ = (m: number, s: number) =>
      group(
        qBytes,
        `cpasync Q${m}+LSE${m}`,
        `Q${m}`,
        [tile('sQ', s, M * shape.d * e, `Q${m}`), tile('sLSE', s, M * 4, `LSE${m}`)],
        phase(['load'], m, null, ['Q', 'LSE']),
      );
    const releaseQ = (m: number, s: number) => {
      mark(tile('sQ', s, M * shape.d * e, `Q${m}`, 'release'));
      mark(tile('sLSE', s, M * 4, `LSE${m}`, 'release'));
    };
    let qGroup = loadQ(m0, 0);
    let doGroup = group(
      doBytes,
      `cpasync dO${m0}+D${m0}`,
      `dO${m0}`,
      [tile('sdO', 0, M * shape.dv * e, `dO${m0}`), tile('sD', 0, M * 4, `D${m0}`)],
      phase(['load'], m0, null, ['dO', 'D']),
    );
    for (let i = 0; i < n; i++) {
      const m = rows[i];
      const qs = i % cfg.qStages;
      r.wait(cp, Math.max(qGroup, doGroup));
      r.sync(sync);
      // Q_{m+1} into the other buffer while this block computes (double buffering).
      if (i + 1 < n && cfg.qStages === 2) {
        if (i >= 1) releaseQ(rows[i - 1], 1 - qs);
        qGroup = loadQ(rows[i + 1], 1 - qs);
      }
      r.exec(`tensor.sp${sp}`, gS, `mma.sync S=Q${m}·K${col}ᵀ`, `S${m}`, { phase: phase(['qk'], m) });
      if (tileCrossesDiagonal(shape, m, col, M, N))
        r.exec(`fma.sp${sp}`, (elems * 2) / fma, 'causal mask', `S${m}`, { phase: phase(['mask'], m) });
      r.exec(`fma.sp${sp}`, elems / fma + FA2_BWD_WARP_OVERHEAD, 'S·scale − LSE', `S${m}`, { phase: phase(['recompute'], m) });
      r.exec(`mufu.sp${sp}`, elems / mufu, 'exp2 → P', `P${m}`, { phase: phase(['recompute'], m) });
      r.exec(`tensor.sp${sp}`, gDp, `mma.sync dP=dO${m}·V${col}ᵀ`, `dP${m}`, { phase: phase(['dp'], m) });
      r.exec(`fma.sp${sp}`, (elems * (BWD_ELEMENT_OPS - 1)) / fma, 'dS=P∘(dP−D), cvt', `dS${m}`, { phase: phase(['ds'], m) });
      if (i > 0) {
        mark(tile('sP', 0, M * N * e, `P${rows[i - 1]}`, 'release'));
        mark(tile('sdS', 0, M * N * e, `dS${rows[i - 1]}`, 'release'));
      }
      r.exec('smem', (2 * elems * e) / gpu.smemBytesPerClk, `st.shared P${m} dS${m}`, `dS${m}`, {
        phase: phase(['ds'], m),
        memDone: lead ? [tile('sP', 0, M * N * e, `P${m}`), tile('sdS', 0, M * N * e, `dS${m}`)] : undefined,
      });
      r.sync(sync);
      r.exec(`tensor.sp${sp}`, gDv, `mma.sync dV+=P${m}ᵀ·dO${m}`, `dV${col}`, { phase: phase(['dv'], m) });
      r.sync(sync);
      // dO_m is consumed: its buffer takes dO_{m+1}.
      mark(tile('sdO', 0, M * shape.dv * e, `dO${m}`, 'release'));
      mark(tile('sD', 0, M * 4, `D${m}`, 'release'));
      if (i + 1 < n) {
        const nm = rows[i + 1];
        doGroup = group(
          doBytes,
          `cpasync dO${nm}+D${nm}`,
          `dO${nm}`,
          [tile('sdO', 0, M * shape.dv * e, `dO${nm}`), tile('sD', 0, M * 4, `D${nm}`)],
          phase(['load'], nm, null, ['dO', 'D']),
        );
      }
      r.exec(`tensor.sp${sp}`, gDq, `mma.sync dQ${m}=dS${m}·K${col}`, `dQ${m}`, { phase: phase(['dq'], m) });
      r.issue('store', copy((M * shape.d * 4) / WARPS), `atomicAdd dQ${m}`, `dQ${m}`, {
        phase: phase(['dq'], m),
        latency: gpu.copyLatencyCycles,
        memDone: lead
          ? [
              {
                space: 'hbm',
                buffer: 'dQaccum',
                stage: 0,
                offset: ((work.b * shape.hq + work.h) * ceilDiv(shape.nq, M) + m) * M * shape.d * 4,
                bytes: M * shape.d * 4,
                action: 'fill',
                tile: `dQ${m}`,
              },
            ]
          : undefined,
      });
      r.exec(`tensor.sp${sp}`, gDk, `mma.sync dK+=dS${m}ᵀ·Q${m}`, `dK${col}`, { phase: phase(['dk'], m) });
      if (cfg.qStages === 1 && i + 1 < n) {
        // One Q buffer: the next Q waits until every warp is done with this one.
        r.sync(sync);
        releaseQ(m, 0);
        qGroup = loadQ(rows[i + 1], 0);
      }
    }
    // Epilogue: dK·scale, both to 16 bits, through SMEM (over sK/sV) to HBM.
    r.exec(`fma.sp${sp}`, ((N * (shape.d + shape.dv)) / WARPS / fma) * 1.5, `dK${col}·scale, cvt dK dV`, `dK${col}`, {
      phase: phase(['write'], null, null, ['dK', 'dV']),
    });
    r.sync(sync);
    if (lead) {
      const last = rows[n - 1];
      r.mem(tile('sP', 0, M * N * e, `P${last}`, 'release'));
      r.mem(tile('sdS', 0, M * N * e, `dS${last}`, 'release'));
      releaseQ(last, (n - 1) % cfg.qStages);
      if (n >= 2 && cfg.qStages === 2) releaseQ(rows[n - 2], n % 2);
      r.mem(tile('sK', 0, N * shape.d * e, `K${col}`, 'release'));
      r.mem(tile('sV', 0, N * shape.dv * e, `V${col}`, 'release'));
    }
    const gqa = shape.hk !== shape.hq;
    const outE = gqa ? 4 : e;
    const bytes = (N * (shape.d + shape.dv) * outE) / WARPS;
    const kvHead = gqa ? Math.floor(work.h / (shape.hq / shape.hk)) : work.h;
    const row0 = (work.b * shape.hk + kvHead) * shape.nk + col * N;
    r.issue('store', copy(bytes), gqa ? `atomicAdd dK${col} dV${col} (fp32)` : `st.global dK${col} dV${col}`, `dK${col}`, {
      phase: phase(['write'], null, null, ['dK', 'dV']),
      latency: gpu.copyLatencyCycles,
      memDone: lead
        ? [
            {
              space: 'hbm',
              buffer: gqa ? 'dKaccum' : 'dK',
              stage: 0,
              offset: row0 * shape.d * outE,
              bytes: N * shape.d * outE,
              action: 'fill',
              tile: `dK${col}`,
            },
            {
              space: 'hbm',
              buffer: gqa ? 'dVaccum' : 'dV',
              stage: 0,
              offset: row0 * shape.dv * outE,
              bytes: N * shape.dv * outE,
              action: 'fill',
              tile: `dV${col}`,
            },
          ]
        : undefined,
    });
  }
}

export const fa2BwdHw: HwAlgorithm = {
  id: 'fa2',
  name: 'FlashAttention-2 backward (SM80: 8 warps, cp.async, dQ by atomicAdd)',
  arch: [80, 89, 90, 100],
  switches: {},
  resources: (gpu, shape) => resources(gpu, shape),
  grid: (gpu, shape) => {
    const c = fa2BwdConfig(gpu, shape);
    return backwardGrid(shape, c.blockM, c.blockN);
  },
  build,
  epilogueKernelUs: (gpu, shape) => aroundKernelsUs(gpu, shape),
  flops: backwardFlops,
  hbmBytes: backwardHbmBytes,
};
