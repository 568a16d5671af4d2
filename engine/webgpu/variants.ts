// The small problems every WebGPU path is checked on (browser tests on SwiftShader, and the
// self-test at the top of the GPU benchmark): each variant of the problem spec, sizes that
// are not multiples of any tile, and key counts several times larger than a K/V tile and
// than the subgroup size (a kernel that silently drops keys past the subgroup or the first
// tile fails these).

import type { AttentionProblem } from '../core/problem.ts';

const base: AttentionProblem = { batch: 2, hq: 4, hk: 4, nq: 45, nk: 77, d: 24, dv: 24, causal: false, dtype: 'fp32' };

export const KERNEL_VARIANTS: { name: string; problem: AttentionProblem }[] = [
  { name: 'plain', problem: base },
  { name: 'causal', problem: { ...base, causal: true } },
  { name: 'causal Nq>Nk', problem: { ...base, nq: 90, nk: 50, causal: true } },
  { name: 'window', problem: { ...base, window: { left: 9, right: 4 } } },
  { name: 'causal window', problem: { ...base, causal: true, window: { left: 16, right: -1 } } },
  // ALiBi, softcap and dv ≠ d in one kernel: each specialisation is a distinct shader, and
  // SwiftShader (CI's WebGPU) compiles one in seconds.
  { name: 'ALiBi + softcap, dv≠d', problem: { ...base, d: 40, dv: 16, alibi: 'standard', softcap: 3 } },
  { name: 'sinks', problem: { ...base, sinks: [0.5, -1, 2, 0] } },
  { name: 'GQA', problem: { ...base, hq: 4, hk: 2 } },
  { name: 'MQA', problem: { ...base, hq: 4, hk: 1 } },
  { name: 'odd head dims', problem: { ...base, d: 21, dv: 13 } }, // the scalar (non-vec4) loads
  { name: 'many K/V tiles', problem: { ...base, batch: 1, hq: 2, hk: 2, nq: 33, nk: 300 } },
  { name: 'decode Nq=1', problem: { ...base, nq: 1, nk: 333 } },
];

/**
 * Problems whose batch and head boundaries fall on 256-byte offsets in Q, K, V and O (f32 and
 * f16), for the batch- and head-window checks: run with one batch (or one key head's query
 * heads) per binding, each is several dispatches over slices of the same buffers, with GQA,
 * masks, ALiBi and sinks indexed per window. Their head dims and score modifiers are those of
 * KERNEL_VARIANTS, so on one device they reuse its compiled kernels.
 */
export const WINDOW_VARIANTS: { name: string; problem: AttentionProblem }[] = [
  { name: 'windows: GQA, causal', problem: { ...base, batch: 3, hq: 4, hk: 2, nq: 64, nk: 96, causal: true } },
  {
    name: 'windows: ALiBi, softcap, sinks, dv≠d',
    problem: { ...base, batch: 3, hq: 2, hk: 2, nq: 64, nk: 64, d: 40, dv: 16, alibi: 'standard', softcap: 3, sinks: [1, -0.5] },
  },
  // One query row: a batch of LSE is 64 bytes, so each window's LSE binding starts below it (lse0).
  { name: 'windows: Nq=1, GQA, LSE off the alignment', problem: { ...base, batch: 3, hq: 16, hk: 1, nq: 1, nk: 320 } },
];

/**
 * Flash-decoding problems that the group kernel (decode-group-kernel.ts) takes: a few query
 * rows per key head (GQA groups of 2 to 8), key counts that are not multiples of a step, head
 * dims up to 256, and every score modifier the decode path supports.
 */
export const DECODE_VARIANTS: { name: string; problem: AttentionProblem }[] = [
  { name: 'decode: d=128', problem: { batch: 2, hq: 4, hk: 4, nq: 1, nk: 777, d: 128, dv: 128, causal: false, dtype: 'fp32' } },
  {
    name: 'decode: GQA 4:1, ALiBi, sinks',
    problem: {
      batch: 2,
      hq: 8,
      hk: 2,
      nq: 1,
      nk: 1000,
      d: 64,
      dv: 64,
      causal: false,
      alibi: 'standard',
      sinks: [0.5, -1, 2, 0, 1, 3, -2, 0.25],
      dtype: 'fp32',
    },
  },
  {
    name: 'decode: GQA 8:1, softcap, d=128',
    problem: { batch: 1, hq: 16, hk: 2, nq: 1, nk: 2049, d: 128, dv: 128, causal: false, softcap: 5, dtype: 'fp32' },
  },
  {
    name: 'decode: Nq=2, GQA 2:1, causal window, dv≠d',
    problem: { batch: 2, hq: 4, hk: 2, nq: 2, nk: 500, d: 32, dv: 48, causal: true, window: { left: 100, right: -1 }, dtype: 'fp32' },
  },
  { name: 'decode: 5 keys, MQA', problem: { batch: 1, hq: 2, hk: 1, nq: 1, nk: 5, d: 96, dv: 32, causal: false, dtype: 'fp32' } },
  {
    name: 'decode: d=36 (4-column loads)',
    problem: { batch: 1, hq: 3, hk: 3, nq: 1, nk: 301, d: 36, dv: 36, causal: false, dtype: 'fp32' },
  },
  { name: 'decode: d=256', problem: { batch: 1, hq: 2, hk: 2, nq: 1, nk: 300, d: 256, dv: 256, causal: false, dtype: 'fp32' } },
];
