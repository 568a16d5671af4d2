// FA4's forward configuration for one problem, as the shipped CuTe DSL kernel picks it. The
// stepper, the hardware schedule and `describe` all read this one function.
//
// Sources (Dao-AILab/flash-attention @ 0251105a):
//   tile 128×128 on SM100, q_stage: flash_attn/cute/interface.py, _get_fwd_config (l. 316-346)
//   use_2cta_instrs and the dedicated d = dv = 256 kernel: interface.py l. 822-840
//   accepted head dims: interface.py, _validate_head_dims (l. 112-128)
//   K/V stages, sO in the budget, overlap_sO_sQ: flash_attn/cute/flash_fwd_sm100.py l. 248-251, 392-405
//   registers: flash_fwd_sm100.py l. 359-378 with _TUNING_CONFIG (l. 100-111)
//   the dedicated d = dv = 256 kernel's fixed settings (q_stage = its two d-halves, 4 K/V
//     stages, registers 256/160/32): flash_attn/cute/sm100_hd256_2cta_fmha_forward.py
//     l. 110, 149-164
//   exp2 emulation frequency and start fragment: flash_fwd_sm100.py l. 244-246, 525-532;
//   the pattern itself: flash_attn/cute/softmax.py, apply_exp2_convert (l. 361-400)

import { dtypeBytes, isFp8, type DType } from '../../core/problem.ts';

export interface Fa4Input {
  d: number;
  dv: number;
  dtype: DType;
  causal: boolean;
  local?: boolean;
  /** Query rows per (batch, head): decides q_stage and 2-CTA mode. */
  nq: number;
  /** Rows the M tiles cover when GQA-packed (seqlen_q × Q heads per KV head); default nq. */
  rows?: number;
  /** use_2cta_instrs as the dispatch decided it (./dispatch.ts); default: the dense-problem rule. */
  twoCta?: boolean;
  /** Split KV: O overlaps Q in SMEM (overlap_sO_sQ). */
  splitKv?: boolean;
  /** K/V rows per block: 128, or 64 where the dispatch drops it (d ≠ dv with split KV). */
  tileN?: number;
}

export interface Fa4Exp2 {
  /** Period (in elements of a 32-element fragment) of the emulation pattern; 0 = every exp2 on the MUFU. */
  freq: number;
  /** Emulated elements per period (the kernel's default 4). */
  res: number;
  /** Fragments before this one stay on the MUFU. */
  startFrg: number;
}

export interface Fa4Config {
  blockM: number;
  blockN: number;
  /** Q tiles per CTA; in the d = 256 kernel the two 128-column halves of its one Q tile. */
  qStage: 1 | 2;
  /** 2: a CTA pair runs cta_group::2 MMAs over 2 × 128 rows, each CTA holding half of every K/V tile. */
  ctaGroup: 1 | 2;
  /** d = dv = 256 runs a separate, dedicated 2-CTA kernel (sm100_hd256_2cta_fmha_forward.py). */
  dedicatedHd256: boolean;
  kvStage: number;
  dPad: number;
  dvPad: number;
  /** sO shares the bytes of sQ (d 192) instead of having its own. */
  overlapSOSQ: boolean;
  registers: { softmax: number; correction: number; other: number };
  exp2: Fa4Exp2;
}

export const FA4_TILE = 128;
const SMEM_BUDGET = 224 * 1024;
const MAX_KV_STAGES = 32;
/** The d = 256 kernel's K/V ring, fixed in _setup_attributes (sm100_hd256_2cta_fmha_forward.py l. 162). */
const HD256_KV_STAGES = 4;

export type TuneKey = `${boolean}/${boolean}/${number}`;
// _TUNING_CONFIG rows for SM100 (is_sm103 = False): (2-CTA, causal, padded d) → freq, start, registers.
const TUNING: Partial<Record<TuneKey, { freq: number; res?: number; startFrg: number; softmax: number; correction: number }>> = {
  'true/false/128': { freq: 10, startFrg: 1, softmax: 176, correction: 88 },
  'false/true/128': { freq: 16, startFrg: 1, softmax: 192, correction: 72 },
  'true/false/192': { freq: 16, startFrg: 0, softmax: 184, correction: 80 },
  'false/true/192': { freq: 32, startFrg: 1, softmax: 192, correction: 72 },
  'true/false/256': { freq: 14, res: 6, startFrg: 0, softmax: 256, correction: 160 },
  'true/true/256': { freq: 14, res: 6, startFrg: 0, softmax: 256, correction: 160 },
};

/** _FP8_TUNING_CONFIG rows with is_sm103 = False (flash_fwd_sm100.py l. 112-119): FP8 runs take their exp2 pattern (l. 514-518) and, with TMA K/V, registers. */
export const FP8_TUNING: Partial<Record<TuneKey, { freq: number; startFrg: number; softmax?: number; correction?: number }>> = {
  'true/false/128': { freq: 10, startFrg: 1, softmax: 160, correction: 72 },
  'false/true/128': { freq: 8, startFrg: 1 },
};

const pad16 = (n: number) => Math.ceil(n / 16) * 16;

/** Why upstream refuses this (d, dv) on SM100, or undefined when it takes it. */
export function fa4HeadDimRefusal(d: number, dv: number, dtype: DType): string | undefined {
  const align = 16 / dtypeBytes(dtype);
  const standard = d >= 8 && d <= 128 && dv >= 8 && dv <= 128;
  const deepseek = d === 192 && dv === 128;
  const mla = (d === 64 || d === dv) && dv === 512;
  const hd256 = d === 256 && dv === 256;
  if ((standard || deepseek || mla || hd256) && d % align === 0 && dv % align === 0) return undefined;
  return `FA4 on SM100 takes head dims 8-128 (d and dv, multiples of ${align}), d 192 with dv 128, d = dv = 256, or the MLA shapes with dv 512; got d = ${d}, dv = ${dv}`;
}

/** The emulated share of one row of a block_n-wide S tile under an exp2 pattern (softmax.py apply_exp2_convert). */
export function isEmulatedElement(col: number, blockN: number, e: Fa4Exp2): boolean {
  if (e.freq === 0) return false;
  const FRAGMENT = 32;
  const frgCnt = Math.ceil(blockN / FRAGMENT);
  const frg = Math.floor(col / FRAGMENT);
  if (frg >= frgCnt - 1 || frg < e.startFrg) return false;
  // Elements go in pairs (k, k + 1); the pair is emulated when k mod freq ≥ freq − res.
  const k = (col % FRAGMENT) & ~1;
  return k % e.freq >= e.freq - e.res;
}

export function exp2EmulatedShare(blockN: number, e: Fa4Exp2): number {
  let n = 0;
  for (let c = 0; c < blockN; c++) if (isEmulatedElement(c, blockN, e)) n++;
  return n / blockN;
}

export function fa4Config(t: Fa4Input): Fa4Config {
  const blockM = FA4_TILE;
  const blockN = t.tileN ?? FA4_TILE;
  const dPad = pad16(t.d);
  const dvPad = pad16(t.dv);
  const local = t.local === true;
  const dedicatedHd256 = t.d === 256 && t.dv === 256;
  // The d = 256 kernel ignores the q_stage it is passed and uses iterations_qk = 256 / 128 (l. 82-83, 161).
  const rows = t.rows ?? t.nq;
  const qStage: 1 | 2 = dedicatedHd256 || rows > blockM ? 2 : 1;
  const twoCta =
    t.twoCta ?? ((!t.causal && !local && (dPad === 128 || dPad === 192) && dvPad === 128 && rows > 2 * blockM) || dedicatedHd256);
  const ctaGroup: 1 | 2 = twoCta ? 2 : 1;
  const e = dtypeBytes(t.dtype);
  const oBytes = isFp8(t.dtype) ? 2 : e;
  const overlapSOSQ = !dedicatedHd256 && ((dPad === 192 && dvPad >= 64) || (dvPad >= 128 && t.splitKv === true));
  const sQ = qStage * blockM * dPad * e;
  const sO = qStage * blockM * dvPad * oBytes;
  const qo = overlapSOSQ ? Math.max(sQ, sO) : sQ + sO;
  const perStage = Math.max(blockN * dPad * e, blockN * dvPad * e) / ctaGroup;
  let kvStage = Math.max(1, Math.min(Math.floor((SMEM_BUDGET - qo) / perStage), MAX_KV_STAGES));
  if (dPad === 192 && dvPad === 128 && kvStage === 2) kvStage = 3;
  if (dedicatedHd256) kvStage = HD256_KV_STAGES;
  const tune = TUNING[`${twoCta}/${t.causal}/${dPad}`];
  let registers: Fa4Config['registers'];
  if (dPad < 96) registers = { softmax: 200, correction: 64, other: 48 };
  else {
    const softmax = tune?.softmax ?? 192;
    const correction = tune?.correction ?? 80;
    registers = { softmax, correction, other: dedicatedHd256 ? 32 : 512 - 2 * softmax - correction };
  }
  const defaultEmu = dPad <= 128 || (dPad === 192 && twoCta && !t.causal && !local);
  const fp8Tune = isFp8(t.dtype) && dPad >= 96 ? FP8_TUNING[`${twoCta}/${t.causal}/${dPad}`] : undefined;
  const pattern = fp8Tune ?? tune;
  const enabled = pattern ? pattern.freq > 0 : defaultEmu;
  const exp2: Fa4Exp2 = { freq: enabled ? (pattern?.freq ?? 16) : 0, res: tune?.res ?? 4, startFrg: pattern?.startFrg ?? 1 };
  return { blockM, blockN, qStage, ctaGroup, dedicatedHd256, kvStage, dPad, dvPad, overlapSOSQ, registers, exp2 };
}
