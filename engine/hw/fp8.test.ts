// FA3's FP8 forward in the hardware model: FP8 wgmma at twice the 16-bit rate, 1-byte
// operands, the 1-byte tile table, V transposed in shared memory by the producer, O in bf16,
// and refusals where no FP8 path exists.

import { describe, expect, it } from 'vitest';
import { memoryViolations } from './memory-check.ts';
import type { ProblemShape } from './model.ts';
import { describeFor, scheduleFor, simulateFor, smScheduleFor } from '../algorithms/schedule-registry.ts';
import { DebuggerSession } from '../debugger/session.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { smallShape } from './small-shape.ts';

const shape = (o: Partial<ProblemShape> = {}): ProblemShape => smallShape({ dtype: 'fp8e4m3', ...o });

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
    expect(describeFor('fa4', 'b200', shape({ d: 256, dv: 256 })).does_not_fit.join()).toMatch(/not in the d = dv = 256 kernel/);
    expect(describeFor('fmha-v2', 'rtx4060', shape({ d: 64, dv: 64 })).does_not_fit.join()).toMatch(/fmha_v2 has no FP8 path/);
    expect(describeFor('fa3', 'h100', shape({ dtype: 'fp16' })).does_not_fit).toEqual([]);
  });
});

describe("FA4's FP8 forward (flash_fwd_sm100.py's 8-bit path)", () => {
  it('8-bit Q/K/V tiles, a bf16 O, P four to a TMEM column, FP8 tuning, and the FP8 MMA rate', () => {
    const fp8 = shape({ hq: 16, hk: 16, nq: 4096, nk: 4096 });
    const sch = scheduleFor('fa4', 'b200', fp8);
    const bufs = sch.resources.smem.buffers;
    // 2-CTA mode over 512 rows: each CTA holds half of a 128 × 128 FP8 K/V tile (8 KB); sO in bf16 (interface.py@0251105a l. 700).
    expect(bufs.find((b) => b.name === 'sKV')?.bytes).toBe((128 * 128) / 2);
    expect(bufs.find((b) => b.name === 'sQ')?.bytes).toBe(128 * 128);
    expect(bufs.find((b) => b.name === 'sO')?.bytes).toBe(128 * 128 * 2);
    // (224 KiB − 2·16 KB sQ − 2·32 KB sO) / 8 KB per stage = 16 stages (flash_fwd_sm100.py@0251105a l. 392-405).
    expect(sch.resources.kv_stage).toBe(16);
    // tP_width_ratio 32 / 8 = 4 (l. 1152): P_i takes 32 of S_i's 128 columns, from its middle.
    expect(sch.resources.tmem?.buffers.find((b) => b.name === 'P0')).toMatchObject({ column: 64, columns: 32 });
    // _FP8_TUNING_CONFIG (l. 112-113): 2-CTA, not causal, d 128 → softmax 160, correction 72 registers.
    expect(sch.resources.upstream?.config.registers).toMatch(/^160\/72\//);
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
    const bf16 = simulateFor('fa4', 'b200', { ...fp8, dtype: 'bf16' });
    const f8 = simulateFor('fa4', 'b200', fp8);
    expect(f8.peak_tflops).toBe(2 * bf16.peak_tflops);
    expect(f8.time_us).toBeLessThan(bf16.time_us);
  });
});
