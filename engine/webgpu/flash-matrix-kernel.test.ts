import { describe, expect, it } from 'vitest';
import { chooseMatrixTile, matrixKernelWgsl, matrixLayout } from './flash-matrix-kernel.ts';
import { withSequenceGeometry } from './sequence-geometry.ts';

const plain = { masked: false, softcap: false, alibi: false };
/** Head dims with Nq = 4096 (a multiple of 16: Q loads straight from its buffer), or the given Nq. */
const dims = (d: number, dv: number, nq = 4096) => ({ d, dv, nq });

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
  it('picks the measured-fastest tile: 8 subgroups × 16 keys where two workgroups fit the 48 KiB (d = 64), else 8 × 32', () => {
    const narrow = chooseMatrixTile(h200, dims(64, 64), plain);
    expect([narrow.m, narrow.n, narrow.k, narrow.warps, narrow.bn]).toEqual([16, 16, 16, 8, 16]);
    expect(matrixLayout(narrow).bytes).toBeLessThanOrEqual(49152 / 2);
    // d = 128: the 16-key tile takes 25.6 KB, more than half the limit
    const wide = chooseMatrixTile(h200, dims(128, 128), plain);
    expect([wide.m, wide.n, wide.k, wide.warps, wide.bn]).toEqual([16, 16, 16, 8, 32]);
    expect(matrixLayout({ ...wide, bn: 16 }).bytes).toBeGreaterThan(49152 / 2);
    expect(matrixLayout(wide).bytes).toBeLessThanOrEqual(49152);
    // an adapter with less workgroup memory gets no 16-key tile from the half rule
    const small = chooseMatrixTile({ ...h200, limits: { ...h200.limits, maxWorkgroupStorage: 32768 } } as typeof h200, dims(64, 64), plain);
    expect(small.bn).toBe(32);
    // a tile asked for by name is taken whenever it fits at all
    expect(chooseMatrixTile(h200, dims(128, 128), plain, true, { warps: 8, bn: 16 }).bn).toBe(16);
  });

  it('writes K/V during the softmax (two barriers per tile), for the two-workgroup tile and for a tile alone on its SM', () => {
    // Barrier points in one loop over key tiles (workgroupUniformLoad would be two); a masked
    // problem's kernel has three such loops (edge, fully visible, edge): the first is counted
    const points = (w: string) => {
      const from = w.indexOf('for (var j0 = jfirst');
      const next = w.indexOf('for (var j0 =', from + 1);
      const body = w.slice(from, next > 0 ? next : w.indexOf('if (again)'));
      return (body.match(/workgroupBarrier\(\)/g)?.length ?? 0) + 2 * (body.match(/workgroupUniformLoad\(/g)?.length ?? 0);
    };
    const shared = chooseMatrixTile(h200, dims(64, 64), plain);
    expect(points(matrixKernelWgsl(shared))).toBe(2);
    const causal = { ...plain, masked: true };
    expect(points(matrixKernelWgsl(chooseMatrixTile(h200, dims(64, 64), causal)))).toBe(2);
    const alone = chooseMatrixTile(h200, dims(128, 128), causal);
    expect([alone.warps, alone.bn]).toEqual([8, 32]);
    expect(points(matrixKernelWgsl(alone))).toBe(2);
    const aloneUnmasked = chooseMatrixTile(h200, dims(128, 128), plain);
    expect([aloneUnmasked.warps, aloneUnmasked.bn]).toEqual([8, 32]);
    expect(points(matrixKernelWgsl(aloneUnmasked))).toBe(2);
    // the K tile for t + 1 and the V tile for t are written after the S barrier, before the P one
    const w = matrixKernelWgsl(shared);
    const loop = w.slice(w.indexOf('for (var j0 = jfirst'));
    const sBarrier = loop.indexOf('workgroupBarrier();');
    const pBarrier = loop.indexOf('workgroupBarrier();', sBarrier + 1);
    for (const store of ['ks[key * KSW', 'vs[key * VSW']) {
      expect(loop.indexOf(store)).toBeGreaterThan(sBarrier);
      expect(loop.indexOf(store)).toBeLessThan(pBarrier);
    }
    // P·V of the previous tile opens the iteration, before QKᵀ; the last tile's follows the loop
    expect(loop.indexOf('&ps, wrow * PW + kb')).toBeLessThan(loop.indexOf('acc0 = subgroupMatrixMultiplyAccumulate'));
    expect(loop.slice(pBarrier).match(/&ps, wrow \* PW \+ kb/g)).toHaveLength(1);
  });

  it("splits a masked problem's key loop into edge, fully visible and edge segments for a tile alone on its SM; only the edges test the mask", () => {
    const causal = { ...plain, masked: true };
    for (const c of [
      chooseMatrixTile(h200, dims(64, 64), causal, true, { segments: true }),
      chooseMatrixTile(h200, dims(128, 128), causal),
    ]) {
      const w = matrixKernelWgsl(c);
      const starts = ['for (var j0 = jfirst; j0 < span.x', 'for (var j0 = span.x; j0 < span.y', 'for (var j0 = span.y; j0 < kr.y'].map(
        (h) => w.indexOf(h),
      );
      expect(starts.every((i, k) => i > 0 && (k === 0 || i > starts[k - 1]))).toBe(true);
      const end = w.indexOf('if (again)');
      const [edgeLow, full, edgeHigh] = starts.map((i, k) => w.slice(i, k < 2 ? starts[k + 1] : end));
      for (const edge of [edgeLow, edgeHigh]) expect(edge).toContain('score_edge(');
      expect(full).not.toContain('score_edge(');
      expect(full).not.toContain('tile_visible(');
      expect(w).toContain('let span = vec2<u32>(');
      // the span reads the shape where the serving kernels' rewrite reaches it (the entry point)
      const served = withSequenceGeometry(w);
      expect(served).toContain('span_hi = min(span_hi, i32(row0) + geo.diag + 1)');
    }
    // the two-workgroup tile (d = 64) keeps one loop that tests each tile, as does every unmasked kernel
    const one = matrixKernelWgsl(chooseMatrixTile(h200, dims(64, 64), causal));
    expect(one).not.toContain('span_hi');
    expect(one).toContain('tile_visible(row0');
    expect(matrixKernelWgsl(chooseMatrixTile(h200, dims(64, 64), plain))).not.toContain('span_hi');
  });

  it('never rescales O in the loop: a row max that grows after its first P sends the workgroup through a second pass from the true maxima', () => {
    for (const c of [chooseMatrixTile(h200, dims(64, 64), plain), chooseMatrixTile(h200, dims(128, 128), plain)]) {
      const w = matrixKernelWgsl(c);
      const loop = w.slice(w.indexOf('for (var j0 = jfirst'), w.indexOf('if (again)'));
      // O is only ever accumulated into inside the loop, never stored, scaled and reloaded
      expect(loop).not.toMatch(/subgroupMatrixStore<row_major>\(&ss, sreg, o/);
      expect(loop).not.toContain('workgroupUniformLoad');
      // m moves only before the row's first P; later growth past the threshold asks for the second pass
      expect(loop).toContain('if (started) { again = true; } else { alpha = exp2(m - mx); m = mx; }');
      // the pass loop: at most two, the second starting from the true max and fresh O, read once per pass
      const passes = w.slice(w.indexOf('for (var sweep = 0u; sweep < 2u; sweep++)'));
      expect(passes.indexOf('m = mtrue;')).toBeLessThan(passes.indexOf('for (var j0 = jfirst'));
      expect(passes.indexOf('o0 = subgroup_matrix_result')).toBeLessThan(passes.indexOf('for (var j0 = jfirst'));
      expect(passes.match(/workgroupUniformLoad\(&rerun\)/g)).toHaveLength(1);
    }
  });

  it('falls back to fewer subgroups where the tile does not fit, and one subgroup without subgroup_id', () => {
    const wide = chooseMatrixTile(h200, dims(256, 256), plain);
    expect(wide.warps).toBeLessThan(8);
    expect(matrixLayout(wide).bytes).toBeLessThanOrEqual(49152);
    const c = chooseMatrixTile({ ...h200, wgslFeatures: [] }, dims(64, 64), plain);
    expect(c.warps).toBe(1);
    expect(matrixKernelWgsl(c)).not.toContain('subgroup_id');
  });

  it('holds one left matrix per 16 of d and one result matrix per 16 of dv in registers, ragged dims rounded up', () => {
    const w = matrixKernelWgsl(chooseMatrixTile(h200, dims(128, 64), plain));
    expect(w.match(/let q\d+ = subgroupMatrixLoad/g)).toHaveLength(8);
    expect(w.match(/var o\d+ = subgroup_matrix_result/g)).toHaveLength(4);
    const r = matrixKernelWgsl(chooseMatrixTile(h200, dims(21, 13), plain));
    expect(r.match(/let q\d+ = subgroupMatrixLoad/g)).toHaveLength(2);
    expect(r.match(/var o\d+ = subgroup_matrix_result/g)).toHaveLength(1);
    // 21 and 13 are not multiples of 4: element-wise staging reads, no vec4 bindings
    expect(r).not.toContain('array<vec4<f16>>');
  });

  it('reads K, V, S and P matrices from workgroup memory; Q from its buffer only for a tile alone on its SM, where Nq and d are whole matrices', () => {
    const sources = (nq: number, d: number) => {
      const w = matrixKernelWgsl(chooseMatrixTile(h200, dims(d, d, nq), plain));
      return [...w.matchAll(/subgroupMatrixLoad<[^(]*\(&(\w+)/g)].map((m) => m[1]);
    };
    // d = 128, aligned: the eight Q matrices straight from the buffer, everything else staged
    const aligned = sources(4096, 128);
    expect(aligned.filter((s) => s === 'q')).toHaveLength(8);
    for (const s of aligned.filter((x) => x !== 'q')) expect(['ks', 'vs', 'ps', 'ss']).toContain(s);
    // Nq or d not a multiple of 16: a load past the binding would return zeros for rows that
    // exist, so Q goes through the K array, which grows to hold BM × 16 halves where it is smaller
    for (const [nq, d] of [
      [4095, 128],
      [4096, 120],
    ]) {
      expect(sources(nq, d)).not.toContain('q');
      expect(sources(nq, d)).toContain('ks');
    }
    // the two-workgroup d = 64 tile stages Q (measured faster), and its K array holds it
    const shared = chooseMatrixTile(h200, dims(64, 64), plain);
    expect(shared.qFromBuffer).toBe(false);
    expect(sources(4096, 64)).not.toContain('q');
    expect(matrixLayout(shared).bytes - matrixLayout({ ...shared, qFromBuffer: true }).bytes).toBe((128 * 16 - 16 * 72) * 2);
    // a benchmark may ask for either
    expect(chooseMatrixTile(h200, dims(64, 64), plain, true, { warps: 8, bn: 16, qStaged: false }).qFromBuffer).toBe(true);
    expect(chooseMatrixTile(h200, dims(128, 128), plain, true, { qStaged: true }).qFromBuffer).toBe(false);
  });

  it('leaves out the code of modifiers the problem does not use', () => {
    const c = chooseMatrixTile(h200, dims(64, 64), plain);
    const p = matrixKernelWgsl(c);
    const all = matrixKernelWgsl({ ...c, score: { masked: true, softcap: true, alibi: true } });
    expect(p).not.toContain('tanh(');
    expect(all).toContain('tanh(');
    expect(p).not.toContain('key_visible(i, j)) { return NEG_INF; }');
    expect(all).toContain('!key_visible(i, j)');
  });
});
