// FA4's host-side decisions for one forward problem on SM100, read off flash_attn/cute at
// 0251105a in the order _flash_attn_fwd takes them: the refusals, pack_gqa's default, the
// causal/local resolution, _get_fwd_config (q_stage from the packed row count, num_splits),
// use_2cta_instrs, the dedicated d = 256 kernel, paged KV without TMA, and the overrides the
// kernel's constructor makes (TMA for Q and O, registers, K/V stages, exp2 emulation). Every
// decision appends its upstream file:line to `why`, which `describe` prints.

import { dtypeBytes, isFp8 } from '../../core/problem.ts';
import type { DispatchInput } from '../../hw/dispatch-input.ts';
import { resolveCausalWindow } from './causal-window.ts';
import { FP8_TUNING } from './tiles.ts';

const IFACE = 'flash_attn/cute/interface.py@0251105a';
const SM100 = 'flash_attn/cute/flash_fwd_sm100.py@0251105a';
const HD256 = 'flash_attn/cute/sm100_hd256_2cta_fmha_forward.py@0251105a';
const CUTE_SCHED = 'flash_attn/cute/tile_scheduler.py@0251105a';

/**
 * What the dispatch reads from the problem (engine/hw/dispatch-input.ts), and whether the backward
 * is asked for (FP8 has none). numSplits undefined: 1 (the interface's default), 0: the heuristic,
 * N: forced; packGqa undefined: on when Hq > Hk; blockSparse: no 2-CTA pairs.
 */
export interface Fa4DispatchInput extends DispatchInput {
  backward?: boolean;
}

export interface Fa4Dispatch {
  refused?: string;
  isCausal: boolean;
  isLocal: boolean;
  windowLeft: number | null;
  windowRight: number | null;
  packGqa: boolean;
  qheadPerKvhead: number;
  /** seqlen_q · qhead_per_kvhead when packed: the rows the M tiles cover. */
  packedRows: number;
  tileM: number;
  tileN: number;
  qStage: 1 | 2;
  numSplits: number;
  ctaGroup: 1 | 2;
  dedicatedHd256: boolean;
  pagedKvNonTma: boolean;
  useTmaQ: boolean;
  useTmaO: boolean;
  kvStage: number;
  overlapSOSQ: boolean;
  registers: { softmax: number; correction: number; other: number };
  exp2Freq: number;
  /** M blocks of q_stage × tile_m packed rows per (batch, KV head or head). */
  numMBlocks: number;
  /** CTAs: M blocks × heads × batch × splits (in 2-CTA mode two of them form a cluster). */
  tiles: number;
  /** The main kernel's tile scheduler (flash_fwd_sm100.py l. 281-296); the d = 256 kernel's blocks start in grid order. */
  tileScheduler: Fa4TileScheduler;
  /** Whether the scheduler hands out the longest tiles first (lpt = is_causal or is_local, l. 726). */
  longestFirst: boolean;
  why: string[];
}

export type Fa4TileScheduler =
  | 'SingleTileLPTScheduler'
  | 'StaticPersistentTileScheduler'
  | 'SingleTileScheduler'
  | 'SingleTileVarlenScheduler'
  | 'hd256 grid order';

const pad16 = (n: number) => Math.ceil(n / 16) * 16;

type TuneKey = `${boolean}/${boolean}/${number}`;
// _TUNING_CONFIG rows with is_sm103 = False (flash_fwd_sm100.py l. 100-111).
const TUNING: Partial<Record<TuneKey, { freq: number; softmax: number; correction: number }>> = {
  'true/false/128': { freq: 10, softmax: 176, correction: 88 },
  'false/true/128': { freq: 16, softmax: 192, correction: 72 },
  'true/false/192': { freq: 16, softmax: 184, correction: 80 },
  'false/true/192': { freq: 32, softmax: 192, correction: 72 },
  'true/false/256': { freq: 14, softmax: 256, correction: 160 },
  'true/true/256': { freq: 14, softmax: 256, correction: 160 },
};
/** num_splits_heuristic (interface.py l. 276-288). */
export function fa4NumSplitsHeuristic(totalMblocks: number, numSms: number, numNBlocks: number, maxSplits: number): number {
  if (numNBlocks <= 4) return 1;
  if (totalMblocks === 0) return 1;
  return Math.min(Math.floor(numSms / totalMblocks), maxSplits, numNBlocks);
}

const BLOCK_INFO = 'flash_attn/cute/block_info.py@0251105a';

/**
 * Causal at seqlen_q = 1: unlike FA3 (hopper/flash_api.cpp l. 798-803) the interface never drops
 * the flag, so the kernel is built causal, but the one query row sees every key.
 */
function causalAtOneQueryRow(qheadPerKvhead: number, packGqa: boolean, varlenQ: boolean): string[] {
  const rows = packGqa && qheadPerKvhead > 1 ? `the ${qheadPerKvhead} packed rows are all query 0 (l. 38-39, 126-127), so ` : '';
  return [
    `${IFACE} l. 768-770, 388-408: seqlen_q = 1 keeps causal (no rule like FA3's in hopper/flash_api.cpp l. 798-803): the kernel is compiled causal — causal tuning key (${SM100} l. 360), ${varlenQ ? 'static persistent tile scheduler (l. 286-287)' : 'LPT tile scheduler (l. 291-292)'}, no 2-CTA (${IFACE} l. 825)`,
    `${BLOCK_INFO} l. 36-42, 125-134 with ${SM100} l. 2303-2328: ${rows}the causal edge seqlen_k − 1 + m_idx keeps every K/V block, and only the first block visited (the last in K) runs the mask`,
  ];
}

/** Which K/V blocks the softmax warps run with mask_fn (engine/hw/mask-steps.ts charges the same). */
function maskStepsWhy(isCausal: boolean, isLocal: boolean, leftWindow: boolean, hd256: boolean, blockSparse: boolean): string {
  if (blockSparse && !hd256)
    return `${SM100} l. 2253-2288 with flash_attn/cute/block_sparse_utils.py@0251105a l. 951-1037, 1096-1134: under a block mask each Q stage walks the partial blocks, then the full ones, each list from its last block down; every partial block runs the mask, the full list only its first block (mask_seqlen), and the rest too where aux tensors meet a Q tile past seqlen_q (check_m_boundary, l. 2256-2260)`;
  if (hd256)
    return `${HD256} l. 1367-1398 with ${BLOCK_INFO} l. 117-152: the last K/V block runs the mask with the seqlen_k bound${isCausal ? ', and every block from floor((m_block·256 + seqlen_k − seqlen_q) / 128) up the causal mask' : ''}`;
  const parts = [
    `${SM100} l. 2303-2311 with flash_attn/cute/mask.py@0251105a l. 659-672: the first K/V block visited (n_block_max − 1) runs the mask with the seqlen_k bound (mask_fn with mask_seqlen=True), whatever seqlen_k`,
  ];
  if (isCausal || isLocal)
    parts.push(
      `l. 2313-2328 with ${BLOCK_INFO} l. 117-134: then every block from floor((m_block·q_stage·tile_m + seqlen_k − seqlen_q${isLocal ? ' + window_size_right' : ''}) / tile_n) up, for both Q stages`,
    );
  if (isLocal && leftWindow)
    parts.push(
      `l. 2345-2357 with l. 136-152: and every block below ceil(((m_block + 1)·q_stage·tile_m + seqlen_k − seqlen_q − window_size_left) / tile_n)`,
    );
  return parts.join('; ');
}

export function fa4Dispatch(p: Fa4DispatchInput, numSms: number): Fa4Dispatch {
  const why: string[] = [];
  const refusals: string[] = [];
  const fp8 = isFp8(p.dtype);
  const alignment = 16 / dtypeBytes(p.dtype);
  if (p.dtype === 'fp32') {
    refusals.push('FA4 takes fp16, bf16 or FP8 inputs (its MMAs have no fp32 path)');
    why.push(`${IFACE} l. 637-640: v dtype in float16, bfloat16, float8_e4m3fn, float8_e5m2`);
  }
  if (p.hq % p.hk !== 0) {
    refusals.push('num_head must be divisible by num_head_kv');
    why.push(`${IFACE} l. 682`);
  }
  const standard = p.d >= 8 && p.d <= 128 && p.dv >= 8 && p.dv <= 128;
  const deepseek = p.d === 192 && p.dv === 128;
  const mla = (p.d === 64 || p.d === p.dv) && p.dv === 512;
  const hd256 = p.d === 256 && p.dv === 256;
  if (!((standard || deepseek || mla || hd256) && p.d % alignment === 0 && p.dv % alignment === 0)) {
    refusals.push(
      `(head_dim, head_dim_v)=(${p.d}, ${p.dv}) is not supported on SM100/SM110. head_dim and head_dim_v must be between 8 and 128 and divisible by ${alignment}, or (192, 128) for DeepSeek, or (256, 256) for hd256.`,
    );
  }
  why.push(`${IFACE} l. 112-130, 683-685: head dims (${p.d}, ${p.dv}) checked against the SM100 shapes (alignment ${alignment})`);
  if ((p.attentionChunk ?? 0) > 0) {
    refusals.push("flash_attn_func() got an unexpected keyword argument 'attention_chunk'");
    why.push(`${IFACE} l. 3371-3393: FA4's flash_attn_func has no attention_chunk (only FA3's hopper/ interface takes it)`);
  }
  if (fp8 && p.backward) {
    refusals.push('FA4 CuTe FP8 backward is not supported yet (forward-only).');
    why.push(`${IFACE} l. 697-699`);
  }

  const qheadPerKvhead = Math.floor(p.hq / Math.max(1, p.hk));
  let packGqa = p.packGqa ?? qheadPerKvhead > 1;
  why.push(
    `${IFACE} l. 693-695: pack_gqa ${p.packGqa === undefined ? `defaults to qhead_per_kvhead > 1 = ${qheadPerKvhead} > 1` : 'as given'} → ${packGqa}`,
  );

  const { isCausal, isLocal, windowLeft: left, windowRight: right } = resolveCausalWindow(p);
  why.push(
    `${IFACE} l. 388-408: ${isCausal ? 'causal' : isLocal ? `local (left ${left ?? 'None'}, right ${right ?? 'None'})` : 'no mask'}`,
  );
  // The d = 256 kernel has its own block ranges (./hd256.ts).
  if (isCausal && p.nq === 1 && !hd256) why.push(...causalAtOneQueryRow(qheadPerKvhead, packGqa, p.varlenQ === true));
  why.push(maskStepsWhy(isCausal, isLocal, left !== null, hd256, p.blockSparse ?? false));

  // _get_fwd_config (l. 291-385).
  const tileM = 128;
  let tileN = 128;
  const packedRows = p.nq * (packGqa ? qheadPerKvhead : 1);
  const qStage: 1 | 2 = packedRows > tileM ? 2 : 1;
  why.push(
    `${IFACE} l. 342-344: seqlen_q_packgqa = ${p.nq}${packGqa ? ` × ${qheadPerKvhead}` : ''} = ${packedRows} ${qStage === 2 ? '>' : '≤'} tile_m ${tileM} → q_stage ${qStage}`,
  );
  const kLoaded = !isLocal ? p.nk : Math.max(0, Math.min(p.nk, (right || p.nk) + (left || p.nk) + 1 + tileM));
  let numMBlocks = Math.ceil(packedRows / (qStage * tileM));
  let heads = packGqa ? p.hk : p.hq;
  const totalMblocks = p.batch * p.hk * numMBlocks;
  let numNBlocks = Math.ceil(kLoaded / tileN);
  let numSplits: number;
  if (p.numSplits === undefined || p.numSplits >= 1) {
    numSplits = p.numSplits ?? 1;
    why.push(
      `${IFACE} l. 544, 367-371: num_splits ${numSplits} ${p.numSplits === undefined ? '(the default; 0 asks for the heuristic)' : 'as given'}`,
    );
  } else {
    numSplits = fa4NumSplitsHeuristic(totalMblocks, numSms, numNBlocks, 128);
    why.push(
      `${IFACE} l. 369-371 with l. 276-288: ${totalMblocks} M blocks for ${numSms} SMs, ${numNBlocks} N blocks → num_splits ${numSplits}`,
    );
  }
  if (p.d !== p.dv && numSplits > 1) {
    if (numNBlocks >= 64 && p.dv !== 512) {
      tileN = 64;
      numNBlocks = Math.ceil(kLoaded / tileN);
      if (p.numSplits === 0) numSplits = fa4NumSplitsHeuristic(totalMblocks, numSms, numNBlocks, 128);
      why.push(`${IFACE} l. 373-381: d ≠ dv with split KV: tile_n 64, num_splits ${numSplits}`);
    } else {
      numSplits = 1;
      why.push(`${IFACE} l. 373-383: d ≠ dv with split KV on fewer than 64 N blocks: num_splits 1`);
    }
  }
  const isSplitKv = numSplits > 1;
  const dPad = pad16(p.d);
  const dvPad = pad16(p.dv);

  let ctaGroup: 1 | 2 =
    !isCausal &&
    !isLocal &&
    !isSplitKv &&
    !p.varlenQ &&
    !p.blockSparse &&
    (p.pageSize === undefined || p.pageSize === 128) &&
    (dPad === 128 || dPad === 192) &&
    dvPad === 128 &&
    packedRows > 2 * tileM &&
    (tileM % qheadPerKvhead === 0 || !packGqa)
      ? 2
      : 1;
  why.push(
    `${IFACE} l. 822-836: use_2cta_instrs ${ctaGroup === 2} (${[
      isCausal || isLocal ? 'masked' : 'no mask',
      isSplitKv ? 'split KV' : 'no split',
      ...(p.blockSparse ? ['block-sparse (l. 829)'] : []),
      p.varlenQ ? 'varlen Q' : 'dense Q',
      `padded d ${dPad}, dv ${dvPad}`,
      `${packedRows} rows ${packedRows > 2 * tileM ? '>' : '≤'} 2·tile_m`,
      packGqa ? `tile_m % ${qheadPerKvhead} = ${tileM % qheadPerKvhead}` : 'not packed',
    ].join(', ')})`,
  );
  // The rows the grid's M tiles cover: the packed rows, unless the block mask below turns packing off.
  let gridRows = packedRows;
  if (p.blockSparsePerHead && packGqa) {
    packGqa = false;
    gridRows = p.nq;
    numMBlocks = Math.ceil(gridRows / (qStage * tileM));
    heads = p.hq;
    why.push(
      `${IFACE} l. 867-871: the block mask differs per query head (mask_block_cnt's head dim is ${p.hq}, not 1): pack_gqa off, after q_stage ${qStage}, num_splits and the scheduler's max_m_blocks_leq_one were chosen on the ${packedRows} packed rows (l. 786-815)`,
    );
  }
  const dedicatedHd256 = hd256;
  if (dedicatedHd256) {
    ctaGroup = 2;
    why.push(`${IFACE} l. 838-840: d = dv = 256 runs the dedicated 2-CTA kernel`);
    if (p.softcap !== undefined) refusals.push('SM100 forward with head_dim=256 does not support softcap');
    if (p.seqused) refusals.push('SM100 forward with head_dim=256 does not support seqused_q/seqused_k');
    if (p.blockSparse) refusals.push('SM100 forward with head_dim=256 does not support block sparsity');
    if (p.pageSize !== undefined && p.nk % p.pageSize !== 0)
      refusals.push(`SM100 hd256 2CTA paged KV requires max_seqlen_k divisible by page_size (${p.pageSize}), got max_seqlen_k=${p.nk}`);
    if (packGqa) {
      packGqa = false;
      why.push(
        `${IFACE} l. 1309-1331: the d = 256 kernel refuses softcap, block sparsity, seqused and ragged pages, and turns pack_gqa off`,
      );
    }
  }
  const pagedKvNonTma = p.pageSize !== undefined && p.pageSize !== tileN;
  if (p.pageSize !== undefined)
    why.push(
      `${IFACE} l. 1350: page_size ${p.pageSize} ${pagedKvNonTma ? `≠ tile_n ${tileN}: K/V by cp.async (paged_kv_non_tma)` : `= tile_n: K/V by TMA`}`,
    );
  if (pagedKvNonTma && (dPad !== p.d || dvPad !== p.dv)) {
    refusals.push('Paged KV does not support irregular head dim');
    why.push(`${SM100} l. 253-255`);
  }
  if (isSplitKv && dvPad >= 192 && !dedicatedHd256) {
    refusals.push('SplitKV is not supported for hdim >= 192');
    why.push(`${SM100} l. 220-222`);
  }

  const useTmaQ = !(packGqa && tileM % qheadPerKvhead !== 0);
  const useTmaO = !(packGqa && tileM % qheadPerKvhead !== 0) && !(packGqa && isSplitKv) && !p.varlenQ;
  why.push(`${SM100} l. 212-216, 321: Q by ${useTmaQ ? 'TMA' : 'cp.async'}, O by ${useTmaO ? 'TMA' : 'the correction warps (no TMA)'}`);

  const fp8Tune = fp8 ? FP8_TUNING[`${ctaGroup === 2}/${isCausal}/${dPad}`] : undefined;
  const tune = TUNING[`${ctaGroup === 2}/${isCausal}/${dPad}`];
  let registers: Fa4Dispatch['registers'];
  if (dedicatedHd256) registers = { softmax: 256, correction: 160, other: 32 };
  else if (dPad < 96) {
    registers = fp8
      ? pagedKvNonTma
        ? { softmax: 152, correction: 96, other: 112 }
        : { softmax: 168, correction: 96, other: 80 }
      : { softmax: pagedKvNonTma ? 184 : 200, correction: 64, other: pagedKvNonTma ? 80 : 48 };
  } else {
    let softmax = pagedKvNonTma ? 184 : (tune?.softmax ?? 192);
    let correction = pagedKvNonTma ? 64 : (tune?.correction ?? 80);
    if (fp8Tune?.softmax !== undefined && !pagedKvNonTma) {
      softmax = fp8Tune.softmax;
      correction = fp8Tune.correction ?? correction;
    }
    registers = { softmax, correction, other: 512 - 2 * softmax - correction };
  }
  why.push(
    `${dedicatedHd256 ? `${HD256} l. 149-164` : `${SM100} l. 360-378${fp8 ? ', 506-523' : ''}`}: registers ${registers.softmax} softmax / ${registers.correction} correction / ${registers.other} other`,
  );

  const e = dtypeBytes(p.dtype);
  const oBytes = fp8 ? 2 : e;
  const overlapSOSQ = !dedicatedHd256 && ((dPad === 192 && dvPad >= 64) || (dvPad >= 128 && isSplitKv));
  const sQ = qStage * tileM * dPad * e;
  const sO = qStage * tileM * dvPad * oBytes;
  const qo = overlapSOSQ ? Math.max(sQ, sO) : sQ + sO;
  const perStage = Math.floor(Math.max(tileN * dPad * e, tileN * dvPad * e) / ctaGroup);
  let kvStage = Math.min(Math.floor((224 * 1024 - qo) / perStage), 32);
  if (dPad === 192 && dvPad === 128 && kvStage === 2) kvStage = 3;
  if (dedicatedHd256) kvStage = 4;
  why.push(
    dedicatedHd256
      ? `${HD256} l. 162: 4 K/V stages`
      : `${SM100} l. 248-251, 392-405: sQ+sO ${qo} bytes${overlapSOSQ ? ' (sO over sQ)' : ''}, ${perStage} per K/V stage → kv_stage ${kvStage}`,
  );

  const defaultEmu = dPad <= 128 || (dPad === 192 && ctaGroup === 2 && !isCausal && !isLocal);
  const t = fp8Tune ?? tune;
  let exp2Freq = (t ? t.freq > 0 : defaultEmu) ? (t?.freq ?? 16) : 0;
  if (exp2Freq > 0 && packGqa && dPad > 64 && !isCausal && !isLocal) {
    exp2Freq = p.varlenQ ? 32 : (t?.freq ?? 10);
    why.push(`${SM100} l. 525-532: packed GQA, no mask: exp2 emulation every ${exp2Freq}`);
  }
  const tiles = numMBlocks * heads * p.batch * numSplits;
  why.push(
    `${IFACE} l. 363-365: ${numMBlocks} M blocks of ${qStage}×${tileM} rows × ${heads} ${packGqa ? 'KV ' : ''}heads × batch ${p.batch} × ${numSplits} splits = ${tiles} CTAs${ctaGroup === 2 ? ` (${Math.ceil(tiles / 2)} clusters of 2)` : ''}`,
  );

  // Without a tile-count semaphore or CLC (both off by default, utils.py l. 89-90) no scheduler is dynamic.
  const maxMBlocksLeqOne = packedRows <= qStage * tileM;
  const isStaticPersistent = (!isCausal && !isLocal && !p.varlenQ && !isSplitKv) || (maxMBlocksLeqOne && !isSplitKv);
  let tileScheduler: Fa4TileScheduler;
  if (dedicatedHd256) tileScheduler = 'hd256 grid order';
  else if (p.varlenQ) tileScheduler = isStaticPersistent ? 'StaticPersistentTileScheduler' : 'SingleTileVarlenScheduler';
  else if (isCausal || isLocal) tileScheduler = 'SingleTileLPTScheduler';
  else tileScheduler = isStaticPersistent ? 'StaticPersistentTileScheduler' : 'SingleTileScheduler';
  const longestFirst =
    (isCausal || isLocal) && (tileScheduler === 'SingleTileLPTScheduler' || tileScheduler === 'SingleTileVarlenScheduler');
  if (!dedicatedHd256)
    why.push(
      `${IFACE} l. 815, 1075-1085 with ${SM100} l. 281-296, 726: ${isStaticPersistent ? 'static persistent' : 'not persistent'} (${[
        isCausal || isLocal ? 'masked' : 'no mask',
        p.varlenQ ? 'varlen Q' : 'dense Q',
        isSplitKv ? 'split KV' : 'no split',
        `${packedRows} rows ${maxMBlocksLeqOne ? '≤' : '>'} q_stage·tile_m`,
      ].join(
        ', ',
      )}) → ${tileScheduler}${longestFirst ? ', longest tiles first' : isStaticPersistent ? `, tiles dealt round robin over min(SMs, tiles) CTAs (${CUTE_SCHED} l. 402-434: tile_idx += grid_dim)` : ', tiles in grid order'}`,
    );

  return {
    ...(refusals.length > 0 ? { refused: refusals.join('; ') } : {}),
    isCausal,
    isLocal,
    windowLeft: left,
    windowRight: right,
    packGqa,
    qheadPerKvhead,
    packedRows: gridRows,
    tileM,
    tileN,
    qStage,
    numSplits,
    ctaGroup,
    dedicatedHd256,
    pagedKvNonTma,
    useTmaQ,
    useTmaO,
    kvStage,
    overlapSOSQ,
    registers,
    exp2Freq,
    numMBlocks,
    tiles,
    tileScheduler,
    longestFirst,
    why,
  };
}
