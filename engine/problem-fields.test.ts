import { describe, expect, it } from 'vitest';
import type { AttentionProblem } from './core/problem.ts';
import { FieldError, fieldsToProblem, problemToFields, type ProblemFields } from './problem-fields.ts';

const base: AttentionProblem = { batch: 2, hq: 4, hk: 2, nq: 33, nk: 47, d: 16, dv: 8, causal: true, dtype: 'bf16' };

describe('problem fields', () => {
  it.each<[string, AttentionProblem]>([
    ['plain', base],
    [
      'one-sided window, alibi, softcap, a sink shared by every head',
      { ...base, window: { left: 5, right: -1 }, alibi: 'standard', softcap: 30, sinks: [-0.5, -0.5, -0.5, -0.5] },
    ],
    ['both window sides', { ...base, causal: false, window: { left: 0, right: 3 }, dtype: 'fp8e4m3' }],
    ['an attention chunk with the window', { ...base, window: { left: 7, right: -1 }, attentionChunk: 16 }],
  ])('a problem comes back from its fields: %s', (_, p) => {
    expect(fieldsToProblem(problemToFields(p))).toEqual(p);
  });

  it('per-head sinks that differ leave the sink field empty (the fields hold one logit)', () => {
    expect(problemToFields({ ...base, sinks: [0, 1, 2, 3] }).sink).toBe('');
  });

  it.each<[Partial<ProblemFields>, string]>([
    [{ nq: 'abc' }, 'nq: must be a whole number, got "abc"'],
    [{ hk: '0' }, 'hk: must be at least 1, got 0'],
    [{ windowLeft: '-2' }, 'window left: must be at least 0, got -2'],
    [{ softcap: '-1' }, 'softcap: must be a number > 0, got "-1"'],
    [{ attentionChunk: '0' }, 'attention chunk: must be at least 1, got 0'],
    [{ attentionChunk: '8.5' }, 'attention chunk: must be a whole number, got "8.5"'],
    [{ sink: 'x' }, 'sink: must be a number, got "x"'],
  ])('a bad field is named: %o', (patch, message) => {
    const f = { ...problemToFields(base), ...patch };
    expect(() => fieldsToProblem(f)).toThrow(FieldError);
    expect(() => fieldsToProblem(f)).toThrow(message);
  });
});
