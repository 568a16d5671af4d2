// The timing study's shapes: the decoding shapes the browser table compares (GQA 32/8 and 64/8
// among them) and the serving bench's paged problem, which must be a valid paged cache whose
// sequences own distinct pages.

import { describe, expect, it } from 'vitest';
import { validatePaged } from '../layouts/paged.ts';
import { pagedStudyProblem, studyShapes } from './timing-study.ts';

const sized = (n: number) => ({ length: n }) as unknown as Float32Array;

describe('timing study shapes', () => {
  it('lists the GQA decoding shapes at both cache lengths and the paged decode', () => {
    const names = studyShapes(['flash-matrix', 'decode']).map((s) => s.name);
    for (const nk of [8192, 32768]) for (const g of ['Hq16 Hk16', 'Hq32 Hk8', 'Hq64 Hk8']) expect(names).toContain(`decode ${g} Nk${nk}`);
    expect(names).toContain('paged decode');
  });

  it.each([false, true])('paged problem (quick %s) is a valid cache with each page owned once', (quick) => {
    const pp = pagedStudyProblem(quick);
    const { hq, hk, d, dv } = pp.base;
    expect(() =>
      validatePaged(pp, {
        q: sized(pp.batch * hq * pp.nq * d),
        kCache: sized(pp.numPages * pp.pageSize * hk * d),
        vCache: sized(pp.numPages * pp.pageSize * hk * dv),
      }),
    ).not.toThrow();
    const owned = pp.cacheSeqlens.flatMap((L, b) => pp.blockTable.slice(b * pp.maxPages, b * pp.maxPages + Math.ceil(L / pp.pageSize)));
    expect(new Set(owned).size).toBe(owned.length);
    expect(owned.every((p) => p >= 0 && p < pp.numPages)).toBe(true);
  });
});
