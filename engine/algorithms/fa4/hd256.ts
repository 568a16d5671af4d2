// FA4's dedicated d = dv = 256 forward on SM100: sm100_hd256_2cta_fmha_forward.py@0251105a
// (class BlackwellFusedMultiHeadAttentionForward), which interface.py@0251105a picks for every
// d = dv = 256 problem (l. 838-840, 1306-1336). Always a CTA pair (cluster (2, 1)):
//   tiles: one 128-row Q tile per CTA, 128-key blocks (l. 79-81, 87); the pair's MMAs are
//     M = 256 (both CTAs' rows), N = 128, K = 128, so S = Q·Kᵀ takes two MMAs over the two
//     128-column halves of d and O += P·V two MMAs, one per 128-column half of dv (l. 99-111);
//   warps: softmax 0-3, correction 4-7 (it also writes O), mma 8, load 9, 10-11 idle
//     (l. 121-125); registers 256 / 160 / 32 (l. 149-153 with _TUNING_CONFIG);
//   stages: Q in 2 stages (its two d halves), one K/V ring of 4 stages that carries K and V
//     chunks in load order, S/P double-buffered in TMEM, one O (l. 160-164);
//   SMEM per CTA: sQ, sK and sV each of their own (l. 767-791): the leader holds rows 0-127
//     of the pair's Q and half of every K/V chunk (the B operand of a cta_group::2 MMA is
//     split between the two CTAs), the peer the other halves;
//   TMEM per CTA: all 512 columns (l. 127, 716): S0 at 0, S1 at 128, O at 256-511 (l. 145-147);
//     P (16-bit) over the first 64 columns of its S stage, the row max pair at column 64 of it
//     (l. 1609-1628, 1675);
//   order: load Q, K0, then K_i before V_{i-1} (l. 976-1057); the leader's MMA warp alone
//     issues QK0, then QK_i before PV_{i-1}, then PV_last (l. 1114-1310); the peer's MMA warp
//     issues nothing; softmax commits P per block and its row-max pair to correction
//     (l. 1562-1724); correction rescales O after every block but the first, with no
//     threshold, then divides by the row sum and stores O from registers to global
//     (l. 1504-1521, 1727-1879). Non-persistent; no local attention (l. 115, 208-210).

import type { ResourceSheet } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  EXP2_POLY_FMA_OPS,
  SOFTMAX_FMA_OPS,
  elemBytes,
  emptySheet,
  hbmOut,
  kvBlocksOf,
  mmaCycles,
  phase as opPhase,
  prefix,
  sequencesOf,
  tensorRate,
  type BuildContext,
  type CtaWork,
  type HwFeatures,
  type ProblemShape,
} from '../../hw/model.ts';
import type { Kernel, MemSpec } from '../../hw/scheduler.ts';
import { maskLabel, maskedKvSteps, type KernelMask } from '../../hw/mask-steps.ts';
import { allocCtaMemory, ctaSides, type CtaSide } from './pair.ts';
import { SmemPacker } from './smem-packer.ts';
import { exp2EmulatedShare, type Fa4Config } from './tiles.ts';

/** Rows of one CTA's Q tile and keys per K/V block (l. 79-81). */
export const HD256_TILE = 128;
/** Columns of each MMA's K extent and of each half of d / dv (qk_mma_tiler[2], pv_mma_tiler[1]). */
const CHUNK = 128;
/** Halves of d (QK MMAs per block) and of dv (PV MMAs per block): iterations_qk, iterations_pv. */
const HALVES = 2;
/** Barrier words and the scheduler's response buffer at the head of SharedStorage (l. 523-549): 29 mbarriers, the TMEM pointer, 2 more mbarriers and 4 words. */
const STORAGE_BYTES = 29 * 8 + 8 + 2 * 8 + 4 * 4;

export interface Hd256Layout {
  sheet: ResourceSheet;
  qOff: number[];
  kOff: number[];
  vOff: number[];
  /** Bytes one CTA holds of a Q half (its 128 rows) and of a K or V chunk (half of its 128 rows). */
  qChunk: number;
  kvChunk: number;
  tmem: { s: number[]; p: number[]; o: number };
}

export function hd256Layout(gpu: GpuSpec, shape: ProblemShape, cfg: Fa4Config, f: HwFeatures): Hd256Layout {
  const e = elemBytes(shape.dtype);
  const sheet = emptySheet('fa4', gpu, HD256_TILE, HD256_TILE);
  sheet.cta_group = 2;
  sheet.q_stage = HALVES;
  sheet.kv_stage = cfg.kvStage;
  const qChunk = HD256_TILE * CHUNK * e;
  const kvChunk = (HD256_TILE / 2) * CHUNK * e;
  const smem = new SmemPacker(sheet);
  const push = smem.push.bind(smem);
  push('mbarriers', 0, STORAGE_BYTES, 8);
  // allocate_tensor(..., byte_alignment=128) for sQ, sK, sV and sSum (l. 767-791).
  const qOff = Array.from({ length: HALVES }, (_, c) => push('sQ', c, qChunk, c === 0 ? 128 : 1));
  const kOff = Array.from({ length: cfg.kvStage }, (_, s) => push('sK', s, kvChunk, s === 0 ? 128 : 1));
  const vOff = Array.from({ length: cfg.kvStage }, (_, s) => push('sV', s, kvChunk, s === 0 ? 128 : 1));
  push('sSum', 0, HD256_TILE * 4, 128);
  sheet.smem.used_bytes = smem.end;
  const kb = (n: number) => `${n / 1024} KiB`;
  sheet.notes.push(
    `d = dv = 256 runs upstream's dedicated kernel (sm100_hd256_2cta_fmha_forward.py): always a CTA pair with cta_group::2 MMAs of M = 256 (each CTA's 128 Q rows), N = 128, K = 128 — two MMAs per S (the halves of d) and two per P·V (the halves of dv).`,
    `SMEM per CTA: 2 × sQ (the two 128-column halves of its Q tile) = ${kb(HALVES * qChunk)}, sK and sV of ${cfg.kvStage} × ${kb(kvChunk)} each (a stage holds 64 of a chunk's 128 rows; the peer holds the other 64), sSum; ${smem.end} bytes. One ${cfg.kvStage}-stage ring sequences K and V chunks in load order.`,
    'q_stage = 2 here counts the two d-halves of one Q tile (iterations_qk), not two Q tiles.',
    'TMEM per CTA: all 512 columns: S0 at 0, S1 at 128, O (256 fp32 columns) at 256; P_i is written over the first 64 columns of S_i, the row-max pair for correction at column 64.',
    'Correction rescales O after every K/V block but the first (this kernel has no rescale threshold), then writes O from registers straight to global memory.',
  );
  const s = [0, HD256_TILE];
  const p = [...s];
  const o = 2 * HD256_TILE;
  if (sheet.tmem) {
    sheet.tmem.buffers.push(
      { name: 'S0', column: s[0], columns: HD256_TILE },
      { name: 'S1', column: s[1], columns: HD256_TILE },
      { name: 'P0', column: p[0], columns: HD256_TILE / 2 },
      { name: 'P1', column: p[1], columns: HD256_TILE / 2 },
      { name: 'O', column: o, columns: shape.dv },
    );
  }
  const r = cfg.registers;
  sheet.roles.push(
    // The one softmax warpgroup is the CTA's consumer, as in the main kernel's sheet.
    { name: 'consumer0', kernel_name: 'softmax0', warps: [0, 1, 2, 3], registers: r.softmax },
    { name: 'correction', warps: [4, 5, 6, 7], registers: r.correction },
    { name: 'mma', warps: [8], registers: r.other },
    { name: 'load', warps: [9], registers: r.other },
    { name: 'empty', warps: [10, 11], registers: r.other },
  );
  if (f.stages !== undefined && f.stages !== cfg.kvStage)
    sheet.does_not_fit.push(`stages: the d = 256 kernel has a fixed ${cfg.kvStage}-stage K/V ring (_setup_attributes), got ${f.stages}`);
  return { sheet, qOff, kOff, vOff, qChunk, kvChunk, tmem: { s, p, o } };
}

/** One pair: rows [2·128·qBlock, +256) of (b, h); the leader's CTA holds the first 128. */
export function buildHd256(
  k: Kernel,
  ctx: BuildContext,
  work: CtaWork,
  cfg: Fa4Config,
  L: Hd256Layout,
  umma: { efficiency: number; latency: number; tmemBytesPerClk: number },
  mask: KernelMask,
): void {
  const { gpu, shape, features: f } = ctx;
  const p = prefix(ctx);
  const e = elemBytes(shape.dtype);
  const kv = kvBlocksOf(work);
  const n = kv.length;
  const S = cfg.kvStage;
  const sides = ctaSides(2);
  const lanes = gpu.tmem?.lanes ?? 128;
  k.fifoUnits.add('tensor');
  const tm = allocCtaMemory(k, sides, L.sheet, p, lanes, ['mbarriers']);
  const rate = tensorRate(gpu, shape.dtype) * umma.efficiency;
  // Each SM's tensor core computes its CTA's 128 rows of an M = 256 MMA.
  const qkChunk = mmaCycles(HD256_TILE, HD256_TILE, CHUNK, rate);
  const pvChunk = mmaCycles(HD256_TILE, CHUNK, HD256_TILE, rate);
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const tmemMove = (bytes: number) => bytes / umma.tmemBytesPerClk;
  const elems = HD256_TILE * HD256_TILE;
  const emu = f.exp2Emulation ? exp2EmulatedShare(HD256_TILE, cfg.exp2) : 0;
  const PACKED = 2;

  // The load sequence of the K/V ring: K0 halves, then K_i halves before V_{i-1} halves, V_last (l. 986-1057).
  type KvLoad = { kind: 'K' | 'V'; j: number; half: number; c: number };
  const seq: KvLoad[] = [];
  const push = (kind: 'K' | 'V', i: number) => {
    for (let h = 0; h < HALVES; h++) seq.push({ kind, j: kv[i], half: h, c: seq.length });
  };
  if (n > 0) {
    push('K', 0);
    for (let i = 1; i < n; i++) {
      push('K', i);
      push('V', i - 1);
    }
    push('V', n - 1);
  }
  const kvAt = (kind: 'K' | 'V', i: number, h: number) => seq.find((x) => x.kind === kind && x.j === kv[i] && x.half === h)!;
  const slot = (side: CtaSide, x: KvLoad, action: 'fill' | 'release'): MemSpec => ({
    space: 'smem',
    buffer: `${p}${side.tag}s${x.kind}`,
    stage: x.c % S,
    offset: (x.kind === 'K' ? L.kOff : L.vOff)[x.c % S],
    bytes: L.kvChunk,
    action,
    tile: `${x.kind}${x.j}.${x.half}`,
  });

  // Barriers: shared where upstream's pipeline spans the cluster (cta_layout_vmnk, consumer
  // groups × cluster size: l. 638-707), per CTA where it is CTA-local (s_corr, sum).
  const qFull = [0, 1].map((c) => k.mbarrier(`${p}load_q_full[${c}]`, 2));
  const kvFull = Array.from({ length: S }, (_, s) => k.mbarrier(`${p}load_kv_full[${s}]`, 2));
  const kvEmpty = Array.from({ length: S }, (_, s) =>
    k.mbarrier(`${p}load_kv_empty[${s}]`, 1, (ph) => {
      const x = seq[s + ph * S];
      return x ? sides.map((side) => slot(side, x, 'release')) : null;
    }),
  );
  const sFull = [0, 1].map((s) => k.mbarrier(`${p}mma_s_full[${s}]`));
  const sEmpty = [0, 1].map((s) => k.mbarrier(`${p}mma_s_empty[${s}]`, 2));
  const pFull = [0, 1].map((s) => k.mbarrier(`${p}p_mma_full[${s}]`, 2));
  const pEmpty = [0, 1].map((s) => k.mbarrier(`${p}p_mma_empty[${s}]`));
  const oFull = k.mbarrier(`${p}mma_corr_full`);
  const oEmpty = k.mbarrier(`${p}mma_corr_empty`, 2);
  const local = sides.map((side) => ({
    statsFull: [0, 1].map((s) => k.mbarrier(`${p}${side.tag}s_corr_full[${s}]`)),
    statsEmpty: [0, 1].map((s) => k.mbarrier(`${p}${side.tag}s_corr_empty[${s}]`)),
    sumFull: k.mbarrier(`${p}${side.tag}sum_full`),
  }));
  const rowOf = (side: CtaSide) => (2 * work.qBlock + side.rank) * HD256_TILE;
  const qName = (side: CtaSide) => `Q${2 * work.qBlock + side.rank}`;

  // Roles in pairs, leader above peer, so the timeline shows each job of the two CTAs side by side.
  const loads = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}load`,
      warps: [9],
      registers: cfg.registers.other,
      job: `TMA loads of this CTA's share: its Q tile (two d-halves), then K_i before V_i−1, rows ${side.rank === 0 ? '0-63' : '64-127'} of each 128-row chunk; its bytes count on the leader's barriers`,
    }),
  );
  const mmas = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}mma`,
      warps: [8],
      registers: cfg.registers.other,
      job:
        side.rank === 0
          ? 'issues every tcgen05.mma cta_group::2 of the pair: M = 256 over both CTAs, each SM computing its own 128 rows into its own TMEM'
          : "issues nothing (is_leader_cta is false): this SM's tensor core runs the leader's cta_group::2 MMAs",
    }),
  );
  const softmaxes = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}softmax0`,
      warps: [0, 1, 2, 3],
      registers: cfg.registers.softmax,
      job: `online softmax of ${qName(side)} (rows ${rowOf(side)}-${rowOf(side) + HD256_TILE - 1}): S from its own TMEM, P back over S`,
    }),
  );
  const corrs = sides.map((side) =>
    k.role({
      name: `${p}${side.tag}correction`,
      warps: [4, 5, 6, 7],
      registers: cfg.registers.correction,
      job: 'rescales O in its own TMEM after every block but the first; at the end divides by the row sum and stores O to global',
    }),
  );
  sides.map((side) =>
    k.role({
      name: `${p}${side.tag}empty`,
      warps: [10, 11],
      registers: cfg.registers.other,
      job: 'idle: gives its registers to the others',
    }),
  );

  // Load warps (each CTA its own copies; all arrive on the leader's barriers).
  for (const [i, side] of sides.entries()) {
    const ld = loads[i];
    const unit = side.unit('tma');
    for (let c = 0; c < HALVES; c++)
      ld.issue(unit, load(L.qChunk), `tma ${qName(side)} d-half ${c}`, qName(side), {
        phase: opPhase(['load'], null, side.rank, ['Q']),
        latency: gpu.copyLatencyCycles,
        arrive: [qFull[c]],
        mem: [
          {
            space: 'smem',
            buffer: `${p}${side.tag}sQ`,
            stage: c,
            offset: L.qOff[c],
            bytes: L.qChunk,
            action: 'fill',
            tile: `${qName(side)}.${c}`,
          },
        ],
      });
    for (const x of seq) {
      ld.wait(kvEmpty[x.c % S], Math.floor(x.c / S) - 1);
      ld.issue(unit, load(L.kvChunk), `tma ${x.kind}${x.j} ${x.kind === 'K' ? 'd' : 'dv'}-half ${x.half}`, `${x.kind}${x.j}`, {
        phase: opPhase(['load'], x.j, side.rank, [x.kind]),
        latency: gpu.copyLatencyCycles,
        arrive: [kvFull[x.c % S]],
        mem: [slot(side, x, 'fill')],
      });
    }
  }

  // The leader's MMA warp.
  const mma = mmas[0];
  const pair = ' (cta_group::2)';
  const qk = (i: number) => {
    const st = i % 2;
    mma.wait(sEmpty[st], Math.floor(i / 2) - 1);
    for (let h = 0; h < HALVES; h++) {
      if (i === 0) mma.wait(qFull[h], 0);
      const x = kvAt('K', i, h);
      mma.wait(kvFull[x.c % S], Math.floor(x.c / S));
      mma.issue('tensor', qkChunk, `S${st}${h ? '+' : ''}=Q[:,${h * CHUNK}:]·K${kv[i]}ᵀ${pair}`, `S${st}`, {
        phase: { ...opPhase(['qk'], kv[i], 0), subEnd: 1 },
        latency: h === HALVES - 1 ? umma.latency : 0,
        arrive: h === HALVES - 1 ? [kvEmpty[x.c % S], sFull[st]] : [kvEmpty[x.c % S]],
        memBegin: h === 0 ? sides.map((side) => tm(side, `S${st}`, L.tmem.s[st], HD256_TILE, 'fill', `S${st}.${kv[i]}`)) : undefined,
      });
    }
  };
  const pv = (i: number) => {
    const st = i % 2;
    mma.wait(pFull[st], Math.floor(i / 2));
    mma.wait(oEmpty, i - 1);
    for (let h = 0; h < HALVES; h++) {
      const x = kvAt('V', i, h);
      mma.wait(kvFull[x.c % S], Math.floor(x.c / S));
      const last = h === HALVES - 1;
      mma.issue('tensor', pvChunk, `O[:,${h * CHUNK}:]+=P${st}·V${kv[i]}${pair}`, 'O', {
        phase: { ...opPhase(['pv'], kv[i], 0), subEnd: 1 },
        latency: last ? umma.latency : 0,
        arrive: last ? [kvEmpty[x.c % S], oFull, pEmpty[st]] : [kvEmpty[x.c % S]],
        memBegin: i === 0 && h === 0 ? sides.map((side) => tm(side, 'O', L.tmem.o, shape.dv, 'fill', 'O')) : undefined,
        memDone: last ? sides.map((side) => tm(side, `P${st}`, L.tmem.p[st], HD256_TILE / 2, 'release', `P${st}.${kv[i]}`)) : undefined,
      });
    }
  };
  if (n > 0) {
    qk(0);
    for (let i = 1; i < n; i++) {
      qk(i);
      pv(i - 1);
    }
    pv(n - 1);
  }

  // Both CTAs mask the last block and, when causal, the blocks from the pair's diagonal on (need_apply_mask, l. 1367-1398, over 256-row MMA tiles).
  const maskSteps = hd256MaskedSteps(shape, work, mask);
  for (const [r, side] of sides.entries()) {
    const u = side.unit;
    const B = local[r];
    const sm = softmaxes[r];
    for (let i = 0; i < n; i++) {
      const j = kv[i];
      const st = i % 2;
      const ph = (kinds: Parameters<typeof opPhase>[0]) => opPhase(kinds, j, side.rank);
      sm.wait(sFull[st], Math.floor(i / 2));
      sm.exec(u('tmem'), tmemMove(elems * 4), `tcgen05.ld S${st}`, `S${st}`, {
        phase: ph(['mask']),
        memDone: [tm(side, `S${st}`, L.tmem.s[st], HD256_TILE, 'release', `S${st}.${j}`)],
      });
      sm.arrive(sEmpty[st]);
      if (maskSteps.has(j)) sm.exec(u('fma'), (elems * 2) / (gpu.fmaPerClk * PACKED), maskLabel(mask), `S${st}`, { phase: ph(['mask']) });
      sm.exec(u('fma'), elems / (gpu.fmaPerClk * PACKED), 'row max', `S${st}`, { phase: ph(['rowmax']) });
      sm.wait(B.statsEmpty[st], Math.floor(i / 2) - 1);
      sm.exec(u('tmem'), tmemMove(HD256_TILE * 2 * 4), `tcgen05.st m_old, m_new → S${st}[64:66]`, `S${st}`, { phase: ph(['rowmax']) });
      sm.arrive(B.statsFull[st]);
      sm.wait(pEmpty[st], Math.floor(i / 2) - 1);
      sm.exec(u('fma'), elems / (gpu.fmaPerClk * PACKED), 'x·scale − max', `P${st}`, { phase: ph(['exp']) });
      if (emu < 1)
        sm.exec(u('mufu'), (elems * (1 - emu)) / gpu.mufuPerClk, `exp2 MUFU (${Math.round((1 - emu) * 100)}%)`, `P${st}`, {
          phase: ph(['exp']),
        });
      if (emu > 0)
        sm.exec(
          u('fma'),
          (elems * emu * EXP2_POLY_FMA_OPS) / (gpu.fmaPerClk * PACKED),
          `exp2 polynomial (${Math.round(emu * 100)}%)`,
          `P${st}`,
          {
            phase: ph(['exp']),
          },
        );
      sm.exec(u('tmem'), tmemMove(elems * e), `tcgen05.st P${st}`, `P${st}`, {
        phase: ph(['exp']),
        mem: [tm(side, `P${st}`, L.tmem.p[st], HD256_TILE / 2, 'fill', `P${st}.${j}`)],
      });
      sm.arrive(pFull[st]);
      sm.exec(u('fma'), (elems * (SOFTMAX_FMA_OPS - 2)) / (gpu.fmaPerClk * PACKED), 'row sum', `P${st}`, { phase: ph(['rowsum']) });
    }
    if (n > 0) {
      sm.exec(u('smem'), (HD256_TILE * 4) / gpu.smemBytesPerClk, 'row sum → sSum', 'l', {
        phase: opPhase(['rowsum'], kv[n - 1], side.rank),
      });
      sm.arrive(B.sumFull);
    }

    const corr = corrs[r];
    const oBytes = HD256_TILE * shape.dv * 4;
    for (let i = 0; i < n; i++) {
      const st = i % 2;
      corr.wait(B.statsFull[st], Math.floor(i / 2));
      if (i === 0) {
        corr.arrive(B.statsEmpty[st]);
        continue;
      }
      const ph = opPhase(['rescale'], kv[i], side.rank);
      corr.exec(u('tmem'), tmemMove(HD256_TILE * 2 * 4), `tcgen05.ld m_old, m_new (S${st})`, 'O', { phase: ph });
      corr.exec(u('fma'), (HD256_TILE * 2) / gpu.fmaPerClk, 'scale = exp2(m_old − m_new)', 'O', { phase: ph });
      corr.arrive(B.statsEmpty[st]);
      corr.wait(oFull, i - 1);
      corr.exec(u('tmem'), tmemMove(oBytes), 'tcgen05.ld O', 'O', { phase: ph });
      corr.exec(u('fma'), (HD256_TILE * shape.dv) / (gpu.fmaPerClk * PACKED), 'O *= scale', 'O', { phase: ph });
      corr.exec(u('tmem'), tmemMove(oBytes), 'tcgen05.st O', 'O', { phase: ph });
      corr.arrive(oEmpty);
    }
    if (n > 0) {
      const ph = opPhase(['normalize'], null, side.rank);
      corr.wait(B.sumFull, 0);
      corr.wait(oFull, n - 1);
      corr.exec(u('tmem'), tmemMove(oBytes), 'tcgen05.ld O', 'O', {
        phase: ph,
        memDone: [tm(side, 'O', L.tmem.o, shape.dv, 'release', 'O')],
      });
      corr.exec(u('fma'), (HD256_TILE * shape.dv * 2) / (gpu.fmaPerClk * PACKED), 'O / l, cvt', 'O', { phase: ph });
      corr.arrive(oEmpty);
      const oTile = HD256_TILE * shape.dv * e;
      corr.issue(u('store'), load(oTile), `st.global ${qName(side).replace('Q', 'O')}`, 'O', {
        phase: opPhase(['write'], null, side.rank, ['O']),
        latency: gpu.copyLatencyCycles,
        memDone: [hbmOut(shape, work, rowOf(side), HD256_TILE, qName(side).replace('Q', 'O'))],
      });
    }
  }
}

/** The blocks both CTAs of a d = 256 pair mask: the last one and, when causal, those from the pair's diagonal on (need_apply_mask, l. 1367-1398, over 256-row MMA tiles). */
export function hd256MaskedSteps(shape: ProblemShape, work: CtaWork, mask: KernelMask): Set<number> {
  return maskedKvSteps(sequencesOf(shape)[work.b] ?? shape, work.qBlock, 2 * HD256_TILE, HD256_TILE, work.kvFrom, work.kvTo, mask);
}
