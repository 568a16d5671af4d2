import { afterEach, describe, expect, it, vi } from 'vitest';
import { fromJsonLine } from '../../trace/jsonl.ts';
import type { MemoryEvent, TimelineEvent } from '../events.ts';
import { hardwareTraceLines, isHardwareAlgorithm } from '../trace-lines.ts';
import { describeCommand } from './describe.ts';
import { parseHwOptions } from './options.ts';
import { simulateCommand } from './simulate.ts';

function capture(): { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((s: unknown) => void out.push(String(s)));
  vi.spyOn(console, 'error').mockImplementation((s: unknown) => void err.push(String(s)));
  return { out, err };
}

afterEach(() => vi.restoreAllMocks());

describe('describe / simulate commands', () => {
  it('describe prints the FA4 sheet with SMEM offsets and TMEM columns', async () => {
    const c = capture();
    const code = await describeCommand.run(['--algo', 'fa4', '--gpu', 'b200', '--d', '192', '--dv', '128', '--dtype', 'bf16']);
    expect(code).toBe(0);
    const sheet = JSON.parse(c.out.join('\n'));
    expect(sheet.fits).toBe(true);
    expect(sheet.tmem.used_columns).toBe(512);
    expect(sheet.tiles).toEqual({ block_m: 128, block_n: 128 });
    expect(sheet.smem.buffers.find((b: { name: string; stage: number }) => b.name === 'sKV' && b.stage === 1).bytes).toBe(32768);
  });

  it('describe exits 1 and lists need and capacity when it does not fit', async () => {
    const c = capture();
    const code = await describeCommand.run(['--algo', 'fa3', '--gpu', 'h100', '--d', '256', '--stages', '4']);
    expect(code).toBe(1);
    const sheet = JSON.parse(c.out.join('\n'));
    expect(sheet.fits).toBe(false);
    expect(sheet.does_not_fit[0]).toMatch(/^smem: needs \d+ bytes per CTA/);
  });

  it('simulate prints time, TFLOP/s (4·B·H·N²·d) and unit utilization', async () => {
    const c = capture();
    const code = await simulateCommand.run(['--algo', 'cute-fa2', '--gpu', 'a100', '--b', '1', '--hq', '4', '--nq', '2048', '--d', '64', '--causal']);
    expect(code).toBe(0);
    const r = JSON.parse(c.out.join('\n'));
    expect(r.flops).toBe((4 * 1 * 4 * 2048 * 2048 * 64) / 2);
    expect(r.tflops).toBeCloseTo(r.flops / (r.time_us * 1e-6) / 1e12, 2);
    for (const u of ['tensor', 'mufu', 'fma', 'cpasync', 'sm']) expect(r.utilization[u]).toBeGreaterThan(0);
    for (const v of Object.values(r.utilization) as number[]) expect(v).toBeLessThanOrEqual(1);
  });

  it('rejects bad input with a message naming the flag', () => {
    expect(() => parseHwOptions(['--algo', 'fa3'], { nq: 64, d: 64 })).toThrow(/--gpu is required/);
    expect(() => parseHwOptions(['--algo', 'fa3', '--gpu', 'h100', '--nq', '0'], { nq: 64, d: 64 })).toThrow(/--nq must be a positive integer/);
    expect(() => parseHwOptions(['--algo', 'fa3', '--gpu', 'h100', '--dtype', 'fp8'], { nq: 64, d: 64 })).toThrow(/--dtype/);
    expect(() => parseHwOptions(['--algo', 'fa3', '--gpu', 'h100', '--hq', '3', '--hk', '2'], { nq: 64, d: 64 })).toThrow(/hk/);
    expect(() => parseHwOptions(['--algo', 'fa3', '--gpu', 'h100', '--frobnicate'], { nq: 64, d: 64 })).toThrow(/unknown option '--frobnicate'/);
  });
});

describe('hardware trace lines', () => {
  it('emit a header, timeline and memory events as JSONL', () => {
    const lines = hardwareTraceLines(['--algo', 'fa3', '--gpu', 'h100', '--nq', '128', '--nk', '384']);
    const rows = lines.map((l) => fromJsonLine<{ type: string }>(l));
    expect(rows[0].type).toBe('hw.header');
    const tl = rows.filter((r) => r.type === 'hw.timeline') as unknown as TimelineEvent[];
    const mem = rows.filter((r) => r.type === 'hw.memory') as unknown as MemoryEvent[];
    expect(tl.some((e) => e.op === 'tma K2' && e.role === 'producer')).toBe(true);
    expect(mem.some((m) => m.action === 'fill' && m.buffer === 'sK' && m.tile === 'K2' && m.ready! > m.t)).toBe(true);
    expect(mem.some((m) => m.action === 'release' && m.buffer === 'sV' && m.tile === 'V0')).toBe(true);
    expect(isHardwareAlgorithm('fa4')).toBe(true);
    expect(isHardwareAlgorithm('fa2')).toBe(false);
  });
});
