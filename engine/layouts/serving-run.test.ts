// The serving page's run: generated layouts reach the float64 reference (a paged pool whose
// unowned slots are NaN included), packing is cheaper than padding, bad forms name the field.

import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVING_FORM, generateServing, runServing, type ServingForm } from './serving-run.ts';

describe('serving run', () => {
  it('varlen: steps carry packed ranges, error is within 2e-5, padding costs more FLOPs', () => {
    const r = runServing(generateServing(DEFAULT_SERVING_FORM), 'fa2');
    expect(r.maxError).toBeLessThan(2e-5);
    expect(r.steps.length).toBe(r.counters.steps);
    expect(r.steps.every((s) => s.line === 'layout.emptyKeys' || s.packed !== undefined)).toBe(true);
    // Lengths 12, 40, 0, 23 padded to 40 × 40: the padded batch does 4·40² score entries per head.
    expect(r.padded!.counters.matmulFlops).toBeGreaterThan(2 * r.counters.matmulFlops);
    expect(r.cuSeqlensQ).toEqual([0, 12, 52, 52, 75]);
  });
  it('paged flash-decoding over a NaN-filled pool: exact pages, page-aligned splits', () => {
    const f: ServingForm = {
      ...DEFAULT_SERVING_FORM,
      layout: 'paged',
      algorithm: 'flash-decoding',
      seqlensK: [70, 5, 33],
      pageSize: 16,
      splits: 3,
    };
    const r = runServing(generateServing(f), f.algorithm, { splits: f.splits });
    expect(r.maxError).toBeLessThan(2e-5);
    expect(r.pagesTouched).toBe(5 + 1 + 3);
    expect(r.numPages).toBe(9 + 2);
    expect((r.blocksPerSplit! * r.blocks.blockN) % 16).toBe(0);
    expect(r.steps.filter((s) => s.kind === 'load' && s.pages).every((s) => s.pages!.length === 1)).toBe(true);
  });
  it('refuses a bad form, naming the field', () => {
    expect(() => generateServing({ ...DEFAULT_SERVING_FORM, seqlensK: [1, 2] })).toThrow(
      /seqlensK: needs one key length per sequence \(4\)/,
    );
    expect(() => generateServing({ ...DEFAULT_SERVING_FORM, hk: 3 })).toThrow(/hk: query heads \(2\) must be a multiple/);
    expect(() => generateServing({ ...DEFAULT_SERVING_FORM, seqlensQ: [1, -1, 2, 3] })).toThrow(/seqlensQ\[1\]/);
  });
});
