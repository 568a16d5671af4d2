import { describe, expect, it } from 'vitest';
import { chooseRowConfig, rowKernelWgsl, rowLayout } from './flash-row-kernel.ts';

const limits = { maxWorkgroupStorage: 49152, maxInvocations: 1024 };
const plain = { masked: false, softcap: false, alibi: false };
const base = { elem: 'f32' as const, d: 64, dv: 64, score: plain };

describe('row kernel configuration', () => {
  it("with subgroups, d ≤ 64: two lanes hold two rows, sub-chunks of 8 keys (the H200 study's fastest)", () => {
    const c = chooseRowConfig(limits, { ...base, subgroupMin: 32 })!;
    expect([c.tpr, c.rpt, c.sc, c.bc, c.threads]).toEqual([2, 2, 8, 32, 128]);
    expect(rowLayout(c).bm).toBe(128);
  });

  it('without subgroups: one lane per row', () => {
    const c = chooseRowConfig(limits, { ...base, subgroupMin: 0 })!;
    expect([c.tpr, c.rpt]).toEqual([1, 1]);
    expect(rowKernelWgsl(c)).not.toContain('subgroup');
  });

  it('leaves heads wider than 64 to the tiled kernel unless lanes per row are asked for', () => {
    expect(chooseRowConfig(limits, { ...base, d: 128, dv: 128, subgroupMin: 32 })).toBeUndefined();
    expect(chooseRowConfig(limits, { ...base, d: 40, dv: 72, subgroupMin: 32 })).toBeUndefined();
    const c = chooseRowConfig(limits, { ...base, d: 256, dv: 256, subgroupMin: 32 }, { tpr: 4 })!;
    expect(rowLayout(c).regs).toBeLessThanOrEqual(168);
    expect(rowLayout(c).bytes).toBeLessThanOrEqual(limits.maxWorkgroupStorage);
    // more lanes per row than a subgroup has: refused
    expect(chooseRowConfig(limits, { ...base, subgroupMin: 2 }, { tpr: 4 })).toBeUndefined();
  });

  it('fits a small adapter (SwiftShader: 32 KiB, 256 invocations)', () => {
    const c = chooseRowConfig({ maxWorkgroupStorage: 32768, maxInvocations: 256 }, { ...base, subgroupMin: 4 })!;
    expect(rowLayout(c).bytes).toBeLessThanOrEqual(32768);
  });
});

describe('row kernel WGSL', () => {
  it('reads K and V with a constant inner index in the hot loop (no bounds check per load)', () => {
    const w = rowKernelWgsl(chooseRowConfig(limits, { ...base, subgroupMin: 0 })!);
    const reads = [...w.matchAll(/let kv = ks\[jb \+ \d+u\]\[([^\]]+)\]/g)].map((m) => m[1]);
    expect(reads.length).toBe(2 * 16 * 8); // full and edge paths × 16 vec4s of d × 8 keys
    for (const r of reads) expect(r).toMatch(/^\d+u$/);
  });

  it('keeps every per-row value in named registers, not arrays', () => {
    const w = rowKernelWgsl(chooseRowConfig(limits, { ...base, subgroupMin: 32 })!);
    expect(w).not.toMatch(/var \w+\s*:\s*array/);
    expect(w).toContain('var o1_7 = vec4<f32>(0.0);'); // 2 rows × 8 vec4s of O per lane (d = 64 over 2 lanes)
    expect(w).not.toContain('o1_8');
  });

  it('tests masks only in the edge path, and leaves out unused modifiers', () => {
    const c = chooseRowConfig(limits, { ...base, subgroupMin: 0 })!;
    const full = rowKernelWgsl(c);
    expect(full).not.toContain('tanh(');
    expect(full).not.toContain('!key_visible(i, j)');
    const masked = rowKernelWgsl({ ...c, score: { masked: true, softcap: true, alibi: false } });
    expect(masked).toContain('!key_visible(i, j)');
    expect(masked).toContain('tanh(');
    // the exp guard for masked (NEG_INF) scores appears only in the edge path
    const guards = masked.match(/select\(0\.0, exp\(/g) ?? [];
    expect(guards.length).toBe(8);
  });
});
