// The backward's benchmark studies are edits of the shipped kernel's WGSL: each lands where
// it should (and the shipped kernel is untouched), and an unknown study name is refused.

import { describe, expect, it } from 'vitest';
import { bwdmMainWgsl, chooseMatrixBackward, type MatrixBackwardShape } from '../webgpu/backward-matrix-kernel.ts';
import { backwardStudyWgsl, BACKWARD_STUDIES, studyPrefs, type BackwardStudy } from './backward-studies.ts';

const NVIDIA = {
  limits: {
    maxWorkgroupStorage: 49152,
    maxInvocations: 1024,
    maxStorageBinding: 2 ** 31,
    maxBuffer: 2 ** 40,
    maxWorkgroupsPerDim: 65535,
    minStorageOffset: 256,
  },
  matrixConfigs: [{ M: 16, N: 16, K: 16, componentType: 'f16', resultComponentType: 'f32' }],
  subgroupMinSize: 32,
  subgroupMaxSize: 32,
  wgslFeatures: ['subgroup_id', 'subgroup_uniformity'],
};
const shape = (d: number): MatrixBackwardShape => ({ d, dv: d, group: 1, softcap: false, alibi: false });
const shipped = (d: number, overlapAdds?: boolean) => bwdmMainWgsl(chooseMatrixBackward(NVIDIA, shape(d), { overlapAdds }));
const study = (s: BackwardStudy, d = 128, overlapAdds?: boolean) => backwardStudyWgsl(shipped(d, overlapAdds), s);

describe('backward studies', () => {
  it('store-adds writes the same terms with atomicStore; no-bar3 skips the barrier after step B at run time', () => {
    const st = study('store-adds');
    expect(st).toContain('atomicStore(&dqacc[(grow0 + r) * D + col], i32(round(x * rst[par * BM + r].z)));');
    expect(st).not.toContain('atomicAdd(');
    expect(st).toContain('if (pending) { add_dq');
    const nb = study('no-bar3');
    expect(nb).toContain('if (OFF) { workgroupBarrier(); }            // Sᵀ, dPᵀ stripes visible');
    expect(shipped(128)).toContain('    workgroupBarrier();            // Sᵀ, dPᵀ stripes visible');
  });

  it("cut work at run time, keeping the accumulator's binding (a compile-time cut drops it from the layout)", () => {
    for (const s of ['no-atomics', 'no-dq', 'no-f'] as const) {
      for (const overlap of [false, true]) {
        const w = study(s, 64, overlap);
        expect(w).toContain('let OFF = prm.pad0 == 7u;');
        expect(w).toContain('atomicAdd(&dqacc');
        expect(w).toContain('if (pending && OFF)');
      }
    }
    expect(study('no-dq')).toMatch(/if \(blk < \d+u && OFF\) \{/);
    expect(study('no-f')).toContain('for (var kb = 0u; kb < select(0u, BM, OFF); kb += T) {');
    expect(shipped(128)).not.toContain('OFF');
  });

  it('refuses an edit whose anchor the shipped kernel no longer has, and an unknown study name', () => {
    expect(() => backwardStudyWgsl(shipped(128).replace(/atomicAdd/g, 'atomicSub'), 'store-adds')).toThrow(/no longer has/);
    expect(() => studyPrefs({ study: 'no-such' as BackwardStudy })).toThrow(/unknown backward study "no-such"/);
    expect(studyPrefs({ warps: 8 })).toEqual({ warps: 8 });
    const p = studyPrefs({ warps: 8, study: 'no-bar3' });
    expect(p.rewriteMain?.(shipped(128))).toBe(study('no-bar3'));
    expect(BACKWARD_STUDIES).toHaveLength(5);
  });
});
