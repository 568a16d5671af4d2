// Packed variable-length batches (flash_attn_varlen_func's layout): the B sequences of a
// batch are concatenated along the token axis, q [total_q, Hq, d], k [total_k, Hk, d],
// v [total_k, Hk, dv], and sequence b owns rows cu_seqlens_q[b] … cu_seqlens_q[b+1] − 1 of q
// and cu_seqlens_k[b] … cu_seqlens_k[b+1] − 1 of k and v. Nothing is padded: a batch of
// lengths 100 and 4000 costs 100² + 4000² score entries, not 2 · 4000².
//
// Masks are per sequence and aligned bottom-right in it (query i of a sequence with nq rows
// and nk keys sees key j iff j ≤ i + nk − nq under causal), exactly the dense rule applied
// to each sequence alone. Empty sequences are allowed on either side.
//
// Each CTA reads its sequence's two offsets of cu_seqlens_q and of cu_seqlens_k (16 bytes)
// before it loads its Q tile; FlashScope counts them on every load of a Q tile (once per
// CTA for FA2, FA3, cute-fa2, fmha_v2 and each flash-decoding split; FA4 loads two Q tiles
// per CTA and FA1 reloads Q per K/V block, so they count more). Trace events carry `packed`, the tile's
// rows and columns in the packed index, so a view can draw them on the packed tensors.

import { ProblemError } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import type { StepAlgorithm, RunOptions } from '../algorithms/types.ts';
import type { Range } from '../trace/events.ts';
import type { EventAnnotator } from '../trace/tracer.ts';
import { decodingSplitFeatures } from '../algorithms/flash-decoding/splits.ts';
import {
  runSequences,
  sequenceProblem,
  type LayoutBase,
  type LayoutGenerator,
  type LayoutRunResult,
  type SequenceWork,
} from './sequence-runner.ts';

export interface VarlenProblem {
  /** Heads, head dims, masks, modifiers and dtype shared by every sequence. */
  base: LayoutBase;
  /** Length B + 1, non-decreasing, from 0 to total_q. */
  cuSeqlensQ: readonly number[];
  /** Length B + 1, non-decreasing, from 0 to total_k. */
  cuSeqlensK: readonly number[];
}

export interface VarlenInputs {
  /** [total_q, Hq, d] */
  q: Float32Array;
  /** [total_k, Hk, d] */
  k: Float32Array;
  /** [total_k, Hk, dv] */
  v: Float32Array;
}

export const varlenBatch = (vp: VarlenProblem): number => vp.cuSeqlensQ.length - 1;
export const totalQ = (vp: VarlenProblem): number => vp.cuSeqlensQ[vp.cuSeqlensQ.length - 1];
export const totalK = (vp: VarlenProblem): number => vp.cuSeqlensK[vp.cuSeqlensK.length - 1];

/** Offsets from lengths (cu_seqlens): [0, l0, l0 + l1, …]; seqLengths' inverse. */
export function seqOffsets(lengths: readonly number[]): number[] {
  const out = [0];
  for (const n of lengths) out.push(out[out.length - 1] + n);
  return out;
}

/** Lengths of each sequence from its offsets. */
export function seqLengths(cu: readonly number[]): number[] {
  return cu.slice(1).map((c, b) => c - cu[b]);
}

/**
 * Checks one offsets tensor: integers, starting at 0, non-decreasing, ending at `total`
 * (the token count of the tensor it indexes). Messages name the tensor and the index.
 */
export function checkOffsets(name: string, cu: readonly number[], total: number, tensor: string): void {
  if (cu.length < 2) throw new ProblemError(name, `needs length B + 1 >= 2, got ${cu.length}`);
  for (let i = 0; i < cu.length; i++) {
    if (!Number.isInteger(cu[i])) throw new ProblemError(`${name}[${i}]`, `must be an integer, got ${cu[i]}`);
  }
  if (cu[0] !== 0) throw new ProblemError(`${name}[0]`, `must be 0, got ${cu[0]}`);
  for (let i = 1; i < cu.length; i++) {
    if (cu[i] < cu[i - 1]) {
      throw new ProblemError(
        `${name}[${i}]`,
        `offsets must be non-decreasing: ${name}[${i}] = ${cu[i]} < ${name}[${i - 1}] = ${cu[i - 1]}`,
      );
    }
  }
  const last = cu.length - 1;
  if (cu[last] !== total) {
    throw new ProblemError(`${name}[${last}]`, `must equal ${tensor}'s token count ${total} (the first dim of ${tensor}), got ${cu[last]}`);
  }
}

/** Validates offsets against the tensors' sizes and the base problem; throws ProblemError naming the tensor. */
export function validateVarlen(vp: VarlenProblem, x: VarlenInputs): void {
  const { hq, hk, d, dv } = vp.base;
  if (vp.cuSeqlensQ.length !== vp.cuSeqlensK.length) {
    throw new ProblemError(
      'cu_seqlens_k',
      `must have the same length as cu_seqlens_q (B + 1 = ${vp.cuSeqlensQ.length}), got ${vp.cuSeqlensK.length}`,
    );
  }
  const tq = x.q.length / (hq * d);
  const tk = x.k.length / (hk * d);
  if (!Number.isInteger(tq)) throw new ProblemError('q', `${x.q.length} elements is not a whole number of [Hq=${hq}, d=${d}] rows`);
  if (!Number.isInteger(tk)) throw new ProblemError('k', `${x.k.length} elements is not a whole number of [Hk=${hk}, d=${d}] rows`);
  if (x.v.length !== tk * hk * dv)
    throw new ProblemError('v', `expected [total_k=${tk}, Hk=${hk}, dv=${dv}] = ${tk * hk * dv} elements, got ${x.v.length}`);
  checkOffsets('cu_seqlens_q', vp.cuSeqlensQ, tq, 'q');
  checkOffsets('cu_seqlens_k', vp.cuSeqlensK, tk, 'k');
}

/** Copies rows [t0, t0 + n) of a packed [total, H, e] tensor into BHND [1, H, n, e]. */
export function gatherPacked(src: Float32Array, H: number, e: number, t0: number, n: number): Float32Array {
  const out = new Float32Array(H * n * e);
  for (let i = 0; i < n; i++)
    for (let h = 0; h < H; h++) {
      const s = ((t0 + i) * H + h) * e;
      out.set(src.subarray(s, s + e), (h * n + i) * e);
    }
  return out;
}

const shift = (r: Range, by: number): Range => (r[0] === r[1] ? r : [r[0] + by, r[1] + by]);

function varlenAnnotator(q0: number, k0: number): EventAnnotator {
  return (kind, base) => {
    const fields = () => ({ packed: { rows: shift(base.tile.rows, q0), cols: shift(base.tile.cols, k0) } });
    if (kind === 'load' && base.delta.hbmRead?.Q) return { hbmRead: { cu_seqlens_q: 8, cu_seqlens_k: 8 }, fields };
    return { fields };
  };
}

/** The per-sequence work list of a varlen batch (shared by the runner and the views). */
export function varlenWork(algo: StepAlgorithm, vp: VarlenProblem, x: VarlenInputs, opts: Omit<RunOptions, 'annotate'>): SequenceWork[] {
  const lq = seqLengths(vp.cuSeqlensQ);
  const lk = seqLengths(vp.cuSeqlensK);
  const features = decodingSplitFeatures(algo, vp.base, lq, lk, opts, 1);
  return lq.map((nq, b) => {
    const nk = lk[b];
    const q0 = vp.cuSeqlensQ[b];
    const k0 = vp.cuSeqlensK[b];
    const w: SequenceWork = { b, nq, nk, annotate: varlenAnnotator(q0, k0), features };
    if (nq > 0 && nk > 0) {
      w.problem = sequenceProblem(vp.base, nq, nk);
      w.inputs = () => ({
        q: gatherPacked(x.q, vp.base.hq, vp.base.d, q0, nq),
        k: gatherPacked(x.k, vp.base.hk, vp.base.d, k0, nk),
        v: gatherPacked(x.v, vp.base.hk, vp.base.dv, k0, nk),
      });
    }
    return w;
  });
}

/** Steps `algo` over a packed batch; validate first (throws ProblemError naming the tensor and index). */
export function runVarlen(algo: StepAlgorithm, vp: VarlenProblem, x: VarlenInputs, opts: Omit<RunOptions, 'annotate'>): LayoutGenerator {
  validateVarlen(vp, x);
  return runSequences(algo, vp.base, varlenWork(algo, vp, x, opts), opts);
}

/** o [total_q, Hq, dv] and lse [Hq, total_q] (the layout flash_attn_varlen_func returns) from per-sequence results. */
export function packVarlenOutput(
  vp: VarlenProblem,
  per: readonly ({ o: ArrayLike<number>; lse: ArrayLike<number> } | undefined)[],
): { o: Float64Array; lse: Float64Array } {
  const { hq, dv } = vp.base;
  const tq = totalQ(vp);
  const o = new Float64Array(tq * hq * dv);
  const lse = new Float64Array(hq * tq);
  per.forEach((r, b) => {
    if (!r) return;
    const q0 = vp.cuSeqlensQ[b];
    const nq = vp.cuSeqlensQ[b + 1] - q0;
    for (let h = 0; h < hq; h++)
      for (let i = 0; i < nq; i++) {
        lse[h * tq + q0 + i] = r.lse[h * nq + i];
        for (let e = 0; e < dv; e++) o[((q0 + i) * hq + h) * dv + e] = r.o[(h * nq + i) * dv + e];
      }
  });
  return { o, lse };
}

export function packedResult(vp: VarlenProblem, r: LayoutRunResult): { o: Float64Array; lse: Float64Array } {
  return packVarlenOutput(vp, r.outputs);
}

/**
 * The float64 reference: the dense reference applied to each sequence alone. Rows of a
 * sequence without keys get O = 0 and LSE = −inf.
 */
export function referenceVarlen(vp: VarlenProblem, x: VarlenInputs): { o: Float64Array; lse: Float64Array } {
  validateVarlen(vp, x);
  const lq = seqLengths(vp.cuSeqlensQ);
  const lk = seqLengths(vp.cuSeqlensK);
  const per = lq.map((nq, b) => {
    if (nq === 0) return undefined;
    const nk = lk[b];
    if (nk === 0) return { o: new Float64Array(vp.base.hq * nq * vp.base.dv), lse: new Float64Array(vp.base.hq * nq).fill(-Infinity) };
    const p = sequenceProblem(vp.base, nq, nk);
    return referenceAttention(p, {
      q: gatherPacked(x.q, vp.base.hq, vp.base.d, vp.cuSeqlensQ[b], nq),
      k: gatherPacked(x.k, vp.base.hk, vp.base.d, vp.cuSeqlensK[b], nk),
      v: gatherPacked(x.v, vp.base.hk, vp.base.dv, vp.cuSeqlensK[b], nk),
    });
  });
  return packVarlenOutput(vp, per);
}
