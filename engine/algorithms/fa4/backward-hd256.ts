// The dedicated FA4 backward for d = dv = 256 on SM100 (flash_attn/cute/sm100_hd256_2cta_fmha_backward.py
// at 0251105a): instead of flash_bwd_sm100.py's one kernel with an fp32 dQaccum, two kernels run in
// turn, both on CTA pairs (cluster 2 × 1, cta_group::2 MMAs): a dQ kernel that owns a Q tile and
// walks the key blocks (dQ = dS·K straight to HBM), then a dK/dV kernel that owns 64 keys and walks
// the Q tiles of every query head of its KV head group (so GQA needs no fp32 accumulators and no
// semaphores). Their configurations, read off the constructors, for `describe --backward`.

import type { DispatchInput } from '../../hw/dispatch-input.ts';

const WRAP = 'flash_attn/cute/sm100_hd256_2cta_fmha_backward.py@0251105a';
const DQ = 'flash_attn/cute/sm100_hd256_2cta_fmha_backward_dqkernel.py@0251105a';
const DKDV = 'flash_attn/cute/sm100_hd256_2cta_fmha_backward_dkdvkernel.py@0251105a';
const SCHED = 'flash_attn/cute/tile_scheduler.py@0251105a';

export interface Hd256Role {
  name: string;
  warps: number[];
  registers: number;
}

/** One of the two kernels: its CTA tile, grid, warp roles, TMEM columns and SMEM buffers (bytes per CTA). */
export interface Hd256BwdKernel {
  name: 'dQ' | 'dKdV';
  /** Query rows × keys one CTA owns (the pair's MMA covers twice the first). */
  tileM: number;
  tileN: number;
  /** CTAs along the sequence each walks over, the heads and the batch (rounded to the cluster of 2). */
  grid: [number, number, number];
  roles: Hd256Role[];
  tmem: { name: string; column: number; columns: number }[];
  smem: { name: string; bytes: number }[];
  /** Every SMEM ring and TMEM accumulator of the kernel has this many stages, except those named. */
  stages: Record<string, number>;
  why: string[];
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const evenCtas = (n: number) => Math.ceil(n / 2) * 2;

/** The refusals of the d = 256 kernels that the general path does not make, in the order upstream checks them. */
export function hd256BwdRefusals(local: boolean, deterministic: boolean): { message: string; why: string }[] {
  const out: { message: string; why: string }[] = [];
  if (local) out.push({ message: 'SM100 backward with head_dim=256 does not support local attention', why: `${WRAP} l. 60` });
  if (deterministic) out.push({ message: 'SM100 backward with head_dim=256 does not support deterministic mode', why: `${WRAP} l. 70-72` });
  return out;
}

/** The dQ kernel (BlackwellFusedMultiHeadAttentionBackwardDQKernel) for a problem; elements of 2 bytes. */
export function hd256DqKernel(p: DispatchInput): Hd256BwdKernel {
  const e = 2;
  const M = 128;
  const N = 128;
  const D = 256;
  // A pair's MMA is M = 256 rows: each CTA holds its 128 rows of A and half of B's N (cta_group::2).
  const smem = [
    { name: 'sQ', bytes: M * D * e },
    { name: 'sK', bytes: (N / 2) * D * e },
    { name: 'sV', bytes: (N / 2) * D * e },
    { name: 'sdO', bytes: M * D * e },
    { name: 'sKT', bytes: (D / 2) * N * e },
    { name: 'sLSE', bytes: M * 4 },
    { name: 'sSum_OdO', bytes: M * 4 },
  ];
  return {
    name: 'dQ',
    tileM: M,
    tileN: N,
    grid: [evenCtas(Math.ceil((p.totalQ ?? p.nq) / M)), p.hq, p.batch],
    roles: [
      { name: 'compute', warps: range(0, 3), registers: 256 },
      { name: 'epilogue', warps: range(4, 7), registers: 160 },
      { name: 'mma', warps: [8], registers: 32 },
      { name: 'load', warps: [9], registers: 32 },
      { name: 'empty', warps: [10, 11], registers: 32 },
    ],
    tmem: [
      { name: 'S', column: 0, columns: N },
      { name: 'dP', column: 128, columns: N },
      { name: 'dQ', column: 256, columns: D },
    ],
    smem,
    stages: { Q: 1, K: 1, V: 1, dO: 1, KT: 1, S: 1, dP: 1, dQ: 1 },
    why: [
      `${DQ} l. 67-93, 337: a CTA owns 128 query rows and walks key blocks of 128; the pair's S = Q·Kᵀ and dP = dO·Vᵀ MMAs are 256 × 128 × 256, dQ = dS·K 256 × 256 × 128 with dS read from TMEM`,
      `${DQ} l. 94, 304-307, 532 with ${SCHED} l. 1845-1859: cluster 2 × 1, grid ceil(${p.totalQ !== undefined ? `total_q ${p.totalQ}` : 'seqlen_q'} / 128) × ${p.hq} heads × ${p.batch}, rounded to the cluster${p.totalQ !== undefined ? ' (varlen: the packed rows of every sequence, the batch from cu_seqlens)' : ''}`,
      `${DQ} l. 100-104, 114-124, 133-135, 894-895, 918-919, 1195-1196, 1825-1827, 1941-1942: 12 warps: compute 0-3 (256 registers), epilogue 4-7 (160), mma 8, load 9, empty 10-11 (32)`,
      `${DQ} l. 106, 129-131: TMEM (512 columns allocated): S at 0, dP at 128, dQ at 256 (256 fp32 columns)`,
      `${DQ} l. 140-150: one stage of every Q, K, V, dO, Kᵀ buffer and accumulator (split_head off: the head dim is one MMA K)`,
      `${DQ} l. 812-860: SMEM sQ, sK, sV, sdO, sKT, sLSE, sSum_OdO; dQ's store is staged over sdO (a separate tile would not fit)`,
    ],
  };
}

/** The dK/dV kernel (BlackwellFusedMultiHeadAttentionBackwardDKDVKernel) for a problem; elements of 2 bytes. */
export function hd256DkdvKernel(p: DispatchInput): Hd256BwdKernel {
  const e = 2;
  const M = 128;
  const N = 64;
  const D = 256;
  const group = Math.floor(p.hq / Math.max(1, p.hk));
  // MMAs of the pair: S = K·Qᵀ and dP = V·dOᵀ are (2·64) × 128 × 256, dV += P·dO and dK += dSᵀ·Q (2·64) × 256 × 128.
  const smem = [
    { name: 'sK', bytes: N * D * e },
    { name: 'sV', bytes: N * D * e },
    { name: 'sQ', bytes: (M / 2) * D * e },
    { name: 'sQT', bytes: (D / 2) * M * e },
    { name: 'sdO', bytes: (M / 2) * D * e },
    { name: 'sdOT', bytes: (D / 2) * M * e },
    { name: 'sP', bytes: N * M * e },
    { name: 'sdST', bytes: N * M * e },
    { name: 'sLSE', bytes: M * 4 },
    { name: 'sSum_OdO', bytes: M * 4 },
  ];
  return {
    name: 'dKdV',
    tileM: M,
    tileN: N,
    grid: [evenCtas(Math.ceil((p.totalK ?? p.nk) / N)), p.hk, p.batch],
    roles: [
      { name: 'compute', warps: range(0, 7), registers: 128 },
      { name: 'mma', warps: [8], registers: 128 },
      { name: 'load', warps: [9], registers: 96 },
      { name: 'empty', warps: [10, 11], registers: 96 },
    ],
    tmem: [
      { name: 'dK', column: 0, columns: 128 },
      { name: 'dV', column: 128, columns: 128 },
      { name: 'S', column: 256, columns: 64 },
      { name: 'dP', column: 320, columns: 64 },
    ],
    smem,
    stages: { Q: 1, K: 1, V: 1, QT: 1, dO: 1, dOT: 1, LSE: 1, sum_OdO: 1, S: 1, dP: 1, P: 1, dS: 1, dKdV: 2 },
    why: [
      `${DKDV} l. 116-145: a CTA owns 64 keys and walks the Q tiles of 128 rows; the pair's MMAs are S = K·Qᵀ, dP = V·dOᵀ (128 × 128 × 256) and dV += P·dO, dK += dSᵀ·Q (128 × 256 × 128), cluster 2 × 1`,
      `${DKDV} l. 734-735, 3168-3176: grid ceil(${p.totalK !== undefined ? `total_k ${p.totalK}` : 'seqlen_k'} / 64) × ${p.hk} KV heads × ${p.batch}, rounded to the cluster`,
      `${DKDV} l. 155-165, 178-182, 1136-1143: 12 warps: compute 0-7 (128 registers), mma 8 (128), load 9 (96), the rest empty (96)`,
      `${DKDV} l. 162, 173-176: TMEM (512 columns allocated): dK at 0, dV at 128, S at 256, dP at 320`,
      `${DKDV} l. 188-199: one stage of every buffer, two of the dK/dV accumulator hand-off`,
      `${DKDV} l. 633-710: SMEM sK, sV, sQ, sQT, sdO, sdOT, sP, sdST, sLSE, sSum_OdO`,
      group > 1
        ? `${DKDV} l. 1998-2001 with ${WRAP} l. 147-148: the load warp walks the ${group} query heads of the KV head in one CTA, so dK and dV sum the group on chip: no fp32 accumulators, no semaphores`
        : `${WRAP} l. 147-148: no semaphores`,
    ],
  };
}

/** Both kernels in launch order, with the wrapper's line saying so. */
export function hd256BwdKernels(p: DispatchInput): { kernels: [Hd256BwdKernel, Hd256BwdKernel]; why: string } {
  return {
    kernels: [hd256DqKernel(p), hd256DkdvKernel(p)],
    why: `${WRAP} l. 198-224: the dQ kernel first, then the dK/dV kernel, on the same stream`,
  };
}
