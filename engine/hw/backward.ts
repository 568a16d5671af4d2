// What the backward schedules share (algorithms/fa3/backward-schedule.ts, algorithms/fa2/backward-schedule.ts).
//
// Both kernels put the K/V loop outside: one CTA owns a column block n of K and V (block_n
// keys), keeps dK_n and dV_n in registers, and walks the Q row blocks m that see those keys,
// recomputing P_mn = exp(S_mn − LSE_m) and adding its share dS_mn K_n into the fp32 dQ
// accumulator in HBM. The CtaWork of a backward CTA therefore reads differently from the
// forward's: `qBlock` is the column block n, and [kvFrom, kvTo) is the range of ROW blocks m
// it visits (the field names are the forward's; the iteration helpers work unchanged).
//
// Around the main kernel run two small memory-bound kernels, as in the FA2 and FA3 code:
// the preprocessing (D = rowsum(dO ∘ O), LSE scaled to log2 units, dQaccum zeroed) and the
// conversion of dQaccum (fp32) to dQ in the input type; with GQA also dK/dV accumulators.
//
// FLOPs follow the FlashAttention papers' convention: 2.5 × the forward's (five matmuls
// against two), halved with a causal mask like the forward's.

import { nominalFlops } from '../core/problem.ts';
import type { GpuSpec } from './gpus/index.ts';
import { ceilDiv, elemBytes, type CtaWork, type ProblemShape } from './model.ts';

export function backwardFlops(shape: ProblemShape): number {
  return 2.5 * nominalFlops({ ...shape });
}

/**
 * Row blocks [from, to) whose rows see some key of column block n under the bottom-right
 * causal mask (every row block when not causal). Row i sees key c when c ≤ i + nk − nq.
 */
export function visibleRowRange(shape: ProblemShape, n: number, blockM: number, blockN: number): [number, number] {
  const tr = ceilDiv(shape.nq, blockM);
  if (!shape.causal) return [0, tr];
  const firstRow = n * blockN - (shape.nk - shape.nq);
  if (firstRow >= shape.nq) return [0, 0];
  return [Math.floor(Math.max(0, firstRow) / blockM), tr];
}

/** Does the tile (row block m, column block n) hold keys past the causal diagonal, so it is masked inside? */
export function tileCrossesDiagonal(shape: ProblemShape, m: number, n: number, blockM: number, blockN: number): boolean {
  return shape.causal && (n + 1) * blockN - 1 > m * blockM + shape.nk - shape.nq;
}

/** One CTA per (batch, query head, column block), in launch order (column block fastest). */
export function backwardGrid(shape: ProblemShape, blockM: number, blockN: number): CtaWork[] {
  const out: CtaWork[] = [];
  const tc = ceilDiv(shape.nk, blockN);
  for (let b = 0; b < shape.batch; b++)
    for (let h = 0; h < shape.hq; h++)
      for (let n = 0; n < tc; n++) {
        const [kvFrom, kvTo] = visibleRowRange(shape, n, blockM, blockN);
        out.push({ b, h, qBlock: n, kvFrom, kvTo, reverse: false, split: 0 });
      }
  return out;
}

/** Model assumption: launch and tail of one small kernel, microseconds. */
export const SMALL_KERNEL_US = 3;
/** Model assumption: the share of HBM bandwidth a streaming elementwise kernel reaches. */
export const STREAM_EFFICIENCY = 0.85;

/** Bytes the preprocessing kernel moves: O and dO read, LSE read, D and LSE·log2(e) written (fp32), dQaccum zeroed. */
export function preprocessBytes(s: ProblemShape): number {
  const rows = s.batch * s.hq * s.nq;
  return rows * (2 * s.dv * elemBytes(s.dtype) + 3 * 4 + s.d * 4);
}

/** Bytes the conversion kernels move: dQaccum read, dQ written; with GQA also dK/dV accumulators read and dK/dV written. */
export function postprocessBytes(s: ProblemShape): number {
  const e = elemBytes(s.dtype);
  let bytes = s.batch * s.hq * s.nq * s.d * (4 + e);
  if (s.hk !== s.hq) bytes += s.batch * s.hk * s.nk * (s.d + s.dv) * (4 + e);
  return bytes;
}

/** Microseconds of the kernels around the main one. */
export function aroundKernelsUs(gpu: GpuSpec, s: ProblemShape): number {
  const kernels = s.hk !== s.hq ? 3 : 2;
  return kernels * SMALL_KERNEL_US + ((preprocessBytes(s) + postprocessBytes(s)) / (gpu.hbmBytesPerSec * STREAM_EFFICIENCY)) * 1e6;
}

/**
 * The traffic the main kernel cannot avoid: Q, K, V, dO read once, LSE and D read once,
 * dK and dV written once (fp32 accumulators read-modified-written with GQA), dQaccum read
 * and written at least once (the atomic adds themselves resolve in L2).
 */
export function backwardHbmBytes(s: ProblemShape): number {
  const e = elemBytes(s.dtype);
  const q = s.batch * s.hq * s.nq;
  const k = s.batch * s.hk * s.nk;
  const dkdv = s.hk !== s.hq ? s.batch * s.hq * s.nk * (s.d + s.dv) * 4 * 2 : k * (s.d + s.dv) * e;
  return q * (s.d + s.dv) * e + k * (s.d + s.dv) * e + q * 8 + dkdv + q * s.d * 4 * 2;
}
