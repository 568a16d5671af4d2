import { describe, expect, it } from 'vitest';
import { scoreTitles } from './score-titles.ts';

describe('S and P heatmap titles', () => {
  it('say natural units and exp for the natural-unit algorithms', () => {
    expect(scoreTitles('fa2', false)).toEqual({ s: 'S = τ·QKᵀ', p: 'P = exp(S − m)' });
    expect(scoreTitles('fa1', false).p).toBe('P̃ = exp(S − m̃)');
    expect(scoreTitles('standard', false).p).toBe('P');
  });
  it('say log2 units and 2^(S − m) for base-2 traces, whatever the algorithm', () => {
    for (const id of ['sage', 'fa4']) {
      const t = scoreTitles(id, true);
      expect(t.s).toContain('log₂e');
      expect(t.p).toBe('P = 2^(S − m)');
      expect(t.note).toMatch(/log₂ units/);
    }
    expect(scoreTitles('fa2', false).note).toBeUndefined();
  });
  it('match the arithmetic they describe: 2^(τ·log₂e·x − m₂) = exp(τ·x − m) when m₂ = m·log₂e', () => {
    // A float64 check of the identity the base-2 title relies on.
    const tau = 0.125;
    for (const [x, m] of [
      [3.5, 0.9],
      [-7, 0.2],
      [40, 5.5],
    ]) {
      const s2 = tau * Math.LOG2E * x;
      const m2 = m * Math.LOG2E;
      expect(2 ** (s2 - m2)).toBeCloseTo(Math.exp(tau * x - m), 12);
    }
  });
});
