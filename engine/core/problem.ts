// The attention problem every FlashScope algorithm solves. One plain-data description,
// validated once, so that the reference, the step engine, the hardware models and the
// WebGPU backend all agree on what "the problem" means.

import { checkMaskSpec, type MaskSpec, MaskSpecError } from './mask-spec.ts';

/**
 * Input precision. The FP8 types describe how the kernel *feeds its tensor cores*: Q, K and V
 * arrive in high precision and the FP8 path quantizes them with per-tensor or per-tile scales
 * (engine/lowprec/); only algorithms with an FP8 path accept them (see requireNoFp8).
 */
export type DType = 'fp32' | 'fp16' | 'bf16' | 'fp8e4m3' | 'fp8e5m2';

export const DTYPES: readonly DType[] = ['fp32', 'fp16', 'bf16', 'fp8e4m3', 'fp8e5m2'];

export function isFp8(dtype: DType): dtype is 'fp8e4m3' | 'fp8e5m2' {
  return dtype === 'fp8e4m3' || dtype === 'fp8e5m2';
}

/** The precision a run stores its inputs in before any FP8 quantization: fp8 runs keep fp32. */
export function storageDtype(dtype: DType): 'fp32' | 'fp16' | 'bf16' {
  return isFp8(dtype) ? 'fp32' : dtype;
}

/** Sliding window in keys relative to the aligned diagonal; -1 means unbounded on that side. */
export interface SlidingWindow {
  left: number;
  right: number;
}

export interface AttentionProblem {
  batch: number;
  /** Query heads. */
  hq: number;
  /** Key/value heads; hq % hk === 0 (hk === hq: MHA, 1 < hk < hq: GQA, hk === 1: MQA). */
  hk: number;
  nq: number;
  nk: number;
  /** Head dim of Q and K. */
  d: number;
  /** Head dim of V and O (may differ from d, e.g. 192/128). */
  dv: number;
  /** Softmax scale; undefined means 1/sqrt(d). */
  scale?: number;
  /** Causal mask aligned bottom-right: query i sees key j iff j <= i + nk - nq. */
  causal: boolean;
  window?: SlidingWindow;
  /**
   * Chunked attention (attention_chunk of FA3's hopper/flash_api.cpp): a query sees only keys in its own
   * chunk of this many positions (positions counted bottom-right aligned), on top of causal and the window.
   */
  attentionChunk?: number;
  /** ALiBi: 'standard' slopes for hq heads, or explicit per-head slopes (length hq). */
  alibi?: 'standard' | number[];
  /** Softcap c > 0: score = c * tanh(score / c), applied after scaling, before masks/bias. */
  softcap?: number;
  /** Attention sinks: one logit per query head that joins the softmax denominator only. */
  sinks?: number[];
  /** mask_mod / score_mod text and aux arrays (engine/core/mask-language.ts), on top of the fields above. */
  mask?: MaskSpec;
  dtype: DType;
}

/** A problem's sizes: batch, query and K/V heads, sequence lengths, head dims. */
export type ProblemDims = Pick<AttentionProblem, 'batch' | 'hq' | 'hk' | 'nq' | 'nk' | 'd' | 'dv'>;

export class ProblemError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'ProblemError';
  }
}

export const DEFAULT_PROBLEM: AttentionProblem = {
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 64,
  nk: 64,
  d: 32,
  dv: 32,
  causal: false,
  dtype: 'fp32',
};

function positiveInt(field: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new ProblemError(field, `must be a positive integer, got ${String(v)}`);
  }
}

/** Throws ProblemError naming the first bad field; returns the problem unchanged otherwise. */
export function validateProblem(p: AttentionProblem): AttentionProblem {
  for (const f of ['batch', 'hq', 'hk', 'nq', 'nk', 'd', 'dv'] as const) positiveInt(f, p[f]);
  if (p.hq % p.hk !== 0) {
    throw new ProblemError('hk', `query heads (${p.hq}) must be a multiple of key/value heads (${p.hk})`);
  }
  if (p.scale !== undefined && !Number.isFinite(p.scale)) {
    throw new ProblemError('scale', `must be a finite number, got ${p.scale}`);
  }
  if (!DTYPES.includes(p.dtype)) {
    throw new ProblemError('dtype', `must be one of ${DTYPES.join(', ')}, got ${String(p.dtype)}`);
  }
  if (p.window) {
    for (const side of ['left', 'right'] as const) {
      const w = p.window[side];
      if (!Number.isInteger(w) || w < -1) {
        throw new ProblemError(`window.${side}`, `must be an integer >= 0, or -1 for unbounded; got ${w}`);
      }
    }
  }
  if (p.attentionChunk !== undefined) positiveInt('attentionChunk', p.attentionChunk);
  if (p.softcap !== undefined && !(Number.isFinite(p.softcap) && p.softcap > 0)) {
    throw new ProblemError('softcap', `must be a finite number > 0, got ${p.softcap}`);
  }
  if (Array.isArray(p.alibi)) {
    if (p.alibi.length !== p.hq) {
      throw new ProblemError('alibi', `needs one slope per query head (${p.hq}), got ${p.alibi.length}`);
    }
    if (!p.alibi.every(Number.isFinite)) throw new ProblemError('alibi', 'slopes must be finite');
  } else if (p.alibi !== undefined && p.alibi !== 'standard') {
    throw new ProblemError('alibi', `must be 'standard' or a list of slopes`);
  }
  if (p.sinks !== undefined) {
    if (p.sinks.length !== p.hq) {
      throw new ProblemError('sinks', `needs one logit per query head (${p.hq}), got ${p.sinks.length}`);
    }
    if (!p.sinks.every((s) => Number.isFinite(s))) throw new ProblemError('sinks', 'logits must be finite');
  }
  if (p.mask !== undefined) {
    try {
      checkMaskSpec(p.mask);
    } catch (e) {
      if (e instanceof MaskSpecError) throw new ProblemError(e.field, e.reason);
      throw e;
    }
  }
  return p;
}

export function softmaxScale(p: AttentionProblem): number {
  return p.scale ?? 1 / Math.sqrt(p.d);
}

/** The ALiBi slopes of the paper for n heads (geometric, interpolated when n is not a power of two). */
export function standardAlibiSlopes(n: number): number[] {
  const pow2 = (k: number): number[] => {
    const start = 2 ** -(2 ** -(Math.log2(k) - 3));
    return Array.from({ length: k }, (_, i) => start * start ** i);
  };
  if (Number.isInteger(Math.log2(n))) return pow2(n);
  const closest = 2 ** Math.floor(Math.log2(n));
  return [
    ...pow2(closest),
    ...pow2(2 * closest)
      .filter((_, i) => i % 2 === 0)
      .slice(0, n - closest),
  ];
}

export function alibiSlopes(p: AttentionProblem): number[] | undefined {
  if (p.alibi === undefined) return undefined;
  return p.alibi === 'standard' ? standardAlibiSlopes(p.hq) : p.alibi;
}

/** Bytes per element of the input dtype (Q, K, V, O and the materialized S/P of standard attention). */
export function dtypeBytes(dtype: DType): number {
  return dtype === 'fp32' ? 4 : isFp8(dtype) ? 1 : 2;
}

/** The refusal of an FP8 `dtype` by `algorithm`, which has no FP8 path. */
export function noFp8Path(algorithm: string, dtype: DType): string {
  return `${algorithm} has no FP8 path; ${dtype} runs only on fa3's and fa4's forwards (their FP8 kernels) — pick fp16, bf16 or fp32 here`;
}

/** FP8 runs only where an algorithm models an FP8 path; every other algorithm calls this first. */
export function requireNoFp8(p: AttentionProblem, algorithm: string): void {
  if (isFp8(p.dtype)) throw new ProblemError('dtype', noFp8Path(algorithm, p.dtype));
}

/** FLOPs as the FlashAttention papers count them: 4·B·Hq·Nq·Nk·d (d for QK, dv for PV), halved when causal with Nq = Nk. */
export function nominalFlops(p: AttentionProblem): number {
  const f = 2 * p.batch * p.hq * p.nq * p.nk * (p.d + p.dv);
  return p.causal ? f / 2 : f;
}
