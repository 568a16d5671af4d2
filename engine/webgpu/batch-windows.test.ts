import { describe, expect, it } from 'vitest';
import type { AttentionProblem } from '../problem.ts';
import { bytesPerBatch, lseBinding, planBatchWindows } from './batch-windows.ts';

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

  it('starts every window on an aligned offset of Q, K, V and O; LSE binds from the step below', () => {
    const p: AttentionProblem = { batch: 8, hq: 1, hk: 1, nq: 96, nk: 32, d: 2, dv: 4, causal: false, dtype: 'fp32' };
    // per batch: Q 768 B, K and V 256 B, O 1536 B, LSE 384 B: windows of 1 would put Q at 768·b
    // (aligned), but LSE at 384·b is not — LSE is exempt, so one batch per window
    const w = planBatchWindows(p, 4, 1536, 256);
    expect(w).toHaveLength(8);
    expect(lseBinding(p, { b0: 3, nb: 1 }, 256)).toEqual({ offset: 1024, size: 128 + 384, lse0: 32 });
    // Q at 384 B per batch (d = 1) needs windows of 2 batches to stay aligned
    expect(planBatchWindows({ ...p, d: 1 }, 4, 2 * 1536, 256)).toEqual([0, 2, 4, 6].map((b0) => ({ b0, nb: 2 })));
  });

  it('decoding (one query row) splits by batch however small its LSE rows are', () => {
    const dec: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 1, nk: 131072, d: 128, dv: 128, causal: false, dtype: 'fp32' };
    expect(planBatchWindows(dec, 4, DAWN_BINDING, 256)).toHaveLength(4); // K and V: 1 GiB per batch; LSE: 64 B
    expect(lseBinding(dec, { b0: 1, nb: 1 }, 256)).toEqual({ offset: 0, size: 128, lse0: 16 });
  });

  it('says why where no split exists: one batch too big, or batch boundaries off the alignment', () => {
    const one = planBatchWindows({ ...full, batch: 1, hq: 128, hk: 128, d: 64, dv: 64 }, 4, DAWN_BINDING, 256);
    expect(one).toEqual({ error: expect.stringMatching(/one batch of Q .* needs 2\.00 GiB in one binding; this adapter binds at most 2\.00 GiB/) });
    const odd = planBatchWindows({ batch: 4, hq: 1, hk: 1, nq: 33, nk: 33, d: 3, dv: 3, causal: false, dtype: 'fp32' }, 4, 1000, 256);
    expect(odd).toEqual({ error: expect.stringMatching(/not 256-byte aligned/) });
  });
});
