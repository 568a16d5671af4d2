// The FlashAttention-4 backward on SM100, as flash_attn/cute/flash_bwd_sm100.py at 0251105a
// builds it, configured by ./backward-dispatch.ts. One CTA owns column block n (tile_n = 128
// keys) of one (batch, query head); with use_2cta_instrs (d ≥ 128) two CTAs on two SMs form a
// pair over 256 keys, the leader's MMA warp issuing cta_group::2 MMAs and each CTA holding half
// of every Q and dO tile. It walks the row blocks m that see its keys (block_info.py
// get_m_block_min_max over the pair's keys) with 16 warps (l. 139-144):
//   reduce (warps 0-3): dQ_m from TMEM to registers, st.shared in chunks of dQ_reduce_ncol fp32
//     columns, each chunk a TMA reduce-add into dQaccum (the sdQaccum slots rotate);
//   compute (warps 4-11, two warpgroups, each half of the tile's query rows): S from TMEM,
//     the mask, P = exp2(S·scale·log2e − LSE) back into TMEM over S, dP from TMEM,
//     dS = P ∘ (dP − dPsum) into TMEM over dP and into SMEM (for the dQ MMA); then the
//     epilogue: dV and dK (scaled) from TMEM through SMEM to HBM (fp32 reduce-adds with GQA);
//   mma (warp 12): S = K·Qᵀ, dP = V·dOᵀ, dV += Pᵀ·dO, dK += dSᵀ·Q, dQ = dS·K, software-pipelined
//     one row block deep (l. 2521-2640, 2641-2760; d = 192 unpipelined, l. 2444-2520);
//   load (warp 13): K with Q_first, then Q, LSE, dO, dPsum per row block (TMA; 2-CTA also the
//     transposed Qᵀ, dOᵀ and Kᵀ operand copies); relay (warp 14, 2-CTA): hands the peer's dS
//     half to the leader's MMA warp; empty (warp 15).
// Around it run the preprocess kernel (dPsum = rowsum(dO ∘ O), LSE·log2e, dQaccum zeroed) and
// the postprocess (dQaccum → dQ; with GQA also dKaccum, dVaccum).
// Simplified: one CTA of a pair is drawn (the peer mirrors it on its own SM); the deterministic
// dQ semaphores wait between CTAs and GQA's dK/dV semaphores order a group's epilogues (crossCtaUs
// charges both per wave, not per CTA); the epilogue stores each warpgroup's dK and dV as one copy, not in epi-tile chunks;
// mask_mod block sparsity and score_mod are not modelled; the d = 256 kernels
// (sm100_hd256_2cta_fmha_backward.py) have a resource sheet (./backward-hd256.ts) but no timeline.

import type { SchedulePhase } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import { aroundKernelsUs, backwardFlops, backwardHbmBytes } from '../../hw/backward.ts';
import {
  ceilDiv,
  elemBytes,
  kvBlocksOf,
  mmaCycles,
  phase,
  prefix,
  sequencesOf,
  tensorRate,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
} from '../../hw/model.ts';
import type { Kernel, MemSpec } from '../../hw/scheduler.ts';
import { FA4_BACKWARD_FEATURES } from './backward.ts';
import type { Fa4BwdDispatch } from './backward-dispatch.ts';
import { fa4BwdDispatchOf, fa4BwdLayout, fa4BwdResources } from './backward-layout.ts';
import { allocCtaMemory, ctaSides } from './pair.ts';
import { TMEM_BYTES_PER_CLK, UMMA_LATENCY } from './schedule.ts';
import { Ring, type Slot } from './smem-ring.ts';

/**
 * Model assumption: the share of the tcgen05 rate the backward's five MMAs reach. Lower than
 * the forward's 0.75: three of them read an operand that the compute warps write just before
 * (P, dS), and the loop waits on the compute and reduce warps between MMAs.
 */
export const UMMA_BWD_EFFICIENCY = 0.6;
/** Blackwell's packed FFMA2: two fp32 FMAs per lane per instruction. */
const FFMA2 = 2;
/** Model assumption: cycles for a distributed-shared-memory copy to land in the peer CTA. */
const DSMEM_LATENCY = 200;
/** Model assumption: one hand-off of a dQ row block's semaphore between two CTAs in deterministic mode, µs. */
export const FA4_DQ_SEMAPHORE_HANDOFF_US = 1.2;

/**
 * Row blocks [from, to) a CTA of column block n visits: get_m_block_min_max (block_info.py@0251105a
 * l. 71-85) over the keys of its pair (tile_n · cluster, flash_bwd_sm100.py l. 1404-1414).
 */
export function fa4BwdRowRange(shape: ProblemShape, dp: Fa4BwdDispatch, n: number): [number, number] {
  const keys = dp.tileN * dp.ctaGroup;
  const c = Math.floor(n / dp.ctaGroup);
  let max = ceilDiv(shape.nq, dp.tileM);
  let min = 0;
  if (dp.isCausal || (dp.isLocal && dp.windowRight !== null)) {
    const m = c * keys + shape.nq - shape.nk - (dp.isCausal ? 0 : dp.windowRight!);
    min = Math.max(0, Math.floor(m / dp.tileM));
  }
  if (dp.isLocal && dp.windowLeft !== null) {
    const m = (c + 1) * keys + shape.nq - shape.nk + dp.windowLeft;
    max = Math.min(max, Math.max(0, ceilDiv(m, dp.tileM)));
  }
  return max <= min ? [min, min] : [min, max];
}

/** One entry per CTA (column block of tile_n keys), column block fastest, per sequence of a varlen batch. */
function grid(_gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): CtaWork[] {
  const dp = fa4BwdDispatchOf(shape, f.deterministic === true);
  const out: CtaWork[] = [];
  const seqs = sequencesOf(shape);
  for (let b = 0; b < shape.batch; b++) {
    // A dense batch is one shape for every sequence; a varlen batch has one per sequence.
    const seq = seqs.length === 1 ? shape : seqs[b];
    const blocks = Math.ceil(ceilDiv(seq.nk, dp.tileN) / dp.ctaGroup) * dp.ctaGroup;
    // spt: the scheduler hands pairs out from the last column block down (tile_scheduler.py@0251105a l. 831-832).
    const order = Array.from({ length: blocks }, (_, i) =>
      dp.spt ? blocks - dp.ctaGroup * (1 + Math.floor(i / dp.ctaGroup)) + (i % dp.ctaGroup) : i,
    );
    for (let h = 0; h < shape.hq; h++)
      for (const n of order) {
        const [kvFrom, kvTo] = fa4BwdRowRange(seq, dp, n);
        out.push({ b, h, qBlock: n, kvFrom, kvTo, reverse: false, split: 0 });
      }
  }
  return out;
}

function build(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, shape, features: f } = ctx;
  const L = fa4BwdLayout(gpu, shape, f);
  const { dp } = L;
  const { tileM: M, tileN: N, dPad: D, dvPad: DV, ctaGroup: G } = dp;
  const wide = D > 128;
  const e = elemBytes(shape.dtype);
  const p = prefix(ctx);
  const rows = kvBlocksOf(work);
  const n = rows.length;
  const col = work.qBlock;
  k.fifoUnits.add('tensor');
  const [side] = ctaSides(1);
  const tmem = allocCtaMemory(k, [side], L.sheet, p, gpu.tmem?.lanes ?? 128, ['mbarriers', 'tmem_holding']);
  const t = dp.tmem;
  const pCols = (M * e) / 4;
  const smemSpec = (buf: string, stage: number, bytes: number, action: 'fill' | 'release', tile: string, at = 0): MemSpec => ({
    space: 'smem',
    buffer: `${p}${buf}`,
    stage,
    offset: L.off(buf, stage) + at,
    bytes,
    action,
    tile,
  });
  const rate = tensorRate(gpu, shape.dtype) * UMMA_BWD_EFFICIENCY;
  // Each CTA's tensor core computes its own tile_n keys of every MMA (in a pair, half of the M = 256 or K = 256 work).
  const cyc = {
    S: mmaCycles(N, M, shape.d, rate),
    dP: mmaCycles(N, M, shape.dv, rate),
    dV: mmaCycles(N, shape.dv, M, rate),
    dK: mmaCycles(N, shape.d, M, rate),
    dQ: mmaCycles(M, shape.d, N, rate),
  };
  const copy = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const tmemMove = (bytes: number) => bytes / TMEM_BYTES_PER_CLK;
  const smemCycles = (bytes: number) => bytes / gpu.smemBytesPerClk;
  const elems = (N * M) / 2;
  const qBytes = (M * shape.d * e) / G;
  const dOBytes = (M * shape.dv * e) / G;
  const qSlotBytes = (M * D * e) / G;
  const statStride = Math.ceil(M / 64) * 64 * 4;
  const pair = G === 2 ? ' (cta_group::2)' : '';
  // What one compute warpgroup writes of sdS: half the tile, a quarter in a pair (the other half crosses to the peer).
  const dsPart = (N * M * e) / 2 / G;

  // SMEM rings: Q (and Qᵀ at d = 192) read by the MMA, LSE by both compute warpgroups; dO (and dOᵀ at d = 192) likewise with dPsum.
  const qRing = new Ring(k, `${p}Q`, dp.qStage, 1);
  const lseRing = new Ring(k, `${p}LSE`, dp.qStage, 2);
  const dORing = new Ring(k, `${p}dO`, dp.dOStage, 1);
  const dPsumRing = new Ring(k, `${p}dPsum`, dp.dOStage, 2);
  const qtRing = G === 2 && !wide ? new Ring(k, `${p}Qt`, 1, 1) : qRing;
  // K and V arrive once, with the first Q and dO; Kᵀ, read by dQ only, on its own barrier.
  const ktFull = k.mbarrier(`${p}Kt_full`);
  const kFull = k.mbarrier(`${p}K_full`);
  const vFull = k.mbarrier(`${p}V_full`);
  // Handshakes between the MMA warp and the compute / reduce warps (TMEM pipelines, one stage each).
  const sFull = k.mbarrier(`${p}S_full`);
  const pFull = k.mbarrier(`${p}P_full`, 2);
  const dPFull = k.mbarrier(`${p}dP_full`);
  const dSFull = k.mbarrier(`${p}dS_full`, 2);
  const dSEmpty = k.mbarrier(`${p}dS_empty`);
  const dQFull = k.mbarrier(`${p}dQ_full`);
  const dQEmpty = k.mbarrier(`${p}dQ_empty`);
  const dSLeader = G === 2 ? k.mbarrier(`${p}dS_cluster_leader`) : -1;
  const dSXchg = G === 2 ? k.mbarrier(`${p}dS_cluster_full`, 2) : -1;
  const dVFull = k.mbarrier(`${p}dKV_full[0]`);
  const dKFull = k.mbarrier(`${p}dKV_full[1]`);

  // Load warp.
  const load = k.role({
    name: `${p}load`,
    warps: [13],
    registers: dp.registers.load,
    job: `TMA loads: K${col}, V${col} once${G === 2 ? ' and half of Kᵀ' : ''}; per row block Q, LSE, dO, dPsum${G === 2 ? ' (half tiles, with the transposed Qᵀ and dOᵀ)' : ''}`,
  });
  const qAt: Slot[] = [];
  const qtAt: Slot[] = [];
  const lseAt: Slot[] = [];
  const dOAt: Slot[] = [];
  const dOtAt: Slot[] = [];
  const dPsumAt: Slot[] = [];
  const tma = (bytes: number, op: string, tile: string, ph: SchedulePhase, arrive: number[], mem: MemSpec[]) =>
    load.issue('tma', copy(bytes), op, tile, { phase: ph, latency: gpu.copyLatencyCycles, arrive, mem });
  const kBytes = N * shape.d * e;
  const vBytes = N * shape.dv * e;
  const loadQ = (i: number) => {
    const m = rows[i];
    const first = i === 0;
    const at = qRing.produce(load, (s) => [smemSpec('sQ', 0, qBytes, 'release', `Q${m}`, s * qSlotBytes)]);
    qAt[i] = at;
    // K rides on the first Q's barrier (one TMA copy each, l. 2052-2059); the model gives it its own.
    if (first)
      tma(kBytes, `tma K${col}`, `K${col}`, phase(['load'], null, null, ['K']), [kFull], [smemSpec('sK', 0, kBytes, 'fill', `K${col}`)]);
    tma(
      qBytes,
      `tma Q${m}`,
      `Q${m}`,
      phase(['load'], m, null, ['Q']),
      [at.full],
      [smemSpec('sQ', 0, qBytes, 'fill', `Q${m}`, at.slot * qSlotBytes)],
    );
    const lat = lseRing.produce(load, (s) => [smemSpec('sLSE', 0, M * 4, 'release', `LSE${m}`, s * statStride)]);
    lseAt[i] = lat;
    tma(
      M * 4,
      `bulk LSE${m}`,
      `LSE${m}`,
      phase(['load'], m, null, ['LSE']),
      [lat.full],
      [smemSpec('sLSE', 0, M * 4, 'fill', `LSE${m}`, lat.slot * statStride)],
    );
  };
  /** dO for dV (with dOᵀ for dP in a pair below d = 192); at d = 192, `transposed` loads dOᵀ alone into the same slot first. */
  const loadDO = (i: number, transposed: boolean) => {
    const m = rows[i];
    const first = i === 0 && (transposed || !wide);
    const both = G === 2 && !wide;
    const name = transposed ? `dOt${m}` : `dO${m}`;
    const at = dORing.produce(load, () => [
      smemSpec('sdO', 0, dOBytes, 'release', name),
      ...(both ? [smemSpec('sdOt', 0, dOBytes, 'release', `dOt${m}`)] : []),
    ]);
    if (transposed) dOtAt[i] = at;
    else dOAt[i] = at;
    const mem = [smemSpec('sdO', 0, dOBytes, 'fill', name), ...(both ? [smemSpec('sdOt', 0, dOBytes, 'fill', `dOt${m}`)] : [])];
    if (first)
      tma(vBytes, `tma V${col}`, `V${col}`, phase(['load'], null, null, ['V']), [vFull], [smemSpec('sV', 0, vBytes, 'fill', `V${col}`)]);
    const label = `tma ${transposed ? `dOᵀ${m}` : `dO${m}${both ? '+dOᵀ' : ''}`}`;
    tma(dOBytes * (both ? 2 : 1), label, name, phase(['load'], m, null, ['dO']), [at.full], mem);
    if (transposed || !wide) {
      const pat = dPsumRing.produce(load, (s) => [smemSpec('sdPsum', 0, M * 4, 'release', `dPsum${m}`, s * statStride)]);
      dPsumAt[i] = pat;
      tma(
        M * 4,
        `bulk dPsum${m}`,
        `dPsum${m}`,
        phase(['load'], m, null, ['D']),
        [pat.full],
        [smemSpec('sdPsum', 0, M * 4, 'fill', `dPsum${m}`, pat.slot * statStride)],
      );
    }
  };
  const loadQt = (i: number) => {
    const m = rows[i];
    const at = qtRing.produce(load, () => [smemSpec(L.qtBuf, 0, qBytes, 'release', `Qt${m}`)]);
    qtAt[i] = at;
    tma(qBytes, `tma Qᵀ${m}`, `Qt${m}`, phase(['load'], m, null, ['Q']), [at.full], [smemSpec(L.qtBuf, 0, qBytes, 'fill', `Qt${m}`)]);
  };
  // Kᵀ, the dQ MMA's B operand over the pair's keys: each CTA loads half.
  const ktBytes = N * shape.d * e;
  const loadKt = () =>
    tma(
      ktBytes,
      `tma Kᵀ${col}`,
      `Kt${col}`,
      phase(['load'], null, null, ['K']),
      [ktFull],
      [smemSpec('sKt', 0, ktBytes, 'fill', `Kt${col}`)],
    );
  if (n > 0 && wide) {
    // d = 192 (l. 1939-2049): Q, dOᵀ, Qᵀ (+Kᵀ first), dO per row block, Q/Qᵀ sharing sQ and dOᵀ/dO sharing sdO.
    for (let i = 0; i < n; i++) {
      loadQ(i);
      loadDO(i, true);
      loadQt(i);
      if (i === 0) loadKt();
      loadDO(i, false);
    }
  } else if (n > 0) {
    // l. 2050-2171: K with the first Q, V with the first dO (Kᵀ after them in a pair); Qᵀ of the previous row block before each Q.
    loadQ(0);
    loadDO(0, false);
    if (G === 2) loadKt();
    for (let i = 1; i < n; i++) {
      if (G === 2) loadQt(i - 1);
      loadQ(i);
      loadDO(i, false);
    }
    if (G === 2) loadQt(n - 1);
  }

  // MMA warp.
  const mma = k.role({
    name: `${p}mma`,
    warps: [12],
    registers: dp.registers.mma,
    job: `tcgen05 MMAs${pair}: S = K${col}·Qᵀ, dP = V${col}·dOᵀ, dV += Pᵀ·dO, dK += dSᵀ·Q, dQ = dS·K for each row block`,
  });
  const umma = (
    cycles: number,
    kdim: number,
    op: string,
    tile: string,
    ph: SchedulePhase,
    o: { arrive?: number[]; memBegin?: MemSpec[]; memDone?: MemSpec[] },
  ) => mma.issue('tensor', cycles, op + pair, tile, { phase: ph, latency: UMMA_LATENCY, chunks: Math.max(1, kdim / 16), ...o });
  // One CTA reads Q for S and, transposed, for dK: its stage frees after dK; a pair reads Qᵀ from its own buffer.
  const qFreedByS = G === 2;
  const opS = (i: number) => {
    const m = rows[i];
    if (i === 0) mma.wait(kFull, 0);
    mma.wait(qAt[i].full, qAt[i].use);
    umma(cyc.S, shape.d, `S=K${col}·Q${m}ᵀ`, `S${m}`, phase(['qk'], m), {
      arrive: [sFull, ...(qFreedByS ? [qAt[i].empty] : [])],
      memDone: [tmem(side, 'S', t.S, M, 'fill', `S${m}`)],
    });
  };
  const opDP = (i: number) => {
    const m = rows[i];
    const at = wide ? dOtAt[i] : dOAt[i];
    if (i === 0) mma.wait(vFull, 0);
    mma.wait(at.full, at.use);
    umma(cyc.dP, shape.dv, `dP=V${col}·dO${m}ᵀ`, `dP${m}`, phase(['dp'], m), {
      arrive: [dPFull, ...(wide ? [at.empty] : [])],
      memDone: [tmem(side, 'dP', t.dP, M, 'fill', `dP${m}`)],
    });
  };
  const opDV = (i: number) => {
    const m = rows[i];
    mma.wait(pFull, i);
    mma.wait(dOAt[i].full, dOAt[i].use);
    umma(cyc.dV, M, `dV+=P${m}ᵀ·dO${m}`, `dV${col}`, phase(['dv'], m), {
      arrive: [dOAt[i].empty, ...(i === n - 1 ? [dVFull] : [])],
      memBegin: i === 0 ? [tmem(side, 'dV', t.dV, DV, 'fill', `dV${col}`)] : undefined,
      // A pair stages dV over sV once the last dP has read V.
      memDone: [
        tmem(side, 'P', t.P, pCols, 'release', `P${m}`),
        ...(G === 2 && i === n - 1 ? [smemSpec('sV', 0, vBytes, 'release', `V${col}`)] : []),
      ],
    });
  };
  const opDK = (i: number) => {
    const m = rows[i];
    mma.wait(dSFull, i);
    const q = G === 2 ? qtAt[i] : qAt[i];
    mma.wait(q.full, q.use);
    umma(cyc.dK, M, `dK+=dS${m}ᵀ·Q${m}`, `dK${col}`, phase(['dk'], m), {
      arrive: [q.empty, ...(i === n - 1 ? [dKFull] : [])],
      memBegin: i === 0 ? [tmem(side, 'dK', t.dK, D, 'fill', `dK${col}`)] : undefined,
      // dS in TMEM has had its last reader; a pair stages dK over sK once the last S has read K.
      memDone: [
        tmem(side, 'dS', t.dS, pCols, 'release', `dS${m}`),
        ...(G === 2 && i === n - 1 ? [smemSpec('sK', 0, kBytes, 'release', `K${col}`)] : []),
      ],
    });
  };
  const opDQ = (i: number) => {
    const m = rows[i];
    mma.wait(dSFull, i);
    if (G === 2) mma.wait(dSLeader, i);
    if (G === 2 && i === 0) mma.wait(ktFull, 0);
    // dQ's columns must have been read out by the reduce warps.
    mma.wait(dQEmpty, i - 1);
    umma(cyc.dQ, N * G, `dQ=dS${m}·K${col}`, `dQ${m}`, phase(['dq'], m), {
      arrive: [dQFull, dSEmpty],
      // Both warpgroups' halves of sdS (a pair: this CTA's own quarter-tiles) are free once the MMA has read them.
      memDone: [
        tmem(side, 'dQ', t.dQ, D / G, 'fill', `dQ${m}`),
        // Both warpgroups' parts of sdS (a pair: this CTA's own halves) are free once the MMA has read them.
        ...[0, 1].map((w) => smemSpec('sdS', 0, dsPart, 'release', `dS${m}.${w}`, w * dsPart)),
      ],
    });
  };
  if (n > 0) {
    if (wide) {
      // d = 192 in a pair, one row block at a time (l. 2444-2520): S (over the last dQ), dP (over S, once S is read), dK, dV, dQ.
      for (let i = 0; i < n; i++) {
        mma.wait(dQEmpty, i - 1);
        opS(i);
        mma.wait(pFull, i);
        opDP(i);
        opDK(i);
        opDV(i);
        opDQ(i);
      }
    } else {
      // Prologue S0, dP0, dV0; then per row block S_i, dK_{i-1}, dQ_{i-1}, dP_i, dV_i (a pair: S_i, dK_{i-1}, dP_i, dQ_{i-1}, dV_i);
      // tail dK, dQ (l. 2521-2640, 2641-2760). One CTA's dQ sits over dP, a pair's over S: the MMA that overwrites waits for the reduce warps.
      opS(0);
      opDP(0);
      opDV(0);
      for (let i = 1; i < n; i++) {
        if (G === 2) mma.wait(dQEmpty, i - 2);
        opS(i);
        opDK(i - 1);
        if (G === 1) {
          opDQ(i - 1);
          mma.wait(dQEmpty, i - 1);
        }
        opDP(i);
        if (G === 2) {
          mma.wait(pFull, i);
          opDQ(i - 1);
        }
        opDV(i);
      }
      opDK(n - 1);
      opDQ(n - 1);
    }
  }

  // Compute warpgroups: each takes half of the row block's query rows.
  const masks = (m: number) => {
    const r0 = m * M;
    const r1 = Math.min(shape.nq, r0 + M);
    const k0 = Math.floor(col / G) * G * N;
    const k1 = k0 + G * N - 1;
    const off = shape.nk - shape.nq;
    const right = dp.isCausal ? 0 : dp.windowRight;
    const crossesRight = right !== null && (dp.isCausal || dp.isLocal) && k1 > r0 + off + right;
    const crossesLeft = dp.isLocal && dp.windowLeft !== null && k0 < r1 - 1 + off - dp.windowLeft;
    return crossesRight || crossesLeft || k1 >= shape.nk;
  };
  const scale = shape.softcap !== undefined ? 3 : 1;
  for (let w = 0; w < 2; w++) {
    const cmp = k.role({
      name: `${p}compute${w}`,
      warps: [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w],
      registers: dp.registers.compute,
      job: `rows ${w * (M / 2)}-${(w + 1) * (M / 2) - 1} of each row block: P = exp2(S·scale − LSE), dS = P ∘ (dP − dPsum); then the dK${col}, dV${col} epilogue`,
    });
    for (let i = 0; i < n; i++) {
      const m = rows[i];
      cmp.wait(lseAt[i].full, lseAt[i].use);
      cmp.wait(sFull, i);
      cmp.exec('tmem', tmemMove(elems * 4), `tcgen05.ld S${m}`, `S${m}`, {
        phase: phase(['recompute'], m),
        memDone: w === 1 ? [tmem(side, 'S', t.S, M, 'release', `S${m}`)] : undefined,
      });
      if (masks(m)) cmp.exec('fma', (elems * 2) / (gpu.fmaPerClk * FFMA2), 'mask', `S${m}`, { phase: phase(['mask'], m) });
      cmp.exec('fma', (elems * scale) / (gpu.fmaPerClk * FFMA2), 'S·scale·log2e − LSE', `S${m}`, { phase: phase(['recompute'], m) });
      cmp.arrive(lseAt[i].empty);
      cmp.exec('mufu', elems / gpu.mufuPerClk, 'exp2 → P', `P${m}`, { phase: phase(['recompute'], m) });
      cmp.exec('tmem', tmemMove(elems * e), `tcgen05.st P${m}`, `P${m}`, {
        phase: phase(['recompute'], m),
        mem: w === 0 ? [tmem(side, 'P', t.P, pCols, 'fill', `P${m}`)] : undefined,
      });
      cmp.arrive(pFull);
      cmp.wait(dPsumAt[i].full, dPsumAt[i].use);
      cmp.wait(dPFull, i);
      cmp.exec('tmem', tmemMove(elems * 4), `tcgen05.ld dP${m}`, `dP${m}`, {
        phase: phase(['ds'], m),
        memDone: w === 1 ? [tmem(side, 'dP', t.dP, M, 'release', `dP${m}`)] : undefined,
      });
      cmp.exec('fma', (elems * 2) / (gpu.fmaPerClk * FFMA2), 'dS = P ∘ (dP − dPsum), cvt', `dS${m}`, { phase: phase(['ds'], m) });
      cmp.arrive(dPsumAt[i].empty);
      cmp.exec('tmem', tmemMove(elems * e), `tcgen05.st dS${m}`, `dS${m}`, {
        phase: phase(['ds'], m),
        mem: w === 0 ? [tmem(side, 'dS', t.dS, pCols, 'fill', `dS${m}`)] : undefined,
      });
      // sdS is free once the previous dQ MMA has read it.
      cmp.wait(dSEmpty, i - 1);
      const half = elems * e;
      if (G === 2) {
        // A pair: this CTA's half of dS stays, the other half crosses to the peer (sdS_xchg, or over sdQaccum at d = 192).
        cmp.exec('smem', smemCycles(half / 2), `st.shared dS${m} (own half)`, `dS${m}`, {
          phase: phase(['ds'], m),
          mem: [smemSpec('sdS', 0, half / 2, 'fill', `dS${m}.${w}`, w * (half / 2))],
        });
        if (!wide)
          cmp.exec('smem', smemCycles(half / 2), `st.shared dS${m} → sdS_xchg`, `dS${m}`, {
            phase: phase(['ds'], m),
            mem: [smemSpec('sdS_xchg', 0, half / 2, 'fill', `dS${m}.${w}`, w * (half / 2))],
          });
        cmp.issue('smem', smemCycles(half / 2), `DSMEM copy dS${m} half → peer sdS`, `dS${m}`, {
          phase: phase(['ds'], m),
          latency: DSMEM_LATENCY,
          arrive: [dSXchg],
          memDone: wide ? undefined : [smemSpec('sdS_xchg', 0, half / 2, 'release', `dS${m}.${w}`, w * (half / 2))],
        });
      } else {
        cmp.exec('smem', smemCycles(half), `st.shared dS${m}`, `dS${m}`, {
          phase: phase(['ds'], m),
          mem: [smemSpec('sdS', 0, half, 'fill', `dS${m}.${w}`, w * half)],
        });
      }
      cmp.arrive(dSFull);
    }
    // Epilogue: dV then dK (scaled) from TMEM through SMEM to HBM; fp32 reduce-adds with GQA.
    const kvRows = N;
    const gqa = dp.dkvPostprocess;
    const outE = gqa ? 4 : e;
    const kvHead = Math.floor(work.h / Math.max(1, shape.hq / shape.hk));
    const hbmRow = (work.b * shape.hk + kvHead) * shape.nk + col * N;
    for (const [which, full, cols, stage] of [
      ['dV', dVFull, shape.dv, L.dvStage],
      ['dK', dKFull, shape.d, L.dkStage],
    ] as const) {
      if (n === 0) break;
      const bytes = (kvRows * cols * outE) / 2;
      cmp.wait(full, 0);
      cmp.exec('tmem', tmemMove((kvRows * cols * 4) / 2), `tcgen05.ld ${which}${col}`, `${which}${col}`, {
        phase: phase(['write'], null, null, [which]),
        memDone:
          w === 1 ? [tmem(side, which, which === 'dV' ? t.dV : t.dK, which === 'dV' ? DV : D, 'release', `${which}${col}`)] : undefined,
      });
      cmp.exec(
        'fma',
        (kvRows * cols) / 2 / (gpu.fmaPerClk * FFMA2),
        `${which === 'dK' ? 'dK·scale, ' : ''}cvt ${which}`,
        `${which}${col}`,
        {
          phase: phase(['write'], null, null, [which]),
        },
      );
      const staged = Math.min(bytes, L.sheet.smem.buffers.find((b) => b.name === stage)!.bytes / 2);
      cmp.exec('smem', smemCycles(bytes), `st.shared ${which}${col}`, `${which}${col}`, {
        phase: phase(['write'], null, null, [which]),
        mem: [{ ...smemSpec(stage, 0, staged, 'fill', `${which}${col}.${w}`), offset: L.off(stage) + w * staged }],
      });
      cmp.issue('tma', copy(bytes), gqa ? `tma reduce-add ${which}${col} (fp32)` : `tma store ${which}${col}`, `${which}${col}`, {
        phase: phase(['write'], null, null, [which]),
        latency: gpu.copyLatencyCycles,
        memDone: [
          { ...smemSpec(stage, 0, staged, 'release', `${which}${col}.${w}`), offset: L.off(stage) + w * staged },
          {
            space: 'hbm',
            buffer: gqa ? `${which}accum` : which,
            stage: 0,
            offset: (hbmRow * cols + (w * kvRows * cols) / 2) * outE,
            bytes,
            action: 'fill',
            tile: `${which}${col}.${w}`,
          },
        ],
      });
    }
  }

  // Relay warp (2-CTA): the peer's dS half has landed in this CTA's sdS; tell the leader's MMA warp.
  if (G === 2) {
    const relay = k.role({
      name: `${p}relay`,
      warps: [14],
      registers: dp.registers.mma,
      job: "waits for the peer's dS half in sdS (distributed shared memory) and arrives on the leader's MMA barrier",
    });
    for (let i = 0; i < n; i++) {
      relay.wait(dSXchg, i);
      relay.arrive(dSLeader);
    }
  }

  // Reduce warps: dQ_m out of TMEM, through the sdQaccum slots, TMA reduce-add into dQaccum.
  const red = k.role({
    name: `${p}reduce`,
    warps: [0, 1, 2, 3],
    registers: dp.registers.reduce,
    job: `dQ of each row block: tcgen05.ld, st.shared ${dp.dQReduceNcol} fp32 columns at a time, TMA reduce-add into dQaccum`,
  });
  const chunks = D / G / dp.dQReduceNcol;
  const chunkBytes = M * dp.dQReduceNcol * 4;
  const adds = k.counter(`${p}dQ_reduce_add`);
  const qRowBytes = Math.ceil(shape.d / 32) * 32 * 4;
  const dqBase = (work.b * shape.hq + work.h) * ceilDiv(shape.nq, M) * M * qRowBytes;
  let issued = 0;
  for (let i = 0; i < n; i++) {
    const m = rows[i];
    red.wait(dQFull, i);
    red.exec('tmem', tmemMove((M * D * 4) / G), `tcgen05.ld dQ${m}`, `dQ${m}`, {
      phase: phase(['dq'], m),
      memDone: [tmem(side, 'dQ', t.dQ, D / G, 'release', `dQ${m}`)],
    });
    red.arrive(dQEmpty);
    for (let c = 0; c < chunks; c++) {
      const slot = issued % dp.sdQaccumStage;
      red.wait(adds, issued - dp.sdQaccumStage);
      red.exec('smem', smemCycles(chunkBytes), `st.shared dQ${m}[${c}]`, `dQ${m}`, {
        phase: phase(['dq'], m),
        mem: [smemSpec('sdQaccum', slot, chunkBytes, 'fill', `dQ${m}.${c}`)],
      });
      red.issue('tma', copy(chunkBytes), `tma reduce-add dQ${m}[${c}]`, `dQ${m}`, {
        phase: phase(['dq'], m),
        latency: gpu.copyLatencyCycles,
        arrive: [adds],
        memDone: [
          smemSpec('sdQaccum', slot, chunkBytes, 'release', `dQ${m}.${c}`),
          {
            space: 'hbm',
            buffer: 'dQaccum',
            stage: 0,
            offset: dqBase + m * M * qRowBytes + ((col % G) * (D / G) + c * dp.dQReduceNcol) * 4,
            bytes: chunkBytes,
            action: 'fill',
            tile: `dQ${m}.${c}`,
          },
        ],
      });
      issued++;
    }
  }
}

/**
 * Deterministic mode: the column blocks of a head add into each dQ row block in turn; each wave
 * pays the hand-off chain once. With GQA the query heads of a KV head then add dV and dK in head
 * order (flash_bwd_sm100.py@0251105a l. 4088-4092, 4160-4165), which costs where a group's CTAs
 * of one column block share a wave (fa4DkvSemaphoreUs).
 */
function crossCtaUs(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, waves: number): number {
  if (!f.deterministic) return 0;
  const dp = fa4BwdDispatchOf(shape, true);
  const pairs = ceilDiv(shape.nk, dp.tileN * dp.ctaGroup);
  const w = Math.max(1, waves);
  return w * (pairs - 1) * FA4_DQ_SEMAPHORE_HANDOFF_US + fa4DkvSemaphoreUs(gpu, shape, dp, w);
}

/**
 * The wait on GQA's dK/dV semaphores over `waves` waves. The grid runs heads outermost, so a wave
 * holds about (its CTAs / column blocks) heads; the group's heads in one wave finish their
 * epilogues one after another: each later one waits for one CTA's fp32 dV and dK adds (at one
 * SM's share of HBM) plus the hand-off. Heads in later waves find their turn already come.
 */
export function fa4DkvSemaphoreUs(gpu: GpuSpec, shape: ProblemShape, dp: Fa4BwdDispatch, waves: number): number {
  if (dp.qheadPerKvhead <= 1 || !dp.dkvPostprocess) return 0;
  const ctas = shape.batch * shape.hq * dp.numNBlocks;
  const headsPerWave = Math.floor(ceilDiv(ctas, waves) / dp.numNBlocks);
  const together = Math.min(dp.qheadPerKvhead, Math.max(1, headsPerWave));
  const addsUs = ((dp.tileN * (dp.dPad + dp.dvPad) * 4) / (gpu.hbmBytesPerSec / gpu.smCount)) * 1e6;
  return waves * (together - 1) * (addsUs + FA4_DQ_SEMAPHORE_HANDOFF_US);
}

export const fa4BwdHw: HwAlgorithm = {
  id: 'fa4',
  name: 'FlashAttention-4 backward (SM100: TMEM accumulators, compute and dQ-reduce warpgroups)',
  arch: [100],
  switches: { deterministic: FA4_BACKWARD_FEATURES.deterministic },
  // The two compute warpgroups split a tile's query rows, not its keys: every op serves the CTA's keys.
  geometry: (sheet) => ({ ctaRows: sheet.tiles.block_n, subRows: sheet.tiles.block_n }),
  resources: fa4BwdResources,
  grid,
  build,
  epilogueKernelUs: (gpu, shape) => aroundKernelsUs(gpu, shape),
  flops: backwardFlops,
  crossCtaUs,
  hbmBytes: backwardHbmBytes,
};
