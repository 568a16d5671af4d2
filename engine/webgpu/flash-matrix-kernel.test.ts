import { describe, expect, it } from 'vitest';
import { chooseMatrixTile, matrixKernelWgsl, matrixLayout } from './flash-matrix-kernel.ts';

const plain = { masked: false, softcap: false, alibi: false };

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

describe('subgroup-matrix kernel tiles', () => {
  it('picks the measured-fastest tile, 8 subgroups × 32 keys of 16×16×16 matrices, within 48 KiB at d = 64 and 128', () => {
    for (const d of [64, 128]) {
      const c = chooseMatrixTile(h200, d, d, plain);
      expect([c.m, c.n, c.k, c.warps, c.bn]).toEqual([16, 16, 16, 8, 32]);
      expect(matrixLayout(c).bytes).toBeLessThanOrEqual(49152);
    }
  });

  it('falls back to fewer subgroups where the tile does not fit, and one subgroup without subgroup_id', () => {
    const wide = chooseMatrixTile(h200, 256, 256, plain);
    expect(wide.warps).toBeLessThan(8);
    expect(matrixLayout(wide).bytes).toBeLessThanOrEqual(49152);
    const c = chooseMatrixTile({ ...h200, wgslFeatures: [] }, 64, 64, plain);
    expect(c.warps).toBe(1);
    expect(matrixKernelWgsl(c)).not.toContain('subgroup_id');
  });

  it('holds one left matrix per 16 of d and one result matrix per 16 of dv in registers, ragged dims rounded up', () => {
    const w = matrixKernelWgsl(chooseMatrixTile(h200, 128, 64, plain));
    expect(w.match(/let q\d+ = subgroupMatrixLoad/g)).toHaveLength(8);
    expect(w.match(/var o\d+ = subgroup_matrix_result/g)).toHaveLength(4);
    const r = matrixKernelWgsl(chooseMatrixTile(h200, 21, 13, plain));
    expect(r.match(/let q\d+ = subgroupMatrixLoad/g)).toHaveLength(2);
    expect(r.match(/var o\d+ = subgroup_matrix_result/g)).toHaveLength(1);
    // 21 and 13 are not multiples of 4: element-wise staging reads, no vec4 bindings
    expect(r).not.toContain('array<vec4<f16>>');
  });

  it('reads every matrix from workgroup memory, never straight from a storage buffer', () => {
    const w = matrixKernelWgsl(chooseMatrixTile(h200, 64, 64, plain));
    for (const m of w.matchAll(/subgroupMatrixLoad<[^(]*\(&(\w+)/g)) expect(['ks', 'vs', 'ps', 'ss']).toContain(m[1]);
  });

  it('leaves out the code of modifiers the problem does not use', () => {
    const c = chooseMatrixTile(h200, 64, 64, plain);
    const p = matrixKernelWgsl(c);
    const all = matrixKernelWgsl({ ...c, score: { masked: true, softcap: true, alibi: true } });
    expect(p).not.toContain('tanh(');
    expect(all).toContain('tanh(');
    expect(p).not.toContain('key_visible(i, j)) { return NEG_INF; }');
    expect(all).toContain('!key_visible(i, j)');
  });
});
