// The backward pass on a packed varlen batch (flash_attn_varlen_func's backward): dO comes
// packed like O, [total_q, Hq, dv], and the gradients go back packed like their inputs,
// dq [total_q, Hq, d], dk [total_k, Hk, d], dv [total_k, Hk, dv]. As in the forward
// (sequence-runner.ts), the varlen kernel's CTAs each serve one sequence, so the backward
// is the dense backward run once per sequence on its gathered rows. The backward's grid is
// (K/V column block, query head, sequence), and each of its CTAs reads its sequence's two
// offsets of cu_seqlens_q and of cu_seqlens_k (16 bytes) once: that is what the counters
// add to the dense per-sequence backward's traffic.
//
// Edge cases follow from the per-sequence definition: a sequence without keys has
// O = 0, LSE = −inf and dq = 0 (its rows attend to nothing); a sequence without query rows
// leaves dk = dv = 0 on its keys (no query looks at them).

import { addDelta, emptyCounters, type Counters } from '../core/counters.ts';
import { backwardById } from '../algorithms/backward-registry.ts';
import type { BackwardResult } from '../backward/types.ts';
import type { BlockOptions } from '../algorithms/types.ts';
import { ProblemError } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import { sequenceProblem } from './sequence-runner.ts';
import {
  gatherPacked,
  packVarlenOutput,
  seqLengths,
  totalK,
  totalQ,
  validateVarlen,
  type VarlenInputs,
  type VarlenProblem,
} from './varlen.ts';

export interface VarlenBackwardResult {
  /** [total_q, Hq, dv] and [Hq, total_q], as the forward writes them. */
  o: Float64Array;
  lse: Float64Array;
  /** [total_q, Hq, d], [total_k, Hk, d], [total_k, Hk, dv]. */
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
  /** The backward's counters summed over the sequences, plus the offsets every CTA reads. */
  counters: Counters;
  blocks: { blockM: number; blockN: number } | undefined;
}

/** Writes BHND [1, H, n, e] rows back into a packed [total, H, e] tensor at row t0. */
function scatterPacked(dst: Float32Array, src: ArrayLike<number>, H: number, e: number, t0: number, n: number): void {
  for (let i = 0; i < n; i++)
    for (let h = 0; h < H; h++) for (let c = 0; c < e; c++) dst[((t0 + i) * H + h) * e + c] = src[(h * n + i) * e + c];
}

function addCounters(into: Counters, c: Counters): void {
  addDelta(into, c);
  into.steps += c.steps;
}

/**
 * Runs algorithm `id`'s backward (standard, fa1, fa2, fa3, fa4) over every sequence of the
 * batch. `dO` is packed [total_q, Hq, dv] and already rounded to the problem's dtype.
 * Throws ProblemError naming the tensor (dO's size, the offsets) or the algorithm.
 */
export function runVarlenBackward(
  id: string,
  vp: VarlenProblem,
  x: VarlenInputs,
  dO: Float32Array,
  opts: BlockOptions & { features?: Record<string, boolean | number> } = {},
): VarlenBackwardResult {
  const algo = backwardById(id);
  validateVarlen(vp, x);
  const { hq, hk, d, dv } = vp.base;
  const tq = totalQ(vp);
  const tk = totalK(vp);
  if (dO.length !== tq * hq * dv)
    throw new ProblemError(
      'dO',
      `expected [total_q=${tq}, Hq=${hq}, dv=${dv}] = ${tq * hq * dv} elements (the shape of O), got ${dO.length}`,
    );
  const lq = seqLengths(vp.cuSeqlensQ);
  const lk = seqLengths(vp.cuSeqlensK);
  const dq = new Float32Array(tq * hq * d);
  const dk = new Float32Array(tk * hk * d);
  const dvOut = new Float32Array(tk * hk * dv);
  const counters = emptyCounters();
  let blocks: VarlenBackwardResult['blocks'];
  const per = lq.map((nq, b) => {
    const nk = lk[b];
    if (nq === 0) return undefined;
    if (nk === 0) return { o: new Float32Array(hq * nq * dv), lse: new Float32Array(hq * nq).fill(-Infinity) };
    const q0 = vp.cuSeqlensQ[b];
    const k0 = vp.cuSeqlensK[b];
    const p = sequenceProblem(vp.base, nq, nk);
    const inputs = {
      q: gatherPacked(x.q, hq, d, q0, nq),
      k: gatherPacked(x.k, hk, d, k0, nk),
      v: gatherPacked(x.v, hk, dv, k0, nk),
      dO: gatherPacked(dO, hq, dv, q0, nq),
    };
    const r = runToEnd(algo, p, inputs, opts) as BackwardResult;
    scatterPacked(dq, r.dq, hq, d, q0, nq);
    scatterPacked(dk, r.dk, hk, d, k0, nk);
    scatterPacked(dvOut, r.dv, hk, dv, k0, nk);
    addCounters(counters, r.counters);
    const ctas = hq * Math.ceil(nk / r.blocks.blockN);
    addDelta(counters, { hbmRead: { cu_seqlens_q: 8 * ctas, cu_seqlens_k: 8 * ctas } });
    blocks ??= r.blocks;
    return { o: r.o, lse: r.lse };
  });
  const packed = packVarlenOutput(vp, per);
  return { o: packed.o, lse: packed.lse, dq, dk, dv: dvOut, counters, blocks };
}
