// FA3's forward as hopper/ at 0251105a configures it: tiles (tile_size.h), consumer
// warpgroups and their registers (flash_fwd_kernel_sm90.h l. 82-83), P·V from registers or
// shared memory, sO unioned with sV, ping-pong only where UseSchedulerBarrier holds, and the
// O rescale after the P·V wait (before the GEMM at d > 128).
import { describe, expect, it } from 'vitest';
import { fa3Config } from './tiles.ts';
import { fa3DefaultTile } from './forward.ts';
import type { DType } from '../../core/problem.ts';
import { memoryViolations } from '../../hw/memory-check.ts';
import { describeFor, scheduleFor } from '../schedule-registry.ts';
import { smallShape } from '../../hw/small-shape.ts';

const shape = smallShape;

// [d, dv, dtype, causal] → [block_m, block_n], read off tile_size_fwd_sm90.
const TABLE: [number, number, DType, boolean, number, number][] = [
  [64, 64, 'fp16', false, 192, 192],
  [64, 64, 'bf16', true, 192, 128],
  [96, 96, 'fp16', false, 192, 144],
  [96, 96, 'fp16', true, 192, 144],
  [128, 128, 'fp16', false, 128, 176],
  [128, 128, 'bf16', true, 128, 128],
  [192, 128, 'fp16', false, 128, 128],
  [192, 192, 'fp16', false, 128, 112],
  [256, 256, 'fp16', false, 128, 80],
  [64, 64, 'fp8e4m3', false, 192, 160],
  [96, 96, 'fp8e4m3', false, 192, 128],
  [128, 128, 'fp8e4m3', true, 128, 224],
  [192, 128, 'fp8e4m3', false, 128, 160],
  [256, 256, 'fp8e4m3', false, 128, 128],
];

describe('FA3 tiles follow tile_size_fwd_sm90', () => {
  for (const [d, dv, dtype, causal, m, n] of TABLE) {
    it(`d ${d}, dv ${dv}, ${dtype}${causal ? ', causal' : ''}: ${m}×${n} in the stepper, the sheet and one consumer per 64 rows`, () => {
      expect(fa3DefaultTile({ batch: 1, hq: 1, hk: 1, nq: 256, nk: 256, d, dv, dtype, causal })).toEqual({ blockM: m, blockN: n });
      const sheet = describeFor('fa3', 'h100', shape({ d, dv, dtype, causal }));
      expect(sheet.tiles).toEqual({ block_m: m, block_n: n });
      expect(sheet.roles.filter((r) => r.name.startsWith('consumer')).map((r) => r.name)).toEqual(
        Array.from({ length: m / 64 }, (_, i) => `consumer${i}`),
      );
      expect(sheet.does_not_fit).toEqual([]);
    });
  }
  it('a sliding window narrows the 16-bit tiles (64 → 128 wide, 256 → 64 wide)', () => {
    expect(fa3Config({ d: 64, dv: 64, dtype: 'fp16', causal: false, local: true }).blockN).toBe(128);
    expect(fa3Config({ d: 256, dv: 256, dtype: 'fp16', causal: false, local: true }).blockN).toBe(64);
    expect(fa3Config({ d: 128, dv: 128, dtype: 'fp8e4m3', causal: false, local: true, softcap: true }).blockN).toBe(192);
  });
});

describe('FA3 warpgroups, registers, operands and barriers', () => {
  it('three consumers get 160 registers and the producer 32; two get 240 and 24 (the 64K register file either way)', () => {
    const three = describeFor('fa3', 'h100', shape({ d: 64, dv: 64 }));
    expect(three.roles.map((r) => r.registers)).toEqual([32, 160, 160, 160]);
    expect(three.registers.used).toBe(65536);
    expect(describeFor('fa3', 'h100', shape()).roles.map((r) => r.registers)).toEqual([24, 240, 240]);
  });
  it('P goes through sP where MmaPV_is_RS is false (d 96; d 64 without a mask), from registers elsewhere', () => {
    const ss = describeFor('fa3', 'h100', shape({ d: 96, dv: 96 }));
    expect(ss.smem.buffers.filter((b) => b.name === 'sP').map((b) => b.bytes)).toEqual([192 * 144 * 2]);
    expect(describeFor('fa3', 'h100', shape({ d: 64, dv: 64, causal: true })).smem.buffers.some((b) => b.name === 'sP')).toBe(false);
    const sch = scheduleFor('fa3', 'h100', shape({ d: 96, dv: 96, nq: 192, nk: 432 }));
    const writes = sch.timeline.filter((e) => e.op.startsWith('st.shared P'));
    expect(writes.length).toBe(3 * 3); // three blocks of 144 keys, three consumers
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
  });
  it('sO starts where sV starts (the epilogue storage is unioned with it), not over sQ', () => {
    const sheet = describeFor('fa3', 'h100', shape());
    const o = sheet.smem.buffers.find((b) => b.name === 'sO')!;
    const v0 = sheet.smem.buffers.find((b) => b.name === 'sV' && b.stage === 0)!;
    expect(o.offset).toBe(v0.offset);
    expect(o.bytes).toBeLessThanOrEqual(2 * v0.bytes);
  });
  it('ping-pong only where UseSchedulerBarrier holds: 16-bit d ≤ 128, FP8 d ≥ 128', () => {
    const pp = (d: number, dtype: DType) =>
      scheduleFor('fa3', 'h100', shape({ d, dv: d, dtype, nq: 256, nk: 1024 })).timeline.some((e) => e.op.startsWith('wait pingpong'));
    expect(pp(128, 'fp16')).toBe(true);
    expect(pp(64, 'fp16')).toBe(true);
    expect(pp(256, 'fp16')).toBe(false);
    expect(pp(64, 'fp8e4m3')).toBe(false);
    expect(pp(256, 'fp8e4m3')).toBe(true);
  });
  it('O is rescaled after the P·V wait at d 128, before the P·V GEMM is issued at d 256', () => {
    const order = (d: number) => {
      const ops = scheduleFor('fa3', 'h100', shape({ d, dv: d, nq: 128, nk: 640 }), { pingpong: false }).timeline.filter(
        (e) => e.role === 'consumer0' && e.unit !== 'sync' && !e.op.startsWith('wait'),
      );
      const firstRescale = ops.findIndex((e) => e.op === 'rescale O');
      const firstPv = ops.findIndex((e) => e.op.startsWith('gemm1'));
      return firstRescale < firstPv ? 'before' : 'after';
    };
    expect(order(128)).toBe('after');
    expect(order(256)).toBe('before');
  });
});
