import { describe, expect, it } from 'vitest';
import { refusalOf } from './refusal.ts';
import type { AttentionProblem } from './core/problem.ts';

const fp8: AttentionProblem = { batch: 2, hq: 4, hk: 2, nq: 300, nk: 500, d: 64, dv: 64, causal: true, dtype: 'fp8e4m3' };

describe('which algorithm and pass run a low-precision problem (asked of the engine)', () => {
  it('the forwards of FA3 and FA4 run FP8; their backwards and the other algorithms refuse it by dtype', () => {
    for (const a of ['fa3', 'fa4']) {
      expect(refusalOf(a, 'forward', fp8), a).toBeNull();
      expect(refusalOf(a, 'forward', { ...fp8, dtype: 'fp8e5m2' }), a).toBeNull();
    }
    expect(refusalOf('fa3', 'backward', fp8)?.field).toBe('dtype');
    for (const a of ['standard', 'fa1', 'fa2']) expect(refusalOf(a, 'forward', fp8)?.field, a).toBe('dtype');
    expect(refusalOf('fa2', 'forward', fp8)?.message).toMatch(/fa2 has no FP8 path/);
  });
  it('names the modifier FA3’s FP8 kernel lacks', () => {
    expect(refusalOf('fa3', 'forward', { ...fp8, alibi: 'standard' })?.field).toBe('alibi');
    expect(refusalOf('fa3', 'forward', { ...fp8, sinks: [1, 1, 1, 1] })?.field).toBe('sinks');
    expect(refusalOf('fa3', 'forward', { ...fp8, dv: 32 })?.field).toBe('dv');
  });
  it('a 16-bit problem runs everywhere it ran before', () => {
    for (const a of ['standard', 'fa1', 'fa2', 'fa3', 'fa4']) expect(refusalOf(a, 'forward', { ...fp8, dtype: 'bf16' }), a).toBeNull();
    expect(refusalOf('fa3', 'backward', { ...fp8, dtype: 'bf16' })).toBeNull();
  });
});
