import { describe, expect, it } from 'vitest';
import { atomicAddKernel, barrierKernel, expKernel, mmaKernel, storageCopyKernel, workgroupRoundTripKernel } from './ceiling-kernels.ts';

const f16 = { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 };
const opts = { subgroups: 8, subgroupSize: 32, workgroups: 10, accumulators: 4, iterations: 7 };

describe('ceiling microbenchmarks', () => {
  it('MMA work is one 2·M·N·K per accumulator per iteration per subgroup, and the loop loads what the source says', () => {
    const loop = (w: string) => w.slice(w.indexOf('for (var it'), w.lastIndexOf('let base'));
    for (const [source, loads] of [
      ['registers', 0],
      ['workgroup-right', 4],
      ['workgroup-right-col', 4],
      ['workgroup-both', 8],
      ['storage-right', 4],
    ] as const) {
      const k = mmaKernel(f16, source, opts);
      expect(k.work).toBe(2 * 16 * 16 * 16 * 4 * 7 * 8 * 10);
      const body = loop(k.wgsl);
      expect(body.match(/subgroupMatrixMultiplyAccumulate\(/g)?.length).toBe(4);
      expect(body.match(/subgroupMatrixLoad</g)?.length ?? 0).toBe(loads);
    }
    expect(mmaKernel(f16, 'storage-right', opts).wgsl).toContain('(&sb,');
    expect(mmaKernel(f16, 'workgroup-right-col', opts).wgsl).toContain('col_major>(&wb');
  });

  it('8-bit shapes read packed words: four components to an i32 (16 tiles of 16×32)', () => {
    const k = mmaKernel({ componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 }, 'registers', opts);
    expect(k.wgsl).toContain('var<workgroup> wa: array<i32, 2048>');
    expect(k.work).toBe(2 * 16 * 16 * 32 * 4 * 7 * 8 * 10);
  });

  it('the other kernels count what their loops do', () => {
    const rt = workgroupRoundTripKernel(3, 5, 4);
    expect(rt.work).toBe(8 * 4 * 5 * 256 * 3);
    expect(rt.wgsl.match(/ = w\[/g)?.length).toBe(4);
    expect(storageCopyKernel(1 << 20, 4).workgroups).toBe((1 << 20) / 16 / 1024);
    const ex = expKernel(2, 9, 8);
    expect(ex.work).toBe(8 * 9 * 256 * 2);
    expect(ex.wgsl.match(/exp2\(/g)?.length).toBe(8);
    expect(barrierKernel(2, 9, true).wgsl.match(/workgroupBarrier\(\)/g)?.length).toBe(2);
    expect(barrierKernel(2, 9, false).wgsl).not.toContain('workgroupBarrier');
    expect(atomicAddKernel(1 << 16, 16, 64).work).toBe(16 * 256 * 64);
  });
});
