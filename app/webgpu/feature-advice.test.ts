import { describe, expect, it } from 'vitest';
import { fastestPath, missingFeatureAdvice } from './feature-advice.ts';

const ALL = ['chromium-experimental-subgroup-matrix', 'shader-f16', 'subgroups', 'timestamp-query'];

describe('missingFeatureAdvice', () => {
  it('says nothing when the adapter has every feature and an f16 matrix shape', () => {
    expect(missingFeatureAdvice(ALL, true)).toEqual([]);
  });

  it('names each missing feature, what it costs and how Chromium gets it', () => {
    const a = missingFeatureAdvice([], false);
    expect(a.map((x) => x.feature)).toEqual(['chromium-experimental-subgroup-matrix', 'shader-f16', 'subgroups', 'timestamp-query']);
    expect(a[0].how).toMatch(/^Enable with --enable-unsafe-webgpu \(chrome:\/\/flags\/#enable-unsafe-webgpu/);
    expect(a[0].loses).toContain('f16 subgroup matrices');
    expect(a[1].loses).toContain('f16 storage');
    expect(a[1].loses).toContain('f16 subgroup matrices');
    expect(a[1].how).toMatch(/^Needs .*Chromium 120/);
    expect(a[2].loses).toContain('subgroup row reductions');
    expect(a[2].how).toMatch(/^Needs .*Chromium 134/);
    expect(a[3].loses).toContain('wall clock');
    expect(a[3].how).toMatch(/^Needs .*Chromium 121/);
  });

  it('tells a matrix feature without an f16 → f32 shape apart from a missing feature', () => {
    const a = missingFeatureAdvice(ALL, false);
    expect(a).toHaveLength(1);
    expect(a[0].feature).toContain('f16 × f16 → f32');
    expect(a[0].how).toMatch(/^Needs /);
  });

  it('names only what is missing (SwiftShader: no f16, no subgroup matrices)', () => {
    expect(missingFeatureAdvice(['subgroups', 'timestamp-query'], false).map((x) => x.feature)).toEqual([
      'chromium-experimental-subgroup-matrix',
      'shader-f16',
    ]);
  });
});

describe('fastestPath', () => {
  it('prefers subgroup matrices, then subgroup reductions, then f16 storage, then f32', () => {
    expect(fastestPath(['flash-f32', 'flash-f16', 'flash-subgroups', 'flash-matrix', 'standard', 'decode'])).toBe('flash-matrix');
    expect(fastestPath(['flash-f32', 'flash-f16', 'flash-subgroups', 'standard', 'decode'])).toBe('flash-subgroups');
    expect(fastestPath(['flash-f32', 'flash-f16', 'standard', 'decode'])).toBe('flash-f16');
    expect(fastestPath(['flash-f32', 'standard', 'decode'])).toBe('flash-f32');
  });
});
