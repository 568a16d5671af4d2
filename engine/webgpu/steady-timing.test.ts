import { describe, expect, it } from 'vitest';
import { describeSteady, timeSteady } from './steady-timing.ts';
import type { KernelTime } from './timer.ts';

/**
 * A fake GPU whose clock ramps up with work: a run takes `slow` ms at first, falling linearly (in
 * GPU work done) to `fast` ms once `rampMs` of work has been done. The host clock advances by the
 * GPU time of every submission.
 */
function rampingGpu(slow: number, fast: number, rampMs: number, jitter: number[] = []) {
  let clock = 0;
  let busy = 0;
  const batches: number[] = [];
  let call = 0;
  const execute = async (batch: number): Promise<KernelTime[]> => {
    batches.push(batch);
    let sum = 0;
    for (let i = 0; i < batch; i++) {
      const t = (busy < rampMs ? slow + ((fast - slow) * busy) / rampMs : fast) + (jitter[call % Math.max(1, jitter.length)] ?? 0);
      busy += t;
      sum += t;
    }
    call++;
    clock += sum;
    return [{ name: 'k', ms: sum / batch, clock: 'gpu' }];
  };
  return { execute, now: () => clock, batches };
}

describe('timeSteady', () => {
  it('reports the warmed-up time where one warm-up run and one timed run report the cold one', async () => {
    const cold = rampingGpu(12, 2.4, 150);
    await cold.execute(1);
    const once = (await cold.execute(1))[0].ms;
    expect(once).toBeGreaterThan(11);

    const gpu = rampingGpu(12, 2.4, 150);
    const t = await timeSteady(gpu.execute, { now: gpu.now });
    expect(t.ms).toBeCloseTo(2.4, 9);
    expect(t.warmMs).toBeGreaterThanOrEqual(400);
    expect(t.totals).toHaveLength(5);
  });

  it('warms past warmMs while runs still get faster, and stops at maxWarmMs', async () => {
    // 1.2 s of GPU work before the clock is up: a 400 ms warm-up alone would time the slow clock.
    const gpu = rampingGpu(2, 0.5, 1200);
    const t = await timeSteady(gpu.execute, { now: gpu.now });
    expect(t.ms).toBeCloseTo(0.5, 9);
    expect(t.warmMs).toBeGreaterThan(1200);
    expect(t.warmMs).toBeLessThan(1500);

    // Runs 10% faster every 100 ms of host time, for ever: the cap ends the warm-up.
    let clock = 0;
    const falling = async (batch: number): Promise<KernelTime[]> => {
      const ms = 2 * 0.9 ** Math.floor(clock / 100);
      clock += ms * batch;
      return [{ name: 'k', ms, clock: 'gpu' }];
    };
    const u = await timeSteady(falling, { now: () => clock, maxWarmMs: 800 });
    expect(u.warmMs).toBeGreaterThanOrEqual(800);
    expect(u.warmMs).toBeLessThan(900);
  });

  it('runs short kernels back to back up to the batch target and reports the median repetition', async () => {
    const gpu = rampingGpu(0.5, 0.5, 0, [0, 0.3, -0.1, 0.2, 0.1]);
    const t = await timeSteady(gpu.execute, { now: gpu.now, reps: 5, batchMs: 20, maxBatch: 64 });
    // 20 ms of 0.4–0.8 ms runs: the batch follows the last warm-up run's time.
    expect(t.batch).toBeGreaterThan(20);
    expect(t.batch).toBeLessThanOrEqual(64);
    expect(gpu.batches.slice(-5).every((b) => b === t.batch)).toBe(true);
    const sorted = [...t.totals].sort((a, b) => a - b);
    expect(t.ms).toBe(sorted[2]);
    expect(describeSteady(t, 'gpu')).toMatch(/^GPU timestamps, median of 5 × \d+ runs back to back after \d+ ms of warm-up$/);
  });

  it('keeps one run per submission when asked, and skips the warm-up when it is zero', async () => {
    const gpu = rampingGpu(1, 1, 0);
    const t = await timeSteady(gpu.execute, { now: gpu.now, singleSubmit: true, reps: 3 });
    expect(t.batch).toBe(1);
    expect(gpu.batches.every((b) => b === 1)).toBe(true);

    const bare = rampingGpu(7, 7, 0);
    const u = await timeSteady(bare.execute, { now: bare.now, warmMs: 0, minWarmRuns: 0, reps: 1 });
    expect(bare.batches).toEqual([1]);
    expect(u.warmRuns).toBe(0);
    expect(u.ms).toBe(7);
    expect(describeSteady(u, 'wall')).toBe('wall clock, median of 1 run after 0 ms of warm-up');
  });
});
