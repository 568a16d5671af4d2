// FA3's host-side dispatch for one problem, read off hopper/ at 0251105a in the order mha_fwd
// runs it: the refusals, the window normalisation, the compiled head-dim instance, the paged-KV
// TMA choice, num_splits, pack_gqa, the tile, the cluster, the registers and the grid. Every
// decision appends its upstream file:line to `why`, which `describe` prints.

import { isFp8, type DType } from '../../core/problem.ts';
import type { DispatchInput } from '../../hw/dispatch-input.ts';

const API = 'hopper/flash_api.cpp@0251105a';
const TILE = 'hopper/tile_size.h@0251105a';
const HEUR = 'hopper/heuristics.h@0251105a';
const LAUNCH = 'hopper/flash_fwd_launch_template.h@0251105a';
const KERNEL = 'hopper/flash_fwd_kernel_sm90.h@0251105a';
const SCHED = 'hopper/tile_scheduler.hpp@0251105a';

/**
 * What the dispatch reads from the problem (engine/hw/dispatch-input.ts). nq / nk are max_seqlen_q /
 * max_seqlen_k under varlen; numSplits undefined or 0: upstream's heuristic, N ≥ 1: forced;
 * packGqa undefined: upstream's heuristic.
 */
export type Fa3DispatchInput = DispatchInput;

export interface Fa3Dispatch {
  /** Upstream's refusal message, when it refuses; the other fields are then as far as dispatch got. */
  refused?: string;
  /** The compiled kernel instance ⟨kHeadDim, kHeadDimV⟩ run_mha_fwd picks. */
  instance: { d: number; dv: number };
  /** params.d_rounded / dv_rounded: what the heuristics pass to tile_size_fwd_sm90. */
  rounded: { d: number; dv: number };
  isCausal: boolean;
  isLocal: boolean;
  /** Normalised window as the kernel receives it (set_params_fprop). */
  windowLeft: number;
  windowRight: number;
  /** attention_chunk (0: none): local kernels clip their K/V range and masks to the query's chunk (block.h l. 30-32, 41-43). */
  attentionChunk: number;
  pagedKvNonTma: boolean;
  blockM: number;
  blockN: number;
  mmaPvIsRs: boolean;
  intraWgOverlap: boolean;
  stages: number;
  numSplits: number;
  packGqa: boolean;
  /** ClusterM: 2 where Enable_cluster and an even number of M blocks. */
  cluster: 1 | 2;
  consumers: number;
  producerRegisters: number;
  consumerRegisters: number;
  /** M blocks per (batch, head or KV head when packed). */
  numMBlocks: number;
  /** Work tiles the scheduler hands out: num_blocks_m × heads × batch × splits. */
  tiles: number;
  /** CTAs launched: the SM count for the persistent schedulers, every tile for the single-tile one. */
  gridCtas: number;
  scheduler: 'single-tile' | 'static-persistent' | 'dynamic-persistent' | 'varlen-dynamic-persistent';
  why: string[];
}

const roundUpHeaddim = (h: number) => (h <= 64 ? 64 : h <= 96 ? 96 : h <= 128 ? 128 : h <= 192 ? 192 : 256);
const roundUpHeaddimV = (h: number) => (h <= 64 ? 64 : h <= 96 ? 96 : h <= 128 ? 128 : h <= 192 ? 192 : h <= 256 ? 256 : 512);

/** The compiled ⟨kHeadDim, kHeadDimV⟩ instance run_mha_fwd dispatches (d, dv) to (flash_api.cpp l. 258-360). */
export function fa3Instance(d: number, dv: number, dtype: DType): { d: number; dv: number } {
  if (d <= 64) {
    if (isFp8(dtype)) return { d: 64, dv: 64 };
    return dv > 256 ? { d: 64, dv: 512 } : dv > 64 ? { d: 64, dv: 256 } : { d: 64, dv: 64 };
  }
  if (d <= 96) return { d: 96, dv: 96 };
  if (d <= 128) return { d: 128, dv: 128 };
  if (d <= 192) return dv <= 128 ? { d: 192, dv: 128 } : { d: 192, dv: 192 };
  return { d: 256, dv: 256 };
}

/** tile_size_fwd_sm90 (tile_size.h l. 10-54): [kBlockM, kBlockN, MmaPV_is_RS, IntraWGOverlap]. */
export function tileSizeFwdSm90(
  headdim: number,
  headdimV: number,
  isCausal: boolean,
  isLocal: boolean,
  elementSize: 1 | 2,
  vColmajor: boolean,
  pagedKvNonTma: boolean,
  softcap: boolean,
): [number, number, boolean, boolean] {
  if (elementSize === 2) {
    if (headdim <= 64) {
      if (headdimV === 512) return [64, 64, false, false];
      if (headdimV === 256) return [128, 96, true, false];
      const n128 = isCausal || isLocal || pagedKvNonTma;
      return [192, n128 ? 128 : 192, n128, true];
    }
    if (headdim <= 96) return [192, isLocal || pagedKvNonTma ? 128 : 144, false, true];
    if (headdim <= 128) return [128, isCausal || isLocal || pagedKvNonTma ? 128 : 176, true, true];
    if (headdim <= 192) return [128, pagedKvNonTma || isLocal ? 96 : headdimV <= 128 ? 128 : 112, true, true];
    return [128, isLocal ? 64 : 80, true, true];
  }
  if (headdim <= 64) return [192, 160, true, true];
  if (headdim <= 96) return [192, 128, true, true];
  if (headdim <= 128) return [128, pagedKvNonTma ? 160 : vColmajor || (softcap && isLocal) ? 192 : 224, true, true];
  if (headdim <= 192) return [128, (pagedKvNonTma || softcap) && isLocal ? 128 : 160, true, true];
  return [128, isLocal ? 64 : 128, true, !pagedKvNonTma];
}

/** should_pack_gqa (heuristics.h l. 9-17). */
export function shouldPackGqa(varlenQ: boolean, seqlenQ: number, qheadPerKhead: number, blockM: number): boolean {
  if (varlenQ) return true;
  const roundUp = (a: number, b: number) => Math.ceil(a / b) * b;
  const nopack = seqlenQ / roundUp(seqlenQ, blockM);
  const pack = (seqlenQ * qheadPerKhead) / roundUp(seqlenQ * qheadPerKhead, blockM);
  return nopack < 0.9 * pack;
}

/** num_splits_heuristic (heuristics.h l. 25-59). */
export function numSplitsHeuristic(
  totalMblocks: number,
  numSms: number,
  numNBlocks: number,
  numMBlocks: number,
  sizeOneKvHead: number,
  isCausalOrLocal: boolean,
  maxSplits: number,
): number {
  if (totalMblocks >= 0.8 * numSms) {
    const sizeL2 = 50 * 1024 * 1024;
    if (sizeOneKvHead > sizeL2 && numMBlocks >= numSms * 2 && !isCausalOrLocal)
      return Math.min(Math.ceil(sizeOneKvHead / sizeL2), maxSplits);
    return 1;
  }
  if (numNBlocks <= 4) return 1;
  const max = Math.min(maxSplits, numSms, numNBlocks);
  const eff: number[] = [];
  let best = 0;
  for (let s = 1; s <= max; s++) {
    const waves = (totalMblocks * s) / numSms;
    const e = waves / Math.ceil(waves);
    best = Math.max(best, e);
    eff.push(e);
  }
  for (let s = 1; s <= max; s++) if (eff[s - 1] >= 0.85 * best) return s;
  return 1;
}

/** mha_fwd's decisions for this problem on an SM90 GPU with `numSms` SMs. */
export function fa3Dispatch(p: Fa3DispatchInput, numSms: number): Fa3Dispatch {
  const why: string[] = [];
  if (p.pageSize !== undefined && p.nk % p.pageSize !== 0) {
    p = { ...p, nk: Math.ceil(p.nk / p.pageSize) * p.pageSize };
    why.push(`${API} l. 768: paged KV: seqlen_k = pages per sequence × page_size = ${p.nk}`);
  }
  const fp8 = isFp8(p.dtype);
  const refusals: string[] = [];
  if (!(p.dtype === 'fp16' || p.dtype === 'bf16' || p.dtype === 'fp8e4m3')) {
    refusals.push('FlashAttention only supports fp16, bf16, and fp8_e4m3 data type');
    why.push(`${API} l. 715-716: q dtype is fp16, bf16 or fp8_e4m3`);
  }
  if (p.d > 256) {
    refusals.push('FlashAttention forward only supports head dimension at most 256');
    why.push(`${API} l. 779-780: head_size <= get_max_headdim() = 256`);
  }
  if (p.hq % p.hk !== 0) {
    refusals.push('Number of heads in key/value must divide number of heads in query');
    why.push(`${API} l. 781`);
  }
  if (p.dv !== p.d) {
    const ok = (p.d > 128 && p.d <= 192 && p.dv > 96 && p.dv <= 128) || (p.d <= 64 && p.dv <= 512);
    if (!ok)
      refusals.push(
        'If V headdim is different from Q/K dim, we only support Q/K headdim in (128, 192] and V headdim in (96, 128], or (Q/K <= 64 and V <= 512).',
      );
    if (p.dv > 256 && fp8) refusals.push('HeaddimV > 256 requires fp16 and bf16 data type');
    why.push(`${API} l. 782-792: d ≠ dv takes d in (128, 192] with dv in (96, 128], or d ≤ 64 with dv ≤ 512 (dv > 256: 16-bit only)`);
  }
  if (p.pageSize !== undefined && p.varlenK && !p.seqused) {
    refusals.push('If cu_seqlens_k is passed in, then page table is not supported');
    why.push(`${API} l. 754`);
  }
  const alignment = fp8 ? 16 : 8;
  if (p.d % alignment !== 0 || p.dv % alignment !== 0) {
    refusals.push(`head_size should be a multiple of ${alignment}`);
    why.push(`${API} l. 854-856: head dims are multiples of ${alignment} (16 bytes)`);
  }

  // Window normalisation (mha_fwd l. 796-804), then set_params_fprop (l. 146-157).
  let left = p.window?.left ?? -1;
  let right = p.window?.right ?? -1;
  let causal = p.causal;
  const chunk = p.attentionChunk ?? 0;
  if (left >= p.nk - 1) left = -1;
  if (right >= p.nq - 1) right = -1;
  if (p.nq === 1 && left === -1 && right === -1 && chunk === 0) {
    const keep = p.d > 64 && p.d <= 128 && p.pageSize !== undefined;
    if (!keep && causal) {
      causal = false;
      why.push(`${API} l. 799-803: seqlen_q = 1 with no window: causal is the same as non-causal and is dropped`);
    }
  }
  if (causal) right = 0;
  const isCausal = left < 0 && right === 0 && chunk === 0;
  const isLocal = (left >= 0 || right >= 0 || chunk >= 1) && !isCausal;
  why.push(
    `${API} l. 796-804, 148-149: window (${p.window?.left ?? -1}, ${p.window?.right ?? -1})${p.causal ? ' with causal' : ''} → ${isCausal ? 'causal' : isLocal ? 'local' : 'no mask'}`,
  );
  why.push(fa3MaskStepsWhy(isCausal, isLocal, chunk));
  if (p.blockSparse) why.push(FA3_MASK_MOD_WHY);
  let windowLeft = left < 0 ? p.nk - 1 : left;
  let windowRight = right < 0 ? p.nq - 1 : right;
  if (chunk > 0) {
    windowLeft = Math.min(windowLeft, chunk - 1);
    windowRight = Math.min(windowRight, chunk - 1);
  }

  // The compiled instance run_mha_fwd dispatches to (l. 258-360), and the rounded dims the heuristics use.
  const rounded = { d: roundUpHeaddim(p.d), dv: p.dv === p.d ? roundUpHeaddim(p.d) : roundUpHeaddimV(p.dv) };
  why.push(`${API} l. 492-518, 563-564: d_rounded ${rounded.d}, dv_rounded ${rounded.dv}`);
  const instance = fa3Instance(p.d, p.dv, p.dtype);
  why.push(
    `${API} l. ${p.d <= 64 ? (fp8 ? '338' : '260-271, 297-308') : fp8 ? '341-359' : '274-292, 311-329'}: d ${p.d}, dv ${p.dv} runs the compiled ⟨${instance.d}, ${instance.dv}⟩ kernel`,
  );

  const softcap = p.softcap !== undefined && p.softcap > 0;
  const elem: 1 | 2 = fp8 ? 1 : 2;
  const qheadPerKhead = Math.floor(p.hq / Math.max(1, p.hk));
  const varlen = p.varlenQ === true || p.varlenK === true;

  // get_pagedkv_tma (l. 415-424).
  let pagedKvNonTma = false;
  if (p.pageSize !== undefined) {
    const [bm, bn] = tileSizeFwdSm90(rounded.d, rounded.dv, isCausal, isLocal, elem, false, false, softcap);
    const tma = p.pageSize % bn === 0 && p.nq * qheadPerKhead > bm;
    pagedKvNonTma = !tma;
    why.push(
      `${API} l. 415-424: paged KV ${tma ? 'by TMA' : 'by cp.async (PagedKVNonTMA)'}: page_size ${p.pageSize} ${p.pageSize % bn === 0 ? 'is' : 'is not'} a multiple of kBlockN ${bn}, seqlen_q·h/h_k ${p.nq * qheadPerKhead} ${p.nq * qheadPerKhead > bm ? '>' : '≤'} kBlockM ${bm}`,
    );
  }

  // get_num_splits (l. 442-471).
  let numSplits: number;
  if (p.numSplits !== undefined && p.numSplits > 0) {
    numSplits = p.numSplits;
    why.push(`${API} l. 610: num_splits ${numSplits} as given`);
  } else {
    const [bm, bn] = tileSizeFwdSm90(rounded.d, rounded.dv, isCausal, isLocal, elem, false, pagedKvNonTma, softcap);
    const seqlenQPack = p.nq * qheadPerKhead;
    const loaded = !isLocal ? p.nk : Math.max(0, Math.min(p.nk, windowRight + windowLeft + 1 + bm));
    const nBlocks = Math.ceil(loaded / bn);
    const mBlocks = Math.ceil(seqlenQPack / bm);
    const sizeOneKvHead = p.nk * (p.d + p.dv) * elem;
    const totalMblocks = (varlen ? 1 : p.batch) * p.hk * mBlocks;
    numSplits = numSplitsHeuristic(totalMblocks, numSms, nBlocks, mBlocks, sizeOneKvHead, isCausal || isLocal, 128);
    why.push(
      `${API} l. 442-471 with ${HEUR} l. 25-59: ${totalMblocks} M blocks (packed) for ${numSms} SMs, ${nBlocks} N blocks → num_splits ${numSplits}`,
    );
  }
  if (numSplits > 256) {
    refusals.push('num_splits > 256 not supported');
    why.push(`${API} l. 1095`);
  }

  // get_pack_gqa (l. 426-440).
  let packGqa: boolean;
  if (p.packGqa !== undefined) {
    packGqa = p.packGqa;
    why.push(`${API} l. 612: pack_gqa ${packGqa} as given`);
  } else if (pagedKvNonTma || numSplits > 1) {
    packGqa = true;
    why.push(`${API} l. 429: pack_gqa always on with ${numSplits > 1 ? 'split KV' : 'paged KV without TMA'}`);
  } else if (p.hq === p.hk) {
    packGqa = false;
    why.push(`${API} l. 434: h = h_k, no pack_gqa`);
  } else {
    const [bm] = tileSizeFwdSm90(rounded.d, rounded.dv, isCausal, isLocal, elem, false, pagedKvNonTma, softcap);
    packGqa = shouldPackGqa(p.varlenQ === true, p.nq, qheadPerKhead, bm);
    why.push(
      `${API} l. 436-438 with ${HEUR} l. 9-17: ${p.varlenQ ? 'varlen Q always packs' : `seqlen_q ${p.nq}, ${qheadPerKhead} Q heads per KV head, kBlockM ${bm}`} → pack_gqa ${packGqa}`,
    );
  }

  // The kernel's own tile, from its template arguments (launch template l. 40-47).
  const [blockM, blockN, mmaPvIsRs, intraWgOverlap] = tileSizeFwdSm90(
    instance.d,
    instance.dv,
    isCausal,
    isLocal,
    elem,
    false,
    pagedKvNonTma,
    softcap,
  );
  why.push(
    `${TILE} l. 10-54 for ⟨${instance.d}, ${instance.dv}⟩${isCausal ? ', causal' : ''}${isLocal ? ', local' : ''}${pagedKvNonTma ? ', paged non-TMA' : ''}${softcap ? ', softcap' : ''}: ${blockM}×${blockN}, P·V ${mmaPvIsRs ? 'RS' : 'SS'}, IntraWGOverlap ${intraWgOverlap}`,
  );
  const stages = 2;
  why.push(`${LAUNCH} l. 47: kStages = 2 on SM90`);

  const rows = p.nq * (packGqa ? Math.ceil(p.hq / p.hk) : 1);
  const rawMBlocks = Math.ceil(rows / blockM);
  const enableCluster =
    (elem === 2 ? instance.d >= 128 : instance.d === 192) && !isCausal && !isLocal && numSplits === 1 && !pagedKvNonTma && !varlen;
  const cluster: 1 | 2 = enableCluster && rawMBlocks % 2 === 0 ? 2 : 1;
  why.push(
    `${LAUNCH} l. 212, 217-218: thread-block cluster ${cluster}×1${enableCluster ? (cluster === 1 ? ' (enabled, but the M blocks are odd)' : '') : ' (not enabled for this instance and mask)'}`,
  );
  const numMBlocks = Math.ceil(rawMBlocks / cluster) * cluster;
  const heads = packGqa ? p.hk : p.hq;
  const tiles = numMBlocks * heads * p.batch * numSplits;
  why.push(
    `${LAUNCH} l. 148-152: num_blocks_m ${numMBlocks} (${rows} ${packGqa ? 'packed ' : ''}rows), ${heads} ${packGqa ? 'KV ' : ''}heads × batch ${p.batch} × ${numSplits} splits = ${tiles} tiles`,
  );

  const split = numSplits > 1;
  const persistent = !(split && !varlen);
  const scheduler: Fa3Dispatch['scheduler'] = !persistent
    ? 'single-tile'
    : varlen
      ? 'varlen-dynamic-persistent'
      : !isCausal && !isLocal
        ? 'static-persistent'
        : 'dynamic-persistent';
  const gridCtas = persistent ? numSms : tiles;
  why.push(
    `${LAUNCH} l. 61-76, ${SCHED} l. ${persistent ? '162-163' : '66-67'}: ${scheduler} scheduler, grid ${gridCtas} CTAs${scheduler === 'static-persistent' ? ` (l. 192-212: CTA c runs tiles c, c + ${gridCtas}, … in turn)` : ''}`,
  );

  const consumers = blockM / 64;
  const tmaKv = !pagedKvNonTma;
  const producerRegisters = consumers === 1 ? 56 : consumers === 2 ? (tmaKv ? 24 : 40) : 32;
  const consumerRegisters = consumers === 1 ? 256 : consumers === 2 ? (tmaKv ? 240 : 232) : 160;
  why.push(`${KERNEL} l. 82-83: ${consumers} MMA warpgroups, registers ${producerRegisters} (producer) / ${consumerRegisters} (consumers)`);

  return {
    ...(refusals.length > 0 ? { refused: refusals.join('; ') } : {}),
    instance,
    rounded,
    isCausal,
    isLocal,
    windowLeft,
    windowRight,
    attentionChunk: chunk,
    pagedKvNonTma,
    blockM,
    blockN,
    mmaPvIsRs,
    intraWgOverlap,
    stages,
    numSplits,
    packGqa,
    cluster,
    consumers,
    producerRegisters,
    consumerRegisters,
    numMBlocks,
    tiles,
    gridCtas,
    scheduler,
    why,
  };
}

export interface Fa3BwdDispatch {
  refused?: string;
  isCausal: boolean;
  isLocal: boolean;
  /** round_up_headdim(max(d, dv)): the one instance both head dims run on. */
  hdim: number;
  blockM: number;
  blockN: number;
  why: string[];
}

const MAINLOOP = 'hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a';

/** A mask_mod on FA3 is FlashScope's what-if, charged per block as FA4's block-sparse path is (engine/algorithms/fa3/schedule.ts maskStepsOf). */
export const FA3_MASK_MOD_WHY = `${API} l. 672-708: mha_fwd takes no mask_mod (its masks are is_causal, window_size_left/right and attention_chunk), so this mask is FlashScope's what-if: the model skips the K/V blocks the mask empties and runs the masking step on every partially masked block besides the kernel's own, as FA4's block-sparse path charges its partial blocks (flash_attn/cute/block_sparse_utils.py@0251105a l. 951-1037)`;

/** Which K/V blocks the consumers run with mask.apply (engine/hw/mask-steps.ts charges the same). */
function fa3MaskStepsWhy(isCausal: boolean, isLocal: boolean, chunk: number): string {
  const parts = [
    `${MAINLOOP} l. 1150, 1307-1308 with hopper/mask.h@0251105a l. 66-76: the first K/V block visited (n_block_max − 1) runs the mask with the seqlen_k bound, whatever seqlen_k`,
  ];
  if (isCausal || isLocal)
    parts.push(
      `l. 1209-1218 with hopper/block.h@0251105a l. 103-118: then every block from floor((m_block·kBlockM + seqlen_k − seqlen_q${isLocal ? ' + window_size_right' : ''}) / kBlockN) up, for the whole CTA`,
    );
  if (isLocal)
    parts.push(
      `l. 1228-1235 with block.h l. 120-135: and every block below ceil(((m_block + 1)·kBlockM + seqlen_k − seqlen_q − window_size_left) / kBlockN)`,
    );
  if (chunk > 0)
    parts.push(
      `block.h l. 14-45, 111-117, 128-133 with hopper/utils.h@0251105a l. 110-117: attention_chunk ${chunk} clips the K/V range and both mask bounds to the query's chunk (n_idx_right to round_up(chunk, n_idx), n_idx_left to round_down(chunk, n_idx))`,
    );
  return parts.join('; ');
}

/** mha_bwd's decisions (flash_api.cpp l. 1288-1400) for the backward of this problem. */
export function fa3BwdDispatch(p: Fa3DispatchInput, deterministic: boolean): Fa3BwdDispatch {
  const why: string[] = [];
  const refusals: string[] = [];
  if (p.dtype !== 'fp16' && p.dtype !== 'bf16') {
    refusals.push('FlashAttention backward only supports fp16 and bf16 data type');
    why.push(`${API} l. 1301-1302: the backward takes fp16 or bf16`);
  }
  if (p.d % 8 !== 0 || p.dv % 8 !== 0) refusals.push('head_size should be a multiple of 8');
  if (Math.max(p.d, p.dv) > 256) refusals.push('FlashAttention forward only supports head dimension at most 256');
  if (p.hq % p.hk !== 0) refusals.push('Number of heads in key/value must divide number of heads in query');
  why.push(`${API} l. 1349-1353: head dims multiples of 8, at most 256; h_k divides h`);
  let left = p.window?.left ?? -1;
  let right = p.window?.right ?? -1;
  if (left >= p.nk - 1) left = -1;
  if (right >= p.nq - 1) right = -1;
  if (p.causal) right = 0;
  const isCausal = left < 0 && right === 0;
  const isLocal = (left >= 0 || right >= 0) && !isCausal;
  why.push(`${API} l. 1359-1365: ${isCausal ? 'causal' : isLocal ? 'local' : 'no mask'} (no seqlen_q = 1 rule in the backward)`);
  const hdim = roundUpHeaddim(Math.max(p.d, p.dv));
  if (deterministic && hdim >= 256) refusals.push('Deterministic backward not supported for hdim 256.');
  if (deterministic) why.push(`${API} l. 1370: deterministic needs hdim < 256`);
  const softcap = p.softcap !== undefined && p.softcap > 0;
  const blockM =
    hdim <= 64 ? (isCausal && softcap ? 96 : 128) : hdim <= 96 ? 64 : hdim <= 128 ? (isCausal || isLocal || softcap ? 64 : 80) : 64;
  const blockN = hdim <= 128 ? 128 : hdim <= 192 ? 96 : 80;
  why.push(
    `${API} l. 1368, 1373-1385 (hopper/flash_bwd_launch_template.h@0251105a l. 312-380): hdim ${hdim} → kBlockM ${blockM}, kBlockN ${blockN}`,
  );
  return { ...(refusals.length > 0 ? { refused: refusals.join('; ') } : {}), isCausal, isLocal, hdim, blockM, blockN, why };
}
