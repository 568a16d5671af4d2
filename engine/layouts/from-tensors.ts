// Serving-layout problems from tensors read out of files (.npy / .safetensors), for the CLI
// and the browser alike: ranks, heads and head dims are checked here with messages naming
// the tensor; offsets and tables are then checked by validateVarlen / validatePaged when
// the run starts. Offsets and tables may be int32 or int64, or floats holding whole numbers.

import { roundArray } from '../core/dtype.ts';
import { isIntegerStorage } from '../io/float-codec.ts';
import type { Tensor } from '../io/tensor-info.ts';
import { ProblemError, type DType, type ProblemDims } from '../core/problem.ts';
import type { PagedInputs, PagedProblem } from './paged.ts';
import type { LayoutBase } from './sequence-runner.ts';
import type { VarlenInputs, VarlenProblem } from './varlen.ts';

export interface VarlenTensors {
  q: Tensor;
  k: Tensor;
  v: Tensor;
  cuSeqlensQ: Tensor;
  cuSeqlensK: Tensor;
}

export interface PagedTensors {
  q: Tensor;
  kCache: Tensor;
  vCache: Tensor;
  blockTable: Tensor;
  cacheSeqlens: Tensor;
}

/** Memory order of a paged q: [B, Nq, Hq, d] (bnhd) or [B, Hq, Nq, d] (bhnd). */
export type QLayout = 'bnhd' | 'bhnd';

/** Heads, head dims and the input dtype the files imply. */
export type LayoutShape = Pick<ProblemDims, 'hq' | 'hk' | 'd' | 'dv'> & { dtype: DType };

const shapeText = (t: Tensor) => `[${t.info.shape.join(', ')}]`;

function expectRank(t: Tensor, rank: number, role: string, what: string): void {
  if (t.info.shape.length !== rank) throw new ProblemError(role, `expected ${what}, got shape ${shapeText(t)}`);
}

/** Integers of an index tensor (int32/int64 exactly; a float file must hold whole numbers). */
function indices(t: Tensor, role: string): number[] {
  const out = Array.from(t.data);
  if (!isIntegerStorage(t.info.dtype)) {
    const bad = out.findIndex((v) => !Number.isInteger(v));
    if (bad >= 0) throw new ProblemError(`${role}[${bad}]`, `must be an integer, got ${out[bad]} (a ${t.info.dtype} file; int32 expected)`);
  }
  return out;
}

function valueDtype(t: Tensor, role: string): DType {
  if (isIntegerStorage(t.info.dtype))
    throw new ProblemError(role, `holds ${t.info.dtype} values; attention inputs must be float16, bfloat16, float32 or float64`);
  return t.info.dtype === 'float16' ? 'fp16' : t.info.dtype === 'bfloat16' ? 'bf16' : 'fp32';
}

export function varlenShape(t: VarlenTensors): LayoutShape {
  expectRank(t.q, 3, 'q', '[total_q, Hq, d]');
  expectRank(t.k, 3, 'k', '[total_k, Hk, d]');
  expectRank(t.v, 3, 'v', '[total_k, Hk, dv]');
  expectRank(t.cuSeqlensQ, 1, 'cu_seqlens_q', 'a 1-D tensor of length B + 1');
  expectRank(t.cuSeqlensK, 1, 'cu_seqlens_k', 'a 1-D tensor of length B + 1');
  const [, hq, d] = t.q.info.shape;
  const [tk, hk, dk] = t.k.info.shape;
  const [tv, hv, dv] = t.v.info.shape;
  const shapes = `q ${shapeText(t.q)}, k ${shapeText(t.k)}, v ${shapeText(t.v)}`;
  if (dk !== d) throw new ProblemError('k', `must have q's head dim ${d}: ${shapes}`);
  if (hk < 1 || hq % hk !== 0) throw new ProblemError('k', `q has ${hq} heads, k has ${hk}: not a divisor (${shapes})`);
  if (hv !== hk || tv !== tk) throw new ProblemError('v', `must have k's tokens and heads: ${shapes}`);
  valueDtype(t.k, 'k');
  valueDtype(t.v, 'v');
  return { hq, hk, d, dv, dtype: valueDtype(t.q, 'q') };
}

/** The packed problem and its inputs (rounded to base.dtype); base comes from varlenShape plus masks and modifiers. */
export function varlenFromTensors(t: VarlenTensors, base: LayoutBase): { vp: VarlenProblem; x: VarlenInputs } {
  const vp: VarlenProblem = { base, cuSeqlensQ: indices(t.cuSeqlensQ, 'cu_seqlens_q'), cuSeqlensK: indices(t.cuSeqlensK, 'cu_seqlens_k') };
  const x = {
    q: roundArray(base.dtype, Float32Array.from(t.q.data)),
    k: roundArray(base.dtype, Float32Array.from(t.k.data)),
    v: roundArray(base.dtype, Float32Array.from(t.v.data)),
  };
  return { vp, x };
}

export function pagedShape(t: PagedTensors, layout: QLayout): LayoutShape & { B: number; nq: number } {
  expectRank(t.q, 4, 'q', layout === 'bnhd' ? '[B, Nq, Hq, d]' : '[B, Hq, Nq, d]');
  expectRank(t.kCache, 4, 'k_cache', '[num_pages, page_size, Hk, d]');
  expectRank(t.vCache, 4, 'v_cache', '[num_pages, page_size, Hk, dv]');
  expectRank(t.blockTable, 2, 'block_table', '[B, max_pages]');
  expectRank(t.cacheSeqlens, 1, 'cache_seqlens', '[B]');
  const s = t.q.info.shape;
  const [B, hq, nq, d] = layout === 'bnhd' ? [s[0], s[2], s[1], s[3]] : [s[0], s[1], s[2], s[3]];
  const [numPages, pageSize, hk, dk] = t.kCache.info.shape;
  const [np2, ps2, hv, dv] = t.vCache.info.shape;
  const shapes = `q ${shapeText(t.q)}, k_cache ${shapeText(t.kCache)}, v_cache ${shapeText(t.vCache)}`;
  if (dk !== d) throw new ProblemError('k_cache', `must have q's head dim ${d}: ${shapes}`);
  if (pageSize < 1) throw new ProblemError('k_cache', `page_size must be >= 1: ${shapes}`);
  if (hk < 1 || hq % hk !== 0) throw new ProblemError('k_cache', `q has ${hq} heads, k_cache has ${hk}: not a divisor (${shapes})`);
  if (np2 !== numPages || ps2 !== pageSize || hv !== hk)
    throw new ProblemError('v_cache', `must have k_cache's pages, page size and heads: ${shapes}`);
  if (t.blockTable.info.shape[0] !== B)
    throw new ProblemError('block_table', `needs one row per sequence (B = ${B}), got shape ${shapeText(t.blockTable)}`);
  if (t.cacheSeqlens.info.shape[0] !== B)
    throw new ProblemError('cache_seqlens', `needs one length per sequence (B = ${B}), got shape ${shapeText(t.cacheSeqlens)}`);
  valueDtype(t.kCache, 'k_cache');
  valueDtype(t.vCache, 'v_cache');
  return { B, nq, hq, hk, d, dv, dtype: valueDtype(t.q, 'q') };
}

/** q in BHND, caches as stored; all rounded to base.dtype. */
export function pagedFromTensors(t: PagedTensors, base: LayoutBase, layout: QLayout): { pp: PagedProblem; x: PagedInputs } {
  const { B, nq, hq, d } = pagedShape(t, layout);
  const [numPages, pageSize] = t.kCache.info.shape;
  const pp: PagedProblem = {
    base,
    batch: B,
    nq,
    numPages,
    pageSize,
    maxPages: t.blockTable.info.shape[1],
    blockTable: indices(t.blockTable, 'block_table'),
    cacheSeqlens: indices(t.cacheSeqlens, 'cache_seqlens'),
  };
  const q = new Float32Array(B * hq * nq * d);
  for (let b = 0; b < B; b++)
    for (let n = 0; n < nq; n++)
      for (let h = 0; h < hq; h++)
        for (let e = 0; e < d; e++) {
          const src = layout === 'bnhd' ? ((b * nq + n) * hq + h) * d + e : ((b * hq + h) * nq + n) * d + e;
          q[((b * hq + h) * nq + n) * d + e] = t.q.data[src];
        }
  return {
    pp,
    x: {
      q: roundArray(base.dtype, q),
      kCache: roundArray(base.dtype, Float32Array.from(t.kCache.data)),
      vCache: roundArray(base.dtype, Float32Array.from(t.vCache.data)),
    },
  };
}
