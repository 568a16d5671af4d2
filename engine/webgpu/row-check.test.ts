import { describe, expect, it } from 'vitest';
import type { AttentionProblem } from '../core/problem.ts';
import { sampleSites } from './row-check.ts';

const p: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 64, dv: 64, causal: false, dtype: 'fp32' };

describe('sampled check sites', () => {
  it('reach the first and last batch and the first and last head, so every kind of window has a first and a last checked', () => {
    const sites = sampleSites(p, 3);
    expect(sites.map((s) => s.b)).toEqual([0, 2, 3]);
    // one batch of 128 heads runs in windows of 127 + 1 heads: head 127 must be checked
    const heads = sampleSites({ ...p, batch: 1, hq: 128, hk: 128 }, 3).map((s) => s.h);
    expect(heads[0]).toBe(0);
    expect(heads[heads.length - 1]).toBe(127);
    expect(sampleSites({ ...p, batch: 1, hq: 1, hk: 1, nq: 1 }, 3)).toEqual([{ b: 0, h: 0, i: 0 }]);
  });
});
