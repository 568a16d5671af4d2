import { describe, expect, it } from 'vitest';
import { outputError } from './error-metrics.ts';

describe('outputError', () => {
  it('computes max abs, RMSE and relative L1 by their definitions', () => {
    const ref = [1, -2, 3, 0];
    const o = [1.5, -2, 2, 0.5];
    const e = outputError(o, ref);
    expect(e.max_abs).toBe(1);
    expect(e.rmse).toBeCloseTo(Math.sqrt((0.25 + 0 + 1 + 0.25) / 4), 15);
    expect(e.rel_l1).toBeCloseTo(2 / 6, 15);
    expect(e.count).toBe(4);
    expect(outputError(ref, ref)).toEqual({ max_abs: 0, rmse: 0, rel_l1: 0, count: 4 });
  });
  it('reports NaN outputs and refuses mismatched lengths', () => {
    expect(outputError([NaN, 1], [0, 1]).max_abs).toBeNaN();
    expect(outputError([NaN, 1], [0, 1]).rmse).toBeNaN();
    expect(() => outputError([1], [1, 2])).toThrow(/output has 1 elements, the reference 2/);
  });
});
