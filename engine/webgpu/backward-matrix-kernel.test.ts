// The subgroup-matrix backward's tile choice and the WGSL it generates. The kernels run only
// where the adapter has f16 subgroup matrices (the GPU benchmark's self-test checks their
// gradients against float64 on every variant); here: what fits where, and the properties of
// the code that the header's reasoning depends on.

import { describe, expect, it } from 'vitest';
import {
  bwdmMainWgsl,
  bwdmRowsWgsl,
  chooseMatrixBackward,
  FX_BITS,
  matrixBackwardLayout,
  squareMatrixSide,
  type MatrixBackwardShape,
} from './backward-matrix-kernel.ts';

const NVIDIA = {
  limits: {
    maxWorkgroupStorage: 49152,
    maxInvocations: 1024,
    maxStorageBinding: 2 ** 31,
    maxBuffer: 2 ** 40,
    maxWorkgroupsPerDim: 65535,
    minStorageOffset: 256,
  },
  matrixConfigs: [
    { M: 16, N: 16, K: 16, componentType: 'f16', resultComponentType: 'f32' },
    { M: 16, N: 8, K: 16, componentType: 'f16', resultComponentType: 'f32' },
  ],
  subgroupMinSize: 32,
  subgroupMaxSize: 32,
  wgslFeatures: ['subgroup_id', 'subgroup_uniformity'],
};
const shape = (d: number, dv = d, extra: Partial<MatrixBackwardShape> = {}): MatrixBackwardShape => ({
  d,
  dv,
  group: 1,
  softcap: false,
  alibi: false,
  ...extra,
});

describe('chooseMatrixBackward', () => {
  it('takes 8 subgroups × 16 keys and 16-row query tiles at d = 64 and 128, inside 48 KiB', () => {
    for (const d of [64, 128]) {
      const c = chooseMatrixBackward(NVIDIA, shape(d));
      expect([c.t, c.warps, c.bm, c.stagger]).toEqual([16, 8, 16, true]);
      // dQ in a buffer of its own, added during the next tile's MMAs: measured faster at d = 64 only
      expect(c.overlapAdds).toBe(d === 64);
      const L = matrixBackwardLayout(c);
      expect(L.bn).toBe(128);
      expect(L.bytes).toBeLessThanOrEqual(49152);
    }
  });

  it('falls back to fewer subgroups where the memory does not hold 8, and to one without subgroup_id where its dQ blocks fit', () => {
    const small = chooseMatrixBackward({ ...NVIDIA, limits: { ...NVIDIA.limits, maxWorkgroupStorage: 32768 } }, shape(128));
    expect([small.warps, small.bm]).toEqual([4, 16]);
    expect(matrixBackwardLayout(small).bytes).toBeLessThanOrEqual(32768);
    const alone = { ...NVIDIA, wgslFeatures: [] };
    expect(chooseMatrixBackward(alone, shape(64)).warps).toBe(1); // its dQ blocks in their own buffer
    // at d = 128 one subgroup would park 8 dQ blocks in its stripes' room for 2
    expect(() => chooseMatrixBackward(alone, shape(128))).toThrow(/no subgroup-matrix backward tile fits this adapter's limits for d=128/);
  });

  it('needs a square f16 shape and says so; refuses a head dim that fits no tile', () => {
    const noSquare = { ...NVIDIA, matrixConfigs: [NVIDIA.matrixConfigs[1]] };
    expect(squareMatrixSide(noSquare)).toBeUndefined();
    expect(() => chooseMatrixBackward(noSquare, shape(64))).toThrow(/square f16 matrix shape/);
    expect(() => chooseMatrixBackward({ ...NVIDIA, limits: { ...NVIDIA.limits, maxWorkgroupStorage: 8192 } }, shape(256))).toThrow(
      /no subgroup-matrix backward tile fits .* d=256/,
    );
  });

  it('deals the dQ blocks round-robin and loads each distinct K column block once', () => {
    // 4 subgroups, 32-row tiles, d = 128: 2 × 8 blocks, 4 per subgroup at columns w, w + 4, w, w + 4
    const L = matrixBackwardLayout({ ...shape(128), t: 16, sg: 32, warps: 4, bm: 32, stagger: true, overlapAdds: false });
    expect([L.blocks, L.perWarp]).toEqual([16, 4]);
    expect(L.colOf).toEqual([0, 4, 0, 4]);
    expect(L.distinct).toEqual([0, 4]);
    expect(L.perWarp).toBeLessThanOrEqual(L.scratchBlocks);
  });
});

describe('the main kernel', () => {
  const wgsl = bwdmMainWgsl(chooseMatrixBackward(NVIDIA, shape(128)));

  it("at d = 64 adds the last tile's dQ from its own buffer between the Sᵀ/dPᵀ MMAs and their stores, without a branch", () => {
    const w64 = bwdmMainWgsl(chooseMatrixBackward(NVIDIA, shape(64)));
    expect(w64).toContain('var<workgroup> dqs: array<f32, 1024>;');
    const stepB = w64.slice(w64.indexOf('// B.'), w64.indexOf('// D.'));
    const add = stepB.indexOf('add_dq(lid, pend_row, pend_tile, 1u - par);');
    expect(add).toBeGreaterThan(stepB.lastIndexOf('subgroupMatrixMultiplyAccumulate'));
    expect(add).toBeLessThan(stepB.indexOf('subgroupMatrixStore'));
    const fn = w64.slice(w64.indexOf('fn add_dq'), w64.indexOf('@compute'));
    expect(fn).not.toMatch(/\bif \(/);
    expect(wgsl).not.toContain('dqs');
  });

  it("keeps step F's matrix loads on run-time offsets (the driver moves loads with constant ones across barriers)", () => {
    const stepF = wgsl.slice(wgsl.indexOf('// F.'), wgsl.indexOf('pending = true'));
    const loads = stepF.match(/subgroupMatrixLoad<[^(]+\(&(pts|dss|dos|qs), [^,]+,/g) ?? [];
    expect(loads.length).toBeGreaterThan(0);
    for (const l of loads) expect(l).toMatch(/\bkb\b|\bw \* T\b|\brb\b/);
  });

  it('sums each dQ block from two MMA chains and adds it with the row factor, in the i32 accumulator', () => {
    expect(wgsl).toContain('var acc2 =');
    expect(wgsl).toMatch(/let x = sts\[at \+ u \* T \* T\] \+ dps\[at \+ u \* T \* T\];/);
    expect(wgsl).toMatch(/atomicAdd\(&dqacc\[\(grow0 \+ r\) \* D \+ col\], i32\(round\(x \* rst\[par \* BM \+ r\]\.z\)\)\)/);
    expect(wgsl).toContain('var<storage, read_write> dqacc: array<atomic<i32>>');
  });

  it('reads Q and dO four halves at a time where the head dims allow, element by element otherwise', () => {
    expect(wgsl).toContain('q4: array<vec4<f16>>');
    expect(wgsl).toContain('dout4: array<vec4<f16>>');
    const odd = bwdmMainWgsl(chooseMatrixBackward(NVIDIA, shape(21, 13)));
    expect(odd).toContain('q: array<f16>');
    expect(odd).toContain('dout: array<f16>');
  });

  it('brings the score modifiers in only where the problem has them', () => {
    expect(wgsl).not.toContain('slopes');
    expect(wgsl).toContain('let x = dot * c2 - rs.x;');
    const modified = bwdmMainWgsl(chooseMatrixBackward(NVIDIA, shape(64, 64, { softcap: true, alibi: true, group: 4 })));
    expect(modified).toContain('@binding(9) var<storage, read> slopes');
    expect(modified).toContain('let sc = score(h, i32(i), i32(j), dot);');
    expect(modified).toContain('let total = ntiles * 4u;');
  });

  it("spells step D out per element with the lane's row hoisted and branch-free masks where the subgroup size allows, a constant-trip loop otherwise", () => {
    const stepD = wgsl.slice(wgsl.indexOf('// D.'), wgsl.indexOf('// F.'));
    expect(stepD).not.toMatch(/\bfor \(/);
    expect(stepD.match(/let rs = rst\[par \* BM \+ r\];/g)).toHaveLength(1); // once, not per element
    expect(stepD.match(/pts\[\(w \* T \+ kk\) \* PSW \+ r\] = f16\(p\);/g)).toHaveLength(8); // 16 keys × 16 rows / 32 lanes
    expect(stepD).toContain('(j < prm.nk) & (i < prm.nq) & visible_bf(i32(i), i32(j))');
    expect(wgsl).toContain('fn visible_bf(i: i32, j: i32) -> bool');
    // a subgroup of 16 lanes does not keep one row per lane over 32-row tiles
    const c16 = chooseMatrixBackward({ ...NVIDIA, subgroupMinSize: 16, subgroupMaxSize: 16 }, shape(64), { warps: 4, bm: 32 });
    const loop = bwdmMainWgsl(c16);
    const loopD = loop.slice(loop.indexOf('// D.'), loop.indexOf('// F.'));
    expect(loopD).toContain(`for (var ue = 0u; ue < ${(16 * 32) / 16}u; ue++) {`);
    expect(loopD).toContain('visible(i32(i), i32(j))');
  });

  it('stages Q and dO with the four stores spelled out and fetches the row data a tile ahead', () => {
    const top = wgsl.slice(wgsl.indexOf('for (var t = 0u'), wgsl.indexOf('// B.'));
    expect(top).not.toMatch(/\[e\]/); // no vector indexed by a loop variable
    expect(top).toMatch(/qs\[o \+ 3u\] = pq0\.w;/);
    expect(top).toContain('rst[par * BM + lid] = prow;');
    // rows[] is read only for the next tile, after the staging stores
    expect(top.indexOf('rows[')).toBeGreaterThan(top.indexOf('rst[par * BM + lid] = prow;'));
    expect(top).toContain('prow = select(vec4<f32>(3.0e38, 0.0, 0.0, 0.0), rows[nBase + min(i, prm.nq - 1u)], i < prm.nq);');
  });
  it('holds the shipped kernel only: no study switch', () => {
    expect(wgsl).not.toContain('OFF');
  });
});

describe('the row kernel', () => {
  it(`scales dQ so that partials stay below 2^${FX_BITS}, and keeps its subgroup sums in uniform control flow`, () => {
    const w = bwdmRowsWgsl(128, 128, 2);
    expect(w).toContain(`exp2(clamp(${FX_BITS}.0 - e, -126.0, 126.0))`);
    expect(w).toContain('let bound = st.x * abs(prm.scale) * (sqrt(dn) * sqrt(st.y) + abs(dsum));');
    // no return before the sums
    expect(w.indexOf('return;')).toBeGreaterThan(w.indexOf('dn = subgroupAdd(dn);'));
  });
});
