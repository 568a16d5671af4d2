import { describe, expect, it } from 'vitest';
import { DeadlockError, Kernel, PhaseOverrunError, simulateKernel } from './scheduler.ts';

const role = (k: Kernel, name: string) => k.role({ name, warps: [0], registers: 32, job: name });

describe('discrete-event scheduler', () => {
  it('shares a unit between concurrent ops, or serves them in order when FIFO', () => {
    const shared = new Kernel();
    role(shared, 'a').exec('mufu', 100, 'x');
    role(shared, 'b').exec('mufu', 100, 'y');
    const rs = simulateKernel(shared);
    expect(rs.timeline.map((e) => e.end)).toEqual([200, 200]);
    const fifo = new Kernel();
    fifo.fifoUnits.add('tensor');
    role(fifo, 'a').exec('tensor', 100, 'x');
    role(fifo, 'b').exec('tensor', 100, 'y');
    const rf = simulateKernel(fifo);
    expect(rf.timeline.map((e) => e.end)).toEqual([100, 200]);
    expect(rf.unitBusy.tensor).toBe(200);
  });

  it('interleaves chunked issues of two roles on a FIFO unit', () => {
    const k = new Kernel();
    k.fifoUnits.add('tensor');
    const done = k.counter('done');
    role(k, 'a')
      .issue('tensor', 80, 'gemm a', '', { chunks: 8, arrive: [done] })
      .wait(done, 0);
    role(k, 'b').issue('tensor', 80, 'gemm b', '', { chunks: 8, arrive: [done] });
    const r = simulateKernel(k);
    const gemms = r.timeline.filter((e) => e.unit === 'tensor');
    // Both finish near the end: neither got the tensor core to itself.
    expect(Math.min(...gemms.map((e) => e.end))).toBeGreaterThan(140);
  });

  it('releases a waiter when the barrier phase completes and records what it waited on', () => {
    const k = new Kernel();
    const full = k.mbarrier('full');
    role(k, 'producer').issue('tma', 50, 'load', 'K0', { latency: 100, arrive: [full] });
    role(k, 'consumer').wait(full, 0).exec('tensor', 10, 'use', 'K0');
    const r = simulateKernel(k);
    const load = r.timeline.find((e) => e.op === 'load')!;
    const use = r.timeline.find((e) => e.op === 'use')!;
    expect(load.end).toBe(150);
    expect(use.start).toBe(150);
    expect(use.waitedOn).toContain(load.id);
    const stall = r.timeline.find((e) => e.unit === 'sync')!;
    expect([stall.start, stall.end]).toEqual([0, 150]);
  });

  it('completes a named barrier only when every participant arrived', () => {
    const k = new Kernel();
    const bar = k.named('bar', 2);
    role(k, 'a').exec('fma', 10, 'a').sync(bar).exec('fma', 1, 'after a');
    role(k, 'b').exec('mufu', 90, 'b').sync(bar).exec('mufu', 1, 'after b');
    const r = simulateKernel(k);
    expect(r.timeline.find((e) => e.op === 'after a')!.start).toBe(90);
  });

  it('reports a deadlock with the blocked roles', () => {
    const k = new Kernel();
    const x = k.mbarrier('x');
    const y = k.mbarrier('y');
    role(k, 'a').wait(x, 0).arrive(y);
    role(k, 'b').wait(y, 0).arrive(x);
    expect(() => simulateKernel(k)).toThrow(DeadlockError);
    try {
      simulateKernel(k);
    } catch (e) {
      expect((e as Error).message).toContain('a waits for phase 0 of x');
    }
  });

  it('rejects a wait on a parity the barrier already passed twice', () => {
    const k = new Kernel();
    const b = k.mbarrier('b');
    role(k, 'fast').arrive(b).arrive(b).arrive(b);
    role(k, 'slow').exec('fma', 10, 'late').wait(b, 0);
    expect(() => simulateKernel(k)).toThrow(PhaseOverrunError);
  });

  it('is deterministic', () => {
    const build = () => {
      const k = new Kernel();
      const b = k.mbarrier('b', 2);
      role(k, 'a')
        .issue('tma', 33, 'l1', '', { latency: 7, arrive: [b] })
        .exec('fma', 5, 'f');
      role(k, 'c')
        .issue('tma', 33, 'l2', '', { latency: 7, arrive: [b] })
        .wait(b, 0)
        .exec('mufu', 3, 'm');
      return simulateKernel(k);
    };
    expect(JSON.stringify(build())).toBe(JSON.stringify(build()));
  });
});
