import { describe, expect, it } from 'vitest';
import { webgpuDefaultsFor, webgpuPathFix, WEBGPU_PATH_DEFAULTS } from './webgpu-defaults.ts';

const LIMITS = { maxStorageBinding: 128 * 1024 * 1024 };

describe('WebGPU path defaults', () => {
  it('decoding starts on one query row against a long cache; the flash paths on the headline shape', () => {
    expect(webgpuDefaultsFor('decode', WEBGPU_PATH_DEFAULTS['flash-f32'], [], LIMITS)).toEqual({
      batch: 4,
      hq: 16,
      hk: 16,
      nq: 1,
      nk: 32768,
      d: 128,
      dv: 128,
    });
    expect(webgpuDefaultsFor('flash-matrix', WEBGPU_PATH_DEFAULTS.decode, [], LIMITS)).toEqual({
      batch: 4,
      hq: 16,
      hk: 16,
      nq: 4096,
      nk: 4096,
      d: 64,
      dv: 64,
    });
  });

  it('keeps typed values the path takes', () => {
    expect(webgpuDefaultsFor('decode', { nk: 1000, hq: 32, hk: 8 }, ['nk', 'hq', 'hk'], LIMITS)).toMatchObject({
      nq: 1,
      nk: 1000,
      hq: 32,
      hk: 8,
    });
  });

  it('brings standard attention down to the largest square score matrix one binding holds', () => {
    const s = { ...WEBGPU_PATH_DEFAULTS['flash-f32'], nq: 65536, nk: 65536 };
    const fix = webgpuPathFix('standard', s, LIMITS);
    // 128 MiB / 4 bytes = 2^25 scores: 4096 × 8192 would fit, but a square one is 4096².
    expect(fix.map((c) => [c.field, c.to])).toEqual([
      ['nq', 4096],
      ['nk', 4096],
    ]);
    expect(fix[0].why).toMatch(/65536×65536 fp32 score matrix \(17179869184 bytes\); this adapter binds at most 134217728/);
    expect(webgpuDefaultsFor('standard', s, ['nq', 'nk'], LIMITS)).toMatchObject({ nq: 4096, nk: 4096 });
    expect(webgpuPathFix('flash-f32', s, LIMITS)).toEqual([]);
    expect(webgpuPathFix('standard', { ...s, nq: 4096, nk: 8192 }, LIMITS)).toEqual([]);
  });
});
