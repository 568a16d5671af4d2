import { describe, expect, it } from 'vitest';
import { ALGORITHMS, descriptorOf } from '../algorithms/registry.ts';
import { describeFor } from '../algorithms/schedule-registry.ts';
import {
  ALGORITHM_DEFAULTS,
  baseConfig,
  defaultsFor,
  dtypeForPass,
  fixPhrase,
  misfits,
  scheduleFix,
  type WorkingConfig,
} from './algorithm-defaults.ts';
import type { DType } from '../core/problem.ts';

// The problem panel's starting form (FA2): what a visitor has before choosing anything.
const FA2_FORM: WorkingConfig = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 32, dv: 32, blockM: 16, blockN: 16, dtype: 'fp32', gpu: null };
const KERNELS = ['cute-fa2', 'fmha-v2', 'fa3', 'fa4', 'flash-decoding'];

describe('defaultsFor', () => {
  it('has a row for every algorithm of the registry', () => {
    expect(Object.keys(ALGORITHM_DEFAULTS).sort()).toEqual(ALGORITHMS.map((a) => a.id).sort());
  });

  it.each(KERNELS)('%s starts on a configuration its hardware model schedules, with the kernel tile', (algo) => {
    const { config, replaced } = defaultsFor(algo, FA2_FORM, []);
    expect(replaced).toEqual([]);
    expect(config.dtype).not.toBe('fp32');
    expect(config.gpu).not.toBeNull();
    const sheet = describeFor(algo, config.gpu as string, { ...config, causal: false });
    expect(sheet.does_not_fit).toEqual([]);
    expect([config.blockM, config.blockN]).toEqual([sheet.tiles.block_m, sheet.tiles.block_n]);
  });

  it("takes the problem's masks to the kernel: FA3's tile at d 128 is 128 × 128 causal, 128 × 176 without a mask", () => {
    // hopper/tile_size.h@0251105a l. 31-33 (headdim ≤ 128: kBlockN 128 when causal or local, else 176).
    const p = { ...FA2_FORM, hq: 4, hk: 2, nq: 512, nk: 512, d: 128, dv: 128, dtype: 'fp16' as DType };
    const touched = ['hq', 'hk', 'nq', 'nk', 'd', 'dv', 'dtype'] as const;
    expect(defaultsFor('fa3', { ...p, causal: false }, touched).config).toMatchObject({ blockM: 128, blockN: 176 });
    expect(defaultsFor('fa3', { ...p, causal: true }, touched).config).toMatchObject({ blockM: 128, blockN: 128 });
    expect(defaultsFor('fa3', { ...p, window: { left: 64, right: 0 } }, touched).config).toMatchObject({ blockM: 128, blockN: 128 });
    // A window with both sides negative is no window.
    expect(defaultsFor('fa3', { ...p, window: { left: -1, right: -1 } }, touched).config).toMatchObject({ blockN: 176 });
    // flash_attn/cute/interface.py@0251105a l. 1309-1331: the d = 256 kernel refuses softcap.
    const fa4 = { ...p, d: 256, dv: 256, dtype: 'bf16' as DType, gpu: 'b200' as const };
    expect(misfits('fa4', fa4)).toEqual([]);
    expect(misfits('fa4', { ...fa4, softcap: 30 }).join()).toContain('SM100 forward with head_dim=256 does not support softcap');
  });

  it('brings FA4 with d = 192, dv = 128 typed into bf16 on the B200 with its 128 × 128 tile', () => {
    const { config, replaced } = defaultsFor('fa4', { ...FA2_FORM, d: 192, dv: 128 }, ['d', 'dv']);
    expect(config).toMatchObject({ d: 192, dv: 128, dtype: 'bf16', gpu: 'b200', blockM: 128, blockN: 128, nq: 512, nk: 512 });
    expect(replaced).toEqual([]);
    expect(misfits('fa4', config)).toEqual([]);
  });

  it('keeps what the person typed where it fits, and takes the tile for their head dim', () => {
    const { config } = defaultsFor('fa3', { ...FA2_FORM, nq: 300, d: 256, dv: 256, dtype: 'bf16', gpu: 'h200' }, [
      'nq',
      'd',
      'dv',
      'dtype',
      'gpu',
    ]);
    expect(config).toMatchObject({ nq: 300, nk: 512, d: 256, dv: 256, dtype: 'bf16', gpu: 'h200', blockM: 128, blockN: 80 });
  });

  it('keeps typed tiles', () => {
    expect(defaultsFor('fa4', { ...FA2_FORM, blockM: 32, blockN: 64 }, ['blockM', 'blockN']).config).toMatchObject({
      blockM: 32,
      blockN: 64,
    });
  });

  it('replaces a typed fp32 for a 16-bit kernel and says why', () => {
    const { config, replaced } = defaultsFor('fmha-v2', FA2_FORM, ['dtype']);
    expect(config.dtype).toBe('fp16');
    expect(replaced).toEqual([{ field: 'dtype', from: 'fp32', to: 'fp16', why: expect.stringMatching(/fmha_v2 takes fp16 or bf16/) }]);
  });

  it('brings typed head dims the kernel cannot hold down to the nearest it can', () => {
    const { config, replaced } = defaultsFor('fa4', { ...FA2_FORM, d: 192, dv: 192, dtype: 'bf16' }, ['d', 'dv', 'dtype']);
    expect(config).toMatchObject({ d: 192, dv: 128, dtype: 'bf16' });
    expect(replaced.map((r) => [r.field, r.from, r.to])).toEqual([['dv', '192', '128']]);
    expect(replaced[0].why).toMatch(/tmem: needs 640 columns/);
  });

  it('replaces a GPU of another architecture', () => {
    const { config, replaced } = defaultsFor('fa4', { ...FA2_FORM, gpu: 'h100' }, ['gpu']);
    expect(config.gpu).toBe('b200');
    expect(replaced[0]).toMatchObject({ field: 'gpu', from: 'h100', to: 'b200', why: expect.stringMatching(/SM100/) });
  });

  it("returns to the exact algorithms' own problem when nothing was typed", () => {
    expect(defaultsFor('fa2', baseConfig('fa4'), []).config).toEqual(FA2_FORM);
  });
});

describe('scheduleFix', () => {
  it('names the field and value that make FA4 at d = 192, dv = 128 in fp32 schedulable', () => {
    const c: WorkingConfig = { ...FA2_FORM, d: 192, dv: 128, gpu: 'b200' };
    expect(misfits('fa4', c).join('\n')).toMatch(/dtype: FA4 takes fp16 or bf16 inputs/);
    const fix = scheduleFix('fa4', c);
    expect(fix.map((r) => [r.field, r.to])).toEqual([['dtype', 'bf16']]);
    expect(fixPhrase(fix)).toBe('set dtype to bf16');
  });

  it('combines several changes', () => {
    const fix = scheduleFix('fa4', { ...FA2_FORM, d: 256, dv: 128, gpu: 'h100' });
    expect(fixPhrase(fix)).toBe('set GPU to b200, dtype to bf16 and d to 192');
    // d = dv = 256 runs upstream's dedicated 2-CTA kernel; d 256 with dv 128, or 192 × 192, has no kernel.
    expect(fixPhrase(scheduleFix('fa4', { ...FA2_FORM, d: 256, dv: 256, gpu: 'h100' }))).toBe('set GPU to b200 and dtype to bf16');
    expect(misfits('fa4', { ...FA2_FORM, d: 256, dv: 128, gpu: 'b200', dtype: 'bf16' })).not.toEqual([]);
    expect(misfits('fa4', { ...FA2_FORM, d: 192, dv: 192, gpu: 'b200', dtype: 'bf16' })).not.toEqual([]);
    expect(misfits('fa4', { ...FA2_FORM, d: 192, dv: 128, gpu: 'b200', dtype: 'bf16' })).toEqual([]);
  });

  it('is empty when the configuration fits', () => {
    expect(scheduleFix('fa3', baseConfig('fa3'))).toEqual([]);
  });
});

describe('dtypeForPass', () => {
  const { gpu: _, ...fa2 } = baseConfig('fa2');
  const fits = (algo: string, dtype: DType) =>
    describeFor(algo, descriptorOf(algo).backwardGpu!, { ...fa2, dtype, causal: false }, {}, 'backward').does_not_fit;
  it("gives the default page's FA2 backward a dtype its kernel schedules, and takes it back on the way forward", () => {
    expect(fits('fa2', 'fp32').join()).toMatch(/dtype: the FA2 backward takes fp16 or bf16/);
    const back = dtypeForPass('fa2', 'backward', fa2, false);
    expect(back).toBe('fp16');
    expect(fits('fa2', back)).toEqual([]);
    expect(dtypeForPass('fa2', 'forward', { ...fa2, dtype: back }, false)).toBe('fp32');
  });

  it("keeps the person's dtype, and an untouched one the backward takes", () => {
    expect(dtypeForPass('fa2', 'backward', fa2, true)).toBe('fp32');
    expect(dtypeForPass('fa2', 'backward', { ...fa2, dtype: 'bf16' }, false)).toBe('bf16');
    expect(dtypeForPass('fa1', 'backward', fa2, false)).toBe('fp32');
  });
});
