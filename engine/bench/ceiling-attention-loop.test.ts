import { describe, expect, it } from 'vitest';
import { attentionLoopBytes, attentionLoopKernel, attentionLoopSet } from './ceiling-attention-loop.ts';
import { storageCopyGridKernel } from './ceiling-kernels.ts';

const base = { subgroupSize: 32, d: 64, bn: 32, softmax: true, blocks: 3, workgroups: 5 } as const;
const loop = (w: string) => w.slice(w.indexOf('for (var t'), w.lastIndexOf('let base'));

describe('the forward loop without HBM', () => {
  it('per block: (d/16)·(BN/16)·(R/16) Q·Kᵀ MMAs, (d/16)·(R/16) P·V MMAs per 16 keys, one K or V load per R/16 MMAs; work 4·R·BN·d', () => {
    for (const rows of [16, 32] as const) {
      const k = attentionLoopKernel({ ...base, subgroups: 4, rows, barriers: 'workgroup' });
      const body = loop(k.wgsl);
      const rb = rows / 16;
      // Q·Kᵀ unrolled over d/16 × BN/16; P·V written once inside the run-time loop over BN/16 key steps.
      expect(body.match(/subgroupMatrixMultiplyAccumulate\(/g)?.length).toBe(4 * 2 * rb + 4 * rb);
      expect(body.match(/col_major>\(&ks/g)?.length).toBe(4 * 2);
      // V is loaded once per 16 keys inside the run-time key loop: d/16 loads there.
      expect(body.match(/row_major>\(&vs/g)?.length).toBe(4);
      expect(body.match(/row_major>\(&ps/g)?.length).toBe(rb);
      expect(body.match(/exp2\(/g)?.length).toBe((32 * rows) / 32);
      expect(k.work).toBe(4 * rows * 32 * 64 * 3 * 4 * 5);
    }
  });

  it('has two workgroup barriers per block or none, and no exp2 without the softmax', () => {
    const opts = { ...base, subgroups: 8, rows: 16 as const };
    expect(loop(attentionLoopKernel({ ...opts, barriers: 'workgroup' }).wgsl).match(/workgroupBarrier\(\)/g)?.length).toBe(2);
    expect(loop(attentionLoopKernel({ ...opts, barriers: 'none' }).wgsl)).not.toContain('workgroupBarrier');
    expect(loop(attentionLoopKernel({ ...opts, barriers: 'none', softmax: false }).wgsl)).not.toContain('exp2');
  });

  it('sizes workgroup memory as the forward pads its rows, and every measured schedule fits 48 KiB', () => {
    expect(attentionLoopBytes({ subgroups: 8, rows: 16, bn: 32, d: 128 })).toBe(46080);
    for (const o of attentionLoopSet(32, false)) expect(attentionLoopBytes(o)).toBeLessThanOrEqual(48 * 1024);
  });

  it('the striding copy covers the buffer once: its grid steps by workgroups × threads × loads', () => {
    const k = storageCopyGridKernel(1 << 20, 8, 4);
    expect(k.wgsl).toContain(`base < ${(1 << 20) / 16}u; base += ${8 * 256 * 4}u`);
    expect(k.work).toBe(2 << 20);
  });
});

describe('the loop without the S/P round trip', () => {
  it('keeps every Q·Kᵀ MMA live (accumulators across blocks, stored after the loop) touches no S or P, and keeps one barrier', () => {
    const k = attentionLoopKernel({ ...base, subgroups: 8, rows: 16, barriers: 'workgroup', roundTrip: false });
    const body = loop(k.wgsl);
    expect(body).not.toMatch(/&ss|&ps|exp2/);
    expect(body.match(/workgroupBarrier\(\)/g)?.length).toBe(1);
    expect(body.match(/subgroupMatrixMultiplyAccumulate\(/g)?.length).toBe(4 * 2 + 4);
    expect(k.wgsl.slice(k.wgsl.lastIndexOf('let base')).match(/subgroupMatrixStore/g)?.length).toBe(4 + 2);
  });
});
