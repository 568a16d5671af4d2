// FA3's FP8 forward in the hardware model: FP8 wgmma at twice the 16-bit rate, 1-byte
// operands, the 1-byte tile table, V transposed in shared memory by the producer, O in bf16,
// and refusals where no FP8 path exists.

import { describe, expect, it } from 'vitest';
import { memoryViolations } from './memory-check.ts';
import type { ProblemShape } from './model.ts';
import { describeFor, scheduleFor, simulateFor, smScheduleFor } from '../algorithms/schedule-registry.ts';
import { DebuggerSession } from '../debugger/session.ts';
import type { AttentionProblem } from '../core/problem.ts';

const shape = (o: Partial<ProblemShape> = {}): ProblemShape => ({
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 512,
  nk: 512,
  d: 128,
  dv: 128,
  dtype: 'fp8e4m3',
  causal: false,
  ...o,
});

describe('FA3 FP8 on the H100', () => {
  it('holds sQ, the K/V rings and the TMA landing ring sVt of 128×224 one-byte tiles (flash_fwd_launch_template.h: FP8_TransposeV)', () => {
    const sheet = describeFor('fa3', 'h100', shape());
    expect(sheet.does_not_fit).toEqual([]);
    expect(sheet.tiles).toEqual({ block_m: 128, block_n: 224 });
    const vt = sheet.smem.buffers.filter((b) => b.name === 'sVt');
    expect(vt.map((b) => b.bytes)).toEqual([224 * 128, 224 * 128]);
    expect(sheet.notes.join(' ')).toMatch(/V lands by TMA in sVt and the producer warpgroup transposes it into sV/);
  });
  it('the producer transposes every V block before the consumers read it; no two live tiles overlap', () => {
    const sch = scheduleFor('fa3', 'h100', shape());
    const tr = sch.timeline.filter((e) => e.op.startsWith('transpose V'));
    expect(tr.length).toBe(3); // 512 keys in blocks of 224
    for (const t of tr) {
      const j = t.op.match(/V(\d+)/)![1];
      const pv = sch.timeline.filter((e) => e.op === `gemm1 O+=P·V${j}`);
      expect(pv.length).toBe(2); // one per consumer warpgroup
      for (const g of pv) expect(g.start).toBeGreaterThanOrEqual(t.end);
    }
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
  });
  it('runs faster than the 16-bit kernel at d = 128 and d = 256, within the paper range (≈ 1.2 PFLOP/s at most)', () => {
    const big = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096 };
    for (const d of [128, 256]) {
      const f8 = simulateFor('fa3', 'h100', shape({ ...big, d, dv: d }));
      const f16 = simulateFor('fa3', 'h100', shape({ ...big, d, dv: d, dtype: 'fp16' }));
      expect(f8.time_us).toBeLessThan(0.8 * f16.time_us);
      expect(f8.tflops).toBeLessThan(1400);
    }
  });
});

describe('the numeric FP8 trace on the FP8 schedule', () => {
  it('every step of the debugger trace lands on an op of the same tile (none approximate)', async () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 672, d: 128, dv: 128, causal: false, dtype: 'fp8e4m3' };
    const session = new DebuggerSession();
    await session.load({ algorithm: 'fa3', problem: p, seed: 3, distribution: 'normal', blocks: {} });
    const events = session.events();
    const sm = smScheduleFor({ algorithm: 'fa3', gpu: 'h100', problem: p, features: {}, step: 0 }, events);
    expect(events.length).toBeGreaterThan(50);
    expect(sm.view.map.stepApprox.every((a) => a === 0)).toBe(true);
    expect(sm.timeline.filter((t) => t.op.startsWith('transpose V')).length).toBe(3);
  });
});

describe('FP8 refusals in the hardware model', () => {
  it('names the kernel or the chip', () => {
    expect(describeFor('fa4', 'b200', shape()).does_not_fit.join()).toMatch(/no FP8 path for FA4/);
    expect(describeFor('fmha-v2', 'rtx4060', shape({ d: 64, dv: 64 })).does_not_fit.join()).toMatch(/fmha_v2 has no FP8 path/);
    expect(describeFor('fa3', 'h100', shape({ dtype: 'fp16' })).does_not_fit).toEqual([]);
  });
});
