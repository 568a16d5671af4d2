// The FA4 backward's resource sheet, as flash_attn/cute/flash_bwd_sm100.py@0251105a lays it out:
// the SharedStorage members in declaration order with their sizes, the TMEM columns of the five
// accumulators, the warp roles with their registers, and the dispatch's decisions with their
// upstream lines (`describe --backward`). ./backward-schedule.ts builds the timeline on it.

import type { ResourceSheet } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import { dispatchInputOf } from '../../hw/dispatch-input.ts';
import { elemBytes, emptySheet, finishSheet, gcd, type HwFeatures, type ProblemShape } from '../../hw/model.ts';
import { fa4BwdDispatch, type Fa4BwdDispatch } from './backward-dispatch.ts';
import type { Hd256BwdKernel } from './backward-hd256.ts';
import { SmemPacker } from './smem-packer.ts';

/** _flash_attn_bwd's and the kernel's decisions for this problem (./backward-dispatch.ts). */
export function fa4BwdDispatchOf(shape: ProblemShape, deterministic = false): Fa4BwdDispatch {
  return fa4BwdDispatch(dispatchInputOf(shape), deterministic);
}

export interface Fa4BwdLayout {
  dp: Fa4BwdDispatch;
  sheet: ResourceSheet;
  off: (name: string, stage?: number) => number;
  /** Where dK and dV are staged for their store: over sQ and sdO on one CTA, over sK and sV in a pair (l. 746-766). */
  dkStage: string;
  dvStage: string;
  /** Where Qᵀ lands: sQt, or at d = 192 sQ itself (sQt, sdOt have size 0 there and dOᵀ shares sdO, l. 767-772). */
  qtBuf: string;
}

/** The CTA's SMEM buffers, TMEM columns and warp roles, and where the schedule stages what. */
export function fa4BwdLayout(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): Fa4BwdLayout {
  const dp = fa4BwdDispatchOf(shape, f.deterministic === true);
  const { tileM: M, tileN: N, dPad: D, dvPad: DV, ctaGroup: G } = dp;
  const e = elemBytes(shape.dtype);
  // A grid entry is one CTA even in a pair (the peer is its own entry), so the sheet keeps cta_group 1 and says the pair in its notes.
  const sheet = emptySheet('fa4', gpu, M, N);
  sheet.q_stage = dp.qStage;
  sheet.kv_stage = 1;
  const smem = new SmemPacker(sheet);
  const wide = D > 128;
  // SharedStorage member order (flash_bwd_sm100.py l. 774-904): barriers, then the buffers.
  const dqReduceStages = D / dp.dQReduceNcol;
  const mbarriers = 4 * dp.qStage + 4 * dp.dOStage + 6 + 4 + 2 + 2 * Math.floor(dqReduceStages / 2) + 1 + (G === 2 ? 2 * dp.qStage + 6 : 0);
  smem.push('mbarriers', 0, mbarriers * 8, 8);
  smem.push('tmem_holding', 0, 4, 4);
  const qTile = (dp.qStage * M * D * e) / G;
  const dOTile = (dp.dOStage * M * DV * e) / G;
  // sdK/sdV epilogue tiles: tile_n × gcd(64, hdim/2) per compute warpgroup, or fp32 chunks of gcd(32, d/2) with GQA (l. 411-440).
  const sdK = dp.dkvPostprocess ? N * gcd(32, D / 2) * 2 * 4 : N * gcd(128 / e, D / 2) * 2 * e;
  const sdV = dp.dkvPostprocess ? N * gcd(32, D / 2) * 2 * 4 : N * gcd(128 / e, DV / 2) * 2 * e;
  if (G === 1) {
    smem.push('sQ', 0, Math.max(qTile, sdK), 1024);
    smem.push('sK', 0, N * D * e, 1024);
    smem.push('sV', 0, N * DV * e, 1024);
    smem.push('sdO', 0, Math.max(dOTile, sdV), 1024);
    smem.push('sdS', 0, N * M * e, 128);
  } else {
    smem.push('sQ', 0, qTile, 1024);
    smem.push('sK', 0, N * D * e, 1024);
    smem.push('sV', 0, N * DV * e, 1024);
    smem.push('sdO', 0, dOTile, 1024);
    if (!wide) {
      smem.push('sQt', 0, (M * D * e) / G, 1024);
      smem.push('sdOt', 0, (M * DV * e) / G, 1024);
      smem.push('sdS_xchg', 0, (N * M * e) / 2, 1024);
    }
    smem.push('sKt', 0, (G * N * D * e) / G, 1024);
    smem.push('sdS', 0, N * M * e, 1024);
  }
  // sLSE, sdPsum: tile_m fp32 per stage, stages round_up(tile_m, 64) apart (l. 404-411).
  const statStride = Math.ceil(M / 64) * 64 * 4;
  smem.push('sLSE', 0, (dp.qStage - 1) * statStride + M * 4, 128);
  smem.push('sdPsum', 0, (dp.dOStage - 1) * statStride + M * 4, 128);
  for (let s = 0; s < dp.sdQaccumStage; s++)
    smem.push('sdQaccum', s, M * dp.dQReduceNcol * 4, s === 0 ? (G === 2 && !wide ? 128 : 1024) : 4);
  sheet.smem.used_bytes = smem.end;
  const off = (name: string, stage = 0) => sheet.smem.buffers.find((b) => b.name === name && b.stage === stage)!.offset;

  const t = dp.tmem;
  const pCols = (M * e) / 4;
  const dqCols = D / G;
  if (sheet.tmem)
    sheet.tmem.buffers.push(
      { name: 'S', column: t.S, columns: M },
      { name: 'P', column: t.P, columns: pCols },
      { name: 'dV', column: t.dV, columns: DV },
      { name: 'dP', column: t.dP, columns: M },
      { name: 'dS', column: t.dS, columns: pCols },
      { name: 'dQ', column: t.dQ, columns: dqCols },
      { name: 'dK', column: t.dK, columns: D },
    );
  const kb = (n: number) => `${Math.round((n / 1024) * 10) / 10} KB`;
  sheet.notes.push(
    `SMEM ${kb(smem.end)}: K and V once (${kb(N * D * e)} + ${kb(N * DV * e)}), ${dp.qStage} Q stage${dp.qStage > 1 ? 's' : ''} and 1 dO stage${G === 2 ? ' of half a tile each (the pair splits every Q and dO tile)' : ''}, sdS ${kb(N * M * e)}, ${dp.sdQaccumStage} sdQaccum slots of ${dp.dQReduceNcol} fp32 columns.`,
    `TMEM (512 columns): S at ${t.S} with P over it, dV at ${t.dV}, dP at ${t.dP} with dS over it, dQ at ${t.dQ}${t.dQ === t.dP ? ' (over dP: the next dP waits until the reduce warps have read dQ)' : G === 2 && !wide ? ' (over S: the next S waits until the reduce warps have read dQ)' : ''}, dK at ${t.dK}.`,
  );
  if (G === 2)
    sheet.notes.push(
      `2-CTA mode (cta_group::2): this CTA and its peer on another SM form a pair over ${G * N} keys; the leader's MMA warp issues every MMA for both, each tensor core computing its own ${N} keys. Each CTA loads half of every Q and dO tile${wide ? '' : ', and the transposed copies Qᵀ, dOᵀ the dK and dP MMAs read'}, plus half of Kᵀ for dQ = dS·K over the pair's ${G * N} keys; dS halves cross between the CTAs through distributed shared memory.`,
    );
  if (dp.dkvPostprocess)
    sheet.notes.push(
      `GQA (${dp.qheadPerKvhead} query heads per KV head): dK and dV are reduce-added in fp32 into dKaccum/dVaccum and converted by two postprocess kernels.`,
    );
  const r = dp.registers;
  sheet.roles.push(
    { name: 'reduce', warps: [0, 1, 2, 3], registers: r.reduce },
    { name: 'compute0', warps: [4, 5, 6, 7], registers: r.compute },
    { name: 'compute1', warps: [8, 9, 10, 11], registers: r.compute },
    { name: 'mma', warps: [12], registers: r.mma },
    { name: 'load', warps: [13], registers: r.load },
    { name: 'relay', warps: [14], registers: G === 2 ? r.mma : r.empty },
    { name: 'empty', warps: [15], registers: r.empty },
  );
  return {
    dp,
    sheet,
    off,
    dkStage: G === 1 ? 'sQ' : 'sK',
    dvStage: G === 1 ? 'sdO' : 'sV',
    qtBuf: wide ? 'sQ' : 'sQt',
  };
}

/** The resource sheet `describe --backward` prints: the layout, upstream's configuration with its lines, what does not fit. */
export function fa4BwdResources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): ResourceSheet {
  const dp0 = fa4BwdDispatchOf(shape, f.deterministic === true);
  if (dp0.hd256) return hd256Resources(gpu, f, dp0, dp0.hd256);
  const { dp, sheet } = fa4BwdLayout(gpu, shape, f);
  if (gpu.sm !== 100) sheet.does_not_fit.push(`arch: the FA4 backward is written for SM100 (tcgen05, TMEM); ${gpu.name} is SM${gpu.sm}`);
  if (shape.mask?.maskMod !== undefined)
    sheet.does_not_fit.push('mask_mod: the FA4 backward with block sparsity (a mask_mod) is not modelled');
  sheet.upstream = {
    config: {
      mask: maskName(dp),
      tile_m: dp.tileM,
      tile_n: dp.tileN,
      cta_group: dp.ctaGroup,
      dedicated_hd256: false,
      q_stage: dp.qStage,
      dO_stage: dp.dOStage,
      pack_gqa: dp.packGqa,
      dkv_postprocess: dp.dkvPostprocess,
      dq_reduce: `${dp.dQReduceNcol}x${dp.sdQaccumStage}`,
      registers: `${dp.registers.reduce}/${dp.registers.compute}/${dp.registers.load}/${dp.registers.mma}`,
      scheduler: dp.scheduler,
      spt: dp.spt,
      deterministic: f.deterministic === true,
    },
    why: dp.why,
  };
  if (dp.refused) sheet.does_not_fit.unshift(`upstream refuses: ${dp.refused}`);
  return finishSheet(sheet, gpu, true);
}

const maskName = (dp: Fa4BwdDispatch) =>
  dp.isCausal ? 'causal' : dp.isLocal ? `local(${dp.windowLeft ?? 'None'},${dp.windowRight ?? 'None'})` : 'none';

const warpList = (k: Hd256BwdKernel) =>
  k.roles
    .map((r) => `${r.name} ${r.warps.length > 1 ? `${r.warps[0]}-${r.warps[r.warps.length - 1]}` : r.warps[0]} (${r.registers})`)
    .join(', ');

/**
 * d = dv = 256: the sheet is the dK/dV kernel's CTA (SharedStorage order, dkdvkernel.py l. 633-710),
 * the dQ kernel that runs before it is summed up in the configuration and a note. No timeline:
 * `simulate` and the hardware views refuse it with the line in does_not_fit.
 */
function hd256Resources(gpu: GpuSpec, f: HwFeatures, dp: Fa4BwdDispatch, ks: [Hd256BwdKernel, Hd256BwdKernel]): ResourceSheet {
  const [dq, dkdv] = ks;
  const sheet = emptySheet('fa4', gpu, dkdv.tileM, dkdv.tileN);
  const smem = new SmemPacker(sheet);
  // Pipeline barriers (two per stage of each of the kernel's twelve pipelines, dK/dV's two stages), then TMEM's holding word, the dealloc and CLC barriers.
  const pipelines = Object.values(dkdv.stages).reduce((n, st) => n + 2 * st, 0);
  smem.push('mbarriers', 0, pipelines * 8, 8);
  smem.push('tmem_holding', 0, 4, 4);
  smem.push('mbarriers', 1, 3 * 8 + 16, 8);
  for (const b of dkdv.smem) smem.push(b.name, 0, b.bytes, 128);
  sheet.smem.used_bytes = smem.end;
  if (sheet.tmem) sheet.tmem.buffers.push(...dkdv.tmem);
  sheet.roles.push(...dkdv.roles);
  sheet.cta_group = 2;
  const kb = (n: number) => `${Math.round((n / 1024) * 10) / 10} KB`;
  const dqSmem = dq.smem.reduce((n, b) => n + b.bytes, 0);
  sheet.notes.push(
    `d = dv = 256 runs two kernels on CTA pairs (cluster 2 × 1, cta_group::2): first the dQ kernel (grid ${dq.grid.join(' × ')}), each CTA ${dq.tileM} query rows walking key blocks of ${dq.tileN}, then this dK/dV kernel (grid ${dkdv.grid.join(' × ')}), each CTA ${dkdv.tileN} keys walking Q tiles of ${dkdv.tileM}.`,
    `dQ kernel: warps ${warpList(dq)}; TMEM ${dq.tmem.map((t) => `${t.name} at ${t.column}`).join(', ')}; SMEM ${kb(dqSmem)} (${dq.smem.map((b) => b.name).join(', ')}), dQ written straight to HBM in the input dtype (no dQaccum, no postprocess).`,
    `dK/dV kernel (this sheet): TMEM ${dkdv.tmem.map((t) => `${t.name} at ${t.column}`).join(', ')}; P and dSᵀ go through SMEM (sP, sdST) for the dV and dK MMAs; every buffer has one stage, the dK/dV accumulator hand-off two.`,
  );
  if (dp.qheadPerKvhead > 1)
    sheet.notes.push(
      `GQA (${dp.qheadPerKvhead} query heads per KV head): one dK/dV CTA walks every query head of its group, so dK and dV are summed on chip and written once: no fp32 accumulators, no semaphores.`,
    );
  if (gpu.sm !== 100) sheet.does_not_fit.push(`arch: the FA4 backward is written for SM100 (tcgen05, TMEM); ${gpu.name} is SM${gpu.sm}`);
  sheet.upstream = {
    config: {
      mask: maskName(dp),
      dedicated_hd256: true,
      cta_group: 2,
      cluster: '2x1',
      dq_tile: `${dq.tileM}x${dq.tileN}`,
      dkdv_tile: `${dkdv.tileM}x${dkdv.tileN}`,
      dq_grid: dq.grid.join('x'),
      dkdv_grid: dkdv.grid.join('x'),
      dq_warps: warpList(dq),
      dkdv_warps: warpList(dkdv),
      dq_tmem: dq.tmem.map((t) => `${t.name}@${t.column}`).join(' '),
      dkdv_tmem: dkdv.tmem.map((t) => `${t.name}@${t.column}`).join(' '),
      dq_smem_bytes: dqSmem,
      stages: 1,
      dkdv_acc_stages: dkdv.stages.dKdV,
      pack_gqa: false,
      dkv_postprocess: false,
      deterministic: f.deterministic === true,
    },
    why: dp.why,
  };
  if (dp.refused) sheet.does_not_fit.unshift(`upstream refuses: ${dp.refused}`);
  finishSheet(sheet, gpu, true);
  if (!dp.refused)
    sheet.does_not_fit.push(
      'timeline: the d = 256 kernels (sm100_hd256_2cta_fmha_backward.py) have no FlashScope timeline; describe shows their configuration',
    );
  return sheet;
}
