import { describe, expect, it } from 'vitest';
import type { AttentionProblem } from '../core/problem.ts';
import { bytesPerBatch, lseBinding, planWindows, windowRange } from './binding-windows.ts';

const DAWN_BINDING = 2 ** 31 - 4; // Dawn's Vulkan maxStorageBufferBindingSize
const full: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 65536, nk: 65536, d: 128, dv: 128, causal: false, dtype: 'fp32' };
const batches = (...runs: [number, number][]) => runs.map(([b0, nb]) => ({ b0, nb, h0: 0, nh: 16 }));

describe('windows', () => {
  it('binds every tensor whole when each fits one binding', () => {
    expect(planWindows({ ...full, d: 64, dv: 64 }, 4, DAWN_BINDING, 256)).toEqual(batches([0, 4]));
    expect(planWindows({ ...full, d: 64, dv: 64 }, 2, DAWN_BINDING, 256)).toEqual(batches([0, 4]));
  });

  it('splits B=4 H=16 N=65536 d=128 in f32 (2 GiB per tensor, 4 bytes over the limit) into 3 + 1 batches', () => {
    expect(bytesPerBatch(full, 4).Q).toBe(512 * 1024 ** 2);
    expect(planWindows(full, 4, DAWN_BINDING, 256)).toEqual(batches([0, 3], [3, 1]));
    // f16 inputs: Q, K and V take 1 GiB, but O is f32 (2 GiB) and decides
    expect(planWindows(full, 2, DAWN_BINDING, 256)).toHaveLength(2);
    // d = 256: 1 GiB per batch, one batch per window
    expect(planWindows({ ...full, d: 256, dv: 256 }, 4, DAWN_BINDING, 256)).toHaveLength(4);
  });

  it('starts every window on an aligned offset of Q, K, V and O; LSE binds from the step below', () => {
    const p: AttentionProblem = { batch: 8, hq: 1, hk: 1, nq: 96, nk: 32, d: 2, dv: 4, causal: false, dtype: 'fp32' };
    // per batch: Q 768 B, K and V 256 and 512 B, O 1536 B, LSE 384 B: one batch per window keeps
    // Q, K, V and O aligned; LSE at 384·b is not, and is exempt
    expect(planWindows(p, 4, 1536, 256)).toHaveLength(8);
    expect(lseBinding(p, { b0: 3, nb: 1, h0: 0, nh: 1 }, 256)).toEqual({ offset: 1024, size: 128 + 384, lse0: 32 });
    // Q at 384 B per batch (d = 1) needs windows of 2 batches to stay aligned
    expect(planWindows({ ...p, d: 1 }, 4, 2 * 1536, 256)).toEqual([0, 2, 4, 6].map((b0) => ({ b0, nb: 2, h0: 0, nh: 1 })));
  });

  it('decoding (one query row) splits by batch however small its LSE rows are', () => {
    const dec: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 1, nk: 131072, d: 128, dv: 128, causal: false, dtype: 'fp32' };
    expect(planWindows(dec, 4, DAWN_BINDING, 256)).toHaveLength(4); // K and V: 1 GiB per batch; LSE: 64 B
    expect(lseBinding(dec, { b0: 1, nb: 1, h0: 0, nh: 16 }, 256)).toEqual({ offset: 0, size: 128, lse0: 16 });
  });

  it('splits the heads of a batch that does not fit one binding, in whole key-head groups', () => {
    // B = 1, H = 128, N = 65536, d = 64 in f32: Q is 2 GiB in one batch
    const one: AttentionProblem = { ...full, batch: 1, hq: 128, hk: 128, d: 64, dv: 64 };
    expect(planWindows(one, 4, DAWN_BINDING, 256)).toEqual([
      { b0: 0, nb: 1, h0: 0, nh: 127 },
      { b0: 0, nb: 1, h0: 127, nh: 1 },
    ]);
    // GQA, 16 query heads per key head: windows hold whole groups, and K/V slices follow them
    const gqa: AttentionProblem = { ...one, batch: 2, hk: 8 };
    const w = planWindows(gqa, 4, DAWN_BINDING, 256);
    expect(w).toEqual(
      [0, 1].flatMap((b0) => [
        { b0, nb: 1, h0: 0, nh: 112 },
        { b0, nb: 1, h0: 112, nh: 16 },
      ]),
    );
    const second = (w as { b0: number; nb: number; h0: number; nh: number }[])[3];
    expect(windowRange(gqa, 4, second, 'Q').start).toBe((128 + 112) * 65536 * 64 * 4);
    expect(windowRange(gqa, 4, second, 'K')).toEqual({ start: (8 + 7) * 65536 * 64 * 4, bytes: 65536 * 64 * 4 });
  });

  it('says why where no split exists: one key head too big, or rows off the alignment', () => {
    const huge = planWindows({ ...full, batch: 1, hq: 1, hk: 1, nq: 1, nk: 2 ** 23, d: 128, dv: 128 }, 4, DAWN_BINDING, 256);
    expect(huge).toEqual({
      error: expect.stringMatching(
        /one key head's share of K \(1 query head × 8388608 rows\) needs 4\.00 GiB in one binding; this adapter binds at most 2\.00 GiB/,
      ),
    });
    const odd = planWindows({ batch: 4, hq: 1, hk: 1, nq: 33, nk: 33, d: 3, dv: 3, causal: false, dtype: 'fp32' }, 4, 1000, 256);
    expect(odd).toEqual({ error: expect.stringMatching(/no split of the heads starts every binding on a 256-byte step/) });
  });
});
