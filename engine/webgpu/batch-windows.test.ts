import { describe, expect, it } from 'vitest';
import type { AttentionProblem } from '../problem.ts';
import { bytesPerBatch, planBatchWindows } from './batch-windows.ts';

const DAWN_BINDING = 2 ** 31 - 4; // Dawn's Vulkan maxStorageBufferBindingSize
const full: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 65536, nk: 65536, d: 128, dv: 128, causal: false, dtype: 'fp32' };

describe('batch windows', () => {
  it('binds every tensor whole when each fits one binding', () => {
    expect(planBatchWindows({ ...full, d: 64, dv: 64 }, 4, DAWN_BINDING, 256)).toEqual([{ b0: 0, nb: 4 }]);
    expect(planBatchWindows({ ...full, d: 64, dv: 64 }, 2, DAWN_BINDING, 256)).toEqual([{ b0: 0, nb: 4 }]);
  });

  it('splits B=4 H=16 N=65536 d=128 in f32 (2 GiB per tensor, 4 bytes over the limit) into 3 + 1 batches', () => {
    expect(bytesPerBatch(full, 4).Q).toBe(512 * 1024 ** 2);
    expect(planBatchWindows(full, 4, DAWN_BINDING, 256)).toEqual([
      { b0: 0, nb: 3 },
      { b0: 3, nb: 1 },
    ]);
    // f16 inputs: Q, K and V take 1 GiB, but O is f32 (2 GiB) and decides
    expect(planBatchWindows(full, 2, DAWN_BINDING, 256)).toHaveLength(2);
    // d = 256: 1 GiB per batch, one batch per window
    expect(planBatchWindows({ ...full, d: 256, dv: 256 }, 4, DAWN_BINDING, 256)).toHaveLength(4);
  });

  it('keeps every window start on an aligned offset of every tensor', () => {
    const p: AttentionProblem = { batch: 8, hq: 1, hk: 1, nq: 96, nk: 96, d: 2, dv: 2, causal: false, dtype: 'fp32' };
    // 768 B of Q, K, V and O and 384 B of LSE per batch: LSE needs windows of 2 batches to stay 256-aligned
    const w = planBatchWindows(p, 4, 3 * 768, 256);
    expect(w).toEqual([
      { b0: 0, nb: 2 },
      { b0: 2, nb: 2 },
      { b0: 4, nb: 2 },
      { b0: 6, nb: 2 },
    ]);
  });

  it('says why where no split exists: one batch too big, or batch boundaries off the alignment', () => {
    const one = planBatchWindows({ ...full, batch: 1, hq: 128, hk: 128, d: 64, dv: 64 }, 4, DAWN_BINDING, 256);
    expect(one).toEqual({ error: expect.stringMatching(/one batch of Q .* needs 2\.00 GiB in one binding; this adapter binds at most 2\.00 GiB/) });
    const odd = planBatchWindows({ batch: 4, hq: 1, hk: 1, nq: 33, nk: 33, d: 3, dv: 3, causal: false, dtype: 'fp32' }, 4, 1000, 256);
    expect(odd).toEqual({ error: expect.stringMatching(/not 256-byte aligned/) });
  });
});
