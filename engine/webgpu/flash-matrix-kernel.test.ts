import { describe, expect, it } from 'vitest';
import { chooseMatrixTile, matrixKernelWgsl, matrixLayout, registerKernelTakes } from './flash-matrix-kernel.ts';

// The H200's limits and subgroup-matrix configs as Dawn reports them (BENCHMARKS.md).
const h200 = {
  limits: { maxInvocations: 1024, maxWorkgroupStorage: 49152 },
  matrixConfigs: [
    { M: 16, N: 16, K: 16, componentType: 'f16', resultComponentType: 'f32' },
    { M: 16, N: 8, K: 16, componentType: 'f16', resultComponentType: 'f32' },
    { M: 16, N: 8, K: 8, componentType: 'f16', resultComponentType: 'f32' },
  ],
  subgroupMinSize: 32,
  subgroupMaxSize: 32,
  wgslFeatures: ['subgroup_id', 'subgroup_uniformity'],
} as unknown as Parameters<typeof chooseMatrixTile>[0];

describe('subgroup-matrix register kernel tiles', () => {
  it('picks the measured-fastest tile that fits 48 KiB: 8×32 at d=64, 4×64 at d=128', () => {
    const a = chooseMatrixTile(h200, 64, 64);
    expect([a.m, a.n, a.k, a.warps, a.bn]).toEqual([16, 16, 16, 8, 32]);
    const b = chooseMatrixTile(h200, 128, 128);
    expect([b.warps, b.bn]).toEqual([4, 64]);
    for (const c of [a, b]) expect(matrixLayout(c).bytes).toBeLessThanOrEqual(49152);
  });

  it('one subgroup per workgroup without subgroup_id', () => {
    const c = chooseMatrixTile({ ...h200, wgslFeatures: [] }, 64, 64);
    expect(c.warps).toBe(1);
    expect(matrixKernelWgsl(c)).not.toContain('subgroup_id');
  });

  it('takes only shapes whose matrix loads stay inside the buffers and whole Q tiles', () => {
    const c = chooseMatrixTile(h200, 64, 64); // BM = 128, BN = 32
    expect(registerKernelTakes(c, 4096, 4096)).toBe(true);
    expect(registerKernelTakes(c, 4096, 100)).toBe(false); // last K/V load past the end
    expect(registerKernelTakes(c, 100, 4096)).toBe(false);
    expect(registerKernelTakes(chooseMatrixTile(h200, 40, 40), 4096, 4096)).toBe(false); // d not a multiple of 16
  });

  it('holds one left matrix per 16 of d and one result matrix per 16 of dv in registers', () => {
    const w = matrixKernelWgsl(chooseMatrixTile(h200, 128, 64));
    expect(w.match(/let q\d+ = subgroupMatrixLoad/g)).toHaveLength(8);
    expect(w.match(/var o\d+ = subgroup_matrix_result/g)).toHaveLength(4);
  });
});
