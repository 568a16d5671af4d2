// FA4's host-side decisions for one backward problem on SM100, read off flash_attn/cute at
// 0251105a in the order _flash_attn_bwd takes them (interface.py l. 1807-2643): the refusals,
// the causal/local resolution, the SM100 tile (128 × 128), use_2cta_instrs and the cluster,
// the dedicated d = 256 kernel, pack_gqa (always off in the backward), GQA's dK/dV
// accumulators, the deterministic semaphores, and what FlashAttentionBackwardSm100's
// constructor then fixes (TMEM columns, registers per warp role, Q/dO stages, the dQ reduce
// chunks, the tile scheduler). Every decision appends its upstream file:line to `why`.

import { dtypeBytes } from '../../core/problem.ts';
import type { DispatchInput } from '../../hw/dispatch-input.ts';
import { gcd } from '../../hw/model.ts';
import { resolveCausalWindow } from './causal-window.ts';
import { hd256BwdKernels, hd256BwdRefusals, type Hd256BwdKernel } from './backward-hd256.ts';

const IFACE = 'flash_attn/cute/interface.py@0251105a';
const BWD = 'flash_attn/cute/flash_bwd_sm100.py@0251105a';
const BLOCK_INFO = 'flash_attn/cute/block_info.py@0251105a';

export type Fa4BwdScheduler = 'SingleTileScheduler' | 'SingleTileLPTBwdScheduler' | 'SingleTileVarlenScheduler';

/** TMEM column of each accumulator (flash_bwd_sm100.py l. 181-202); P sits over S, dS over dP. */
export interface Fa4BwdTmem {
  S: number;
  P: number;
  dP: number;
  dS: number;
  dQ: number;
  dK: number;
  dV: number;
}

export interface Fa4BwdDispatch {
  /** Upstream's refusal message(s), when it refuses; the other fields are then as far as dispatch got. */
  refused?: string;
  isCausal: boolean;
  isLocal: boolean;
  windowLeft: number | null;
  windowRight: number | null;
  tileM: number;
  tileN: number;
  /** tile_hdim / tile_hdimv: head dims padded to 16 (l. 72-77). */
  dPad: number;
  dvPad: number;
  /** use_2cta_instrs: a pair of CTAs in a cluster of 2 shares each MMA (cta_group::2). */
  ctaGroup: 1 | 2;
  /** d = dv = 256 runs sm100_hd256_2cta_fmha_backward.py instead. */
  dedicatedHd256: boolean;
  /** Its two kernels, dQ then dK/dV (./backward-hd256.ts); absent on the general path. */
  hd256?: [Hd256BwdKernel, Hd256BwdKernel];
  /** Always false: the backward turns packing off (interface.py l. 2091-2092). */
  packGqa: false;
  qheadPerKvhead: number;
  /** GQA: dK/dV accumulate in fp32 (dKaccum/dVaccum) and a postprocess converts them. */
  dkvPostprocess: boolean;
  qStage: number;
  dOStage: number;
  /** fp32 columns of dQ per TMA reduce-add, and the sdQaccum slots they rotate through. */
  dQReduceNcol: number;
  sdQaccumStage: number;
  registers: { reduce: number; compute: number; load: number; mma: number; empty: number };
  tmem: Fa4BwdTmem;
  /** seqlen_k rounded to tile_n, and once more to an even number of tiles for a pair (l. 2022-2025). */
  seqlenKRounded: number;
  /** Column blocks of tile_n keys in the grid (a multiple of the cluster size). */
  numNBlocks: number;
  scheduler: Fa4BwdScheduler;
  /** Deterministic causal/local: the scheduler hands out the last column block first (shortest first). */
  spt: boolean;
  why: string[];
}

const pad16 = (n: number) => Math.ceil(n / 16) * 16;

export function fa4BwdDispatch(p: DispatchInput, deterministic: boolean): Fa4BwdDispatch {
  const why: string[] = [];
  const refusals: string[] = [];
  if (p.blockSparse && (p.varlenQ || p.varlenK)) {
    refusals.push('Varlen backward with block sparsity is not yet supported');
    why.push(`${IFACE} l. 1855-1861`);
  }
  const w = resolveCausalWindow(p);
  why.push(
    `${IFACE} l. 1886-1889 with l. 388-408: ${w.isCausal ? 'causal' : w.isLocal ? `local (left ${w.windowLeft ?? 'None'}, right ${w.windowRight ?? 'None'})` : 'no mask'}`,
  );

  // SM100 branch of the tile choice (l. 1939-1965).
  const tileM = 128;
  const tileN = 128;
  let ctaGroup: 1 | 2 = p.d >= 128 ? 2 : 1;
  why.push(
    `${IFACE} l. 1940-1952, 1965: m_block_size ${tileM}, n_block_size ${tileN}; use_2cta_instrs = head_dim ${p.d} ≥ 128 → ${ctaGroup === 2}, cluster_size ${ctaGroup}`,
  );
  const dedicatedHd256 = p.d === 256 && p.dv === 256;
  if (dedicatedHd256) {
    ctaGroup = 2;
    why.push(`${IFACE} l. 1967-1972: d = dv = 256 runs the dedicated 2-CTA backward (sm100_hd256_2cta_fmha_backward.py)`);
  }

  const seqlenKRounded0 = Math.ceil(p.nk / tileN) * tileN;
  const nBlocks0 = seqlenKRounded0 / tileN;
  const padPair = ctaGroup === 2 && nBlocks0 % 2 !== 0;
  const seqlenKRounded = seqlenKRounded0 + (padPair ? tileN : 0);
  const numNBlocks = Math.ceil(nBlocks0 / ctaGroup) * ctaGroup;
  why.push(
    `${IFACE} l. 2021-2025: seqlen_k_rounded ${seqlenKRounded}${padPair ? ` (${nBlocks0} blocks of ${tileN} is odd: one more for the pair)` : ''}, ${numNBlocks} column blocks`,
  );

  if (p.dtype !== 'fp16' && p.dtype !== 'bf16') {
    refusals.push('inputs must be float16 or bfloat16');
    why.push(`${IFACE} l. 2062`);
  }
  if (p.hq % p.hk !== 0) {
    refusals.push('num_head must be divisible by num_head_kv');
    why.push(`${IFACE} l. 2082`);
  }
  // _validate_head_dims at compute capability 10 with 16-byte alignment (l. 112-130, 2083-2085).
  const alignment = 16 / dtypeBytes(p.dtype);
  const standard = p.d >= 8 && p.d <= 128 && p.dv >= 8 && p.dv <= 128;
  const deepseek = p.d === 192 && p.dv === 128;
  const mla = (p.d === 64 || p.d === p.dv) && p.dv === 512;
  if (!((standard || deepseek || mla || dedicatedHd256) && p.d % alignment === 0 && p.dv % alignment === 0)) {
    refusals.push(
      `(head_dim, head_dim_v)=(${p.d}, ${p.dv}) is not supported on SM100/SM110. head_dim and head_dim_v must be between 8 and 128 and divisible by ${alignment}, or (192, 128) for DeepSeek, or (256, 256) for hd256.`,
    );
  }
  why.push(`${IFACE} l. 112-130, 2083-2085: head dims (${p.d}, ${p.dv}) checked against the SM100 shapes (alignment ${alignment})`);
  const dPad = pad16(p.d);
  const dvPad = pad16(p.dv);
  // FlashAttentionBackwardSm100's constructor asserts (no message) what the interface let through.
  if (!dedicatedHd256 && mla) {
    refusals.push(`FlashAttentionBackwardSm100 asserts tile_hdimv <= 128 (got ${dvPad}): no backward for the dv = 512 MLA shapes`);
    why.push(`${BWD} l. 72-85: tile_hdim ${dPad}, tile_hdimv ${dvPad}`);
  }

  const qheadPerKvhead = Math.floor(p.hq / Math.max(1, p.hk));
  why.push(
    `${IFACE} l. 2088-2092: pack_gqa ${p.packGqa === undefined ? `would default to qhead_per_kvhead > 1 = ${qheadPerKvhead > 1}` : `given ${p.packGqa}`}, then forced off (no pack_gqa in the backward)`,
  );
  if (p.softcap !== undefined && p.softcap > 0) {
    if (dedicatedHd256) refusals.push('SM100 backward with head_dim=256 does not support softcap');
    why.push(
      dedicatedHd256
        ? `${IFACE} l. 2463`
        : `${IFACE} l. 2094-2099: softcap ${p.softcap} becomes a score_mod and its derivative score_mod_bwd`,
    );
  }
  if (dedicatedHd256 && p.blockSparse) {
    refusals.push('SM100 backward with head_dim=256 does not support block sparsity');
    why.push(`${IFACE} l. 2464-2465`);
  }
  if (dedicatedHd256)
    why.push(
      `${IFACE} l. 2471-2472: the d = 256 kernel runs dQ on 128 × 128 tiles and dK/dV on 128 × 64 tiles, with its own dK/dV conversion`,
    );
  if (dedicatedHd256 && p.seqused) {
    refusals.push('SM100 backward with head_dim=256 does not support seqused_q/seqused_k');
    why.push(`${IFACE} l. 2468-2469`);
  }
  let hd256: Fa4BwdDispatch['hd256'];
  if (dedicatedHd256) {
    // The kernel's constructor asserts what the interface let through (sm100_hd256_2cta_fmha_backward.py l. 57-77).
    for (const r of hd256BwdRefusals(w.isLocal, deterministic)) {
      refusals.push(r.message);
      why.push(r.why);
    }
    const k = hd256BwdKernels(p);
    hd256 = k.kernels;
    why.push(k.why, ...k.kernels.flatMap((x) => x.why));
  }
  const dkvPostprocess = qheadPerKvhead > 1 && !dedicatedHd256;
  why.push(
    `${IFACE} l. 2161-2192: ${dkvPostprocess ? `${qheadPerKvhead} query heads per KV head: dK and dV accumulate in fp32 (dk_accum, dv_accum), converted by two postprocess kernels (l. 2617-2637)` : dedicatedHd256 && qheadPerKvhead > 1 ? 'the d = 256 kernel sums the query heads of a group into dK and dV itself' : 'dK and dV are written directly (no fp32 accumulators)'}`,
  );
  why.push(
    `${IFACE} l. 2123-2141, 2230-2238: a preprocess kernel first: dPsum = rowsum(dO ∘ O), LSE · log2(e)${dedicatedHd256 ? ' (the d = 256 kernel keeps no dQaccum)' : `, dQaccum (fp32, head dim rounded to ${Math.ceil(p.d / 32) * 32}) zeroed`}`,
  );
  if (!dedicatedHd256) why.push(`${IFACE} l. 2591-2615: a postprocess kernel after: dQ = softmax_scale · dQaccum in the input dtype`);
  if (deterministic && !dedicatedHd256) {
    why.push(
      `${IFACE} l. 2199-2209: deterministic: a dQ semaphore per (batch, head, m block${ctaGroup === 2 ? ', CTA of the pair' : ''})${qheadPerKvhead > 1 ? ', and dK/dV semaphores per (batch, KV head, column block, warpgroup)' : ''}`,
    );
    if (qheadPerKvhead > 1)
      why.push(
        `${BWD} l. 4054-4057, 4088-4092, 4160-4165: the ${qheadPerKvhead} query heads of a KV head add their dK and dV in head order (wait_eq on head % ${qheadPerKvhead}, arrive_inc after the adds land); modelled where a group's heads share a wave: each later head waits for one CTA's dV and dK reduce-adds and the hand-off`,
      );
  }

  // The kernel's constructor (flash_bwd_sm100.py l. 71-234) and _setup_attributes (l. 236-262).
  const tmem: Fa4BwdTmem =
    ctaGroup === 2 && dPad === 192 && dvPad === 128
      ? { dV: 0, dK: dvPad, S: dvPad + dPad, P: dvPad + dPad, dP: 512 - tileM, dS: 512 - tileM, dQ: 512 - dPad / 2 }
      : {
          S: 0,
          P: 0,
          dV: tileN,
          dP: tileN + dvPad,
          dS: tileN + dvPad,
          dQ: ctaGroup === 2 ? dPad / 2 : tileN + dvPad,
          dK: tileN + dvPad + tileM,
        };
  if (!dedicatedHd256)
    why.push(
      `${BWD} l. 181-202: TMEM columns S/P ${tmem.S}, dV ${tmem.dV}, dP/dS ${tmem.dP}, dQ ${tmem.dQ}${tmem.dQ === tmem.dP ? ' (over dP)' : tmem.dQ < tmem.dV && tmem.dQ >= tmem.S ? ' (over S)' : ''}, dK ${tmem.dK} of 512`,
    );
  const masked = w.isCausal || w.isLocal;
  let registers: Fa4BwdDispatch['registers'];
  if (dPad === 192) registers = { reduce: 136, compute: 136, load: 104, mma: 104, empty: 24 };
  else if (!masked || deterministic)
    registers =
      ctaGroup === 2
        ? { reduce: 136, compute: 136, load: 104, mma: 104, empty: 24 }
        : { reduce: 152, compute: 136, load: 88, mma: 88, empty: 24 };
  else
    registers =
      ctaGroup === 2
        ? { reduce: 136, compute: 136, load: 104, mma: 104, empty: 24 }
        : { reduce: 136, compute: 144, load: 88, mma: 88, empty: 24 };
  if (!dedicatedHd256)
    why.push(
      `${BWD} l. 204-230: registers ${registers.reduce} reduce / ${registers.compute} compute / ${registers.load} load / ${registers.mma} mma / ${registers.empty} empty (${dPad === 192 ? 'd 192' : `${masked ? 'masked' : 'no mask'}${deterministic ? ', deterministic' : ''}, ${ctaGroup}-CTA`})`,
    );
  const qStage = ctaGroup === 2 ? 1 : 2;
  let dQReduceNcol: number;
  let sdQaccumStage: number;
  if (ctaGroup === 2 && dPad === 192) {
    dQReduceNcol = w.isCausal ? 32 : 24;
    sdQaccumStage = w.isCausal ? 1 : 2;
  } else if (ctaGroup === 2) {
    dQReduceNcol = deterministic ? 16 : 8;
    sdQaccumStage = deterministic ? 2 : 4;
  } else {
    dQReduceNcol = 32;
    sdQaccumStage = 64 / dQReduceNcol;
  }
  // The dQ reduce-adds must tile each CTA's share of the head dim (l. 257): tile_hdim 16, 48, 80 or 112 on one CTA does not.
  if (!dedicatedHd256 && !refusals.length && (dPad / ctaGroup) % dQReduceNcol !== 0) {
    refusals.push(
      `FlashAttentionBackwardSm100 asserts (tile_hdim // cta_group_size) % dQ_reduce_ncol == 0: tile_hdim ${dPad} / ${ctaGroup} is not a multiple of ${dQReduceNcol}`,
    );
    why.push(`${BWD} l. 257`);
  }
  // A pair stages dV over sV: with GQA the fp32 epilogue tile is tile_n × 2·gcd(32, tile_hdim/2) (l. 262, 436-440), too wide for a narrow V (l. 764).
  if (!dedicatedHd256 && !refusals.length && ctaGroup === 2 && dkvPostprocess && 2 * gcd(32, dPad / 2) * 4 > dvPad * dtypeBytes(p.dtype)) {
    refusals.push("sdV doesn't fit in sV storage allocation (2-CTA)");
    why.push(`${BWD} l. 262, 436-440, 764: GQA's fp32 sdV tile of ${2 * gcd(32, dPad / 2)} columns over an sV of ${dvPad}`);
  }
  if (!dedicatedHd256)
    why.push(
      `${BWD} l. 237-253: Q_stage ${qStage}, dO_stage 1; dQ reduce-adds of ${dQReduceNcol} fp32 columns through ${sdQaccumStage} sdQaccum slot${sdQaccumStage > 1 ? 's' : ''}`,
    );

  const scheduler: Fa4BwdScheduler = p.varlenK
    ? 'SingleTileVarlenScheduler'
    : deterministic
      ? 'SingleTileLPTBwdScheduler'
      : 'SingleTileScheduler';
  const spt = masked && deterministic;
  if (!dedicatedHd256)
    why.push(
      `${BWD} l. 704-715 with ${IFACE} l. 2291: ${scheduler}${spt ? ', spt: the last column block first (flash_attn/cute/tile_scheduler.py@0251105a l. 831-832)' : ''}`,
    );
  if (!dedicatedHd256)
    why.push(
      `${BWD} l. 1404-1414 with ${BLOCK_INFO} l. 71-85: each ${ctaGroup === 2 ? `pair visits the row blocks that see its ${ctaGroup * tileN} keys` : `CTA visits the row blocks that see its ${tileN} keys`}${masked ? ' (m_block_min from the diagonal or the right window edge, m_block_max from the left edge)' : ''}`,
    );
  return {
    ...(refusals.length > 0 ? { refused: refusals.join('; ') } : {}),
    ...w,
    tileM,
    tileN,
    dPad,
    dvPad,
    ctaGroup,
    dedicatedHd256,
    ...(hd256 ? { hd256 } : {}),
    packGqa: false,
    qheadPerKvhead,
    dkvPostprocess,
    qStage,
    dOStage: 1,
    dQReduceNcol,
    sdQaccumStage,
    registers,
    tmem,
    seqlenKRounded,
    numNBlocks,
    scheduler,
    spt,
    why,
  };
}
