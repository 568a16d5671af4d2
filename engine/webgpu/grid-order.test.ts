import { describe, expect, it } from 'vitest';
import { chooseHeadGroup, listScheduleMakespan, tileAt } from './grid-order.ts';

/** Keys a causal block sees, in tiles, plus one tile's worth of fixed cost (Q load, O write). */
const causalLengths = (blocks: number, rows: number, headGroup: number) =>
  Array.from({ length: blocks * rows }, (_, i) => tileAt(i, blocks, rows, headGroup).block + 2);

describe('flash tile launch order', () => {
  it('visits every (block, head) tile exactly once, for every group size, ragged last groups included', () => {
    for (const [blocks, rows] of [
      [32, 64],
      [7, 13],
      [1, 5],
      [9, 1],
    ]) {
      for (const hg of [1, 2, 3, 4, 8, 64, 100]) {
        const seen = new Set<string>();
        for (let i = 0; i < blocks * rows; i++) {
          const t = tileAt(i, blocks, rows, hg);
          expect(t.block).toBeGreaterThanOrEqual(0);
          expect(t.block).toBeLessThan(blocks);
          expect(t.bh).toBeGreaterThanOrEqual(0);
          expect(t.bh).toBeLessThan(rows);
          seen.add(`${t.block},${t.bh}`);
        }
        expect(seen.size).toBe(blocks * rows);
      }
    }
  });

  it('group size 1 is head after head, bottom block first (the order the kernels had)', () => {
    expect([0, 1, 2, 3, 4].map((i) => tileAt(i, 4, 3, 1))).toEqual([
      { block: 3, bh: 0 },
      { block: 2, bh: 0 },
      { block: 1, bh: 0 },
      { block: 0, bh: 0 },
      { block: 3, bh: 1 },
    ]);
  });

  it('within a group, tiles come longest first', () => {
    const blocks = 32;
    const rows = 64;
    const hg = 16;
    for (let g = 0; g < rows / hg; g++) {
      const lens = causalLengths(blocks, rows, hg).slice(g * blocks * hg, (g + 1) * blocks * hg);
      for (let i = 1; i < lens.length; i++) expect(lens[i]).toBeLessThanOrEqual(lens[i - 1]);
    }
  });

  it('the chosen groups end a causal grid within 2% of the bound where head-after-head loses 7-15% (132 SMs, 1 or 2 workgroups each)', () => {
    // B = 4, H = 16, N = 4096 and 8192 with 128-row blocks: 32 and 64 blocks per head.
    for (const blocks of [32, 64]) {
      const rows = 64;
      for (const workers of [132, 264]) {
        const lens = causalLengths(blocks, rows, 1);
        const bound = lens.reduce((a, b) => a + b, 0) / workers;
        const hg = chooseHeadGroup(true, blocks, rows);
        const chosen = listScheduleMakespan(causalLengths(blocks, rows, hg), workers) / bound;
        const old = listScheduleMakespan(lens, workers) / bound;
        expect(chosen).toBeLessThan(1.02);
        if (blocks === 32 || workers === 264) expect(old).toBeGreaterThan(1.05);
      }
    }
  });

  it('non-causal problems keep head-after-head; a given group size wins, clamped to the heads', () => {
    expect(chooseHeadGroup(false, 32, 64)).toBe(1);
    expect(chooseHeadGroup(true, 32, 64)).toBe(16);
    expect(chooseHeadGroup(true, 8, 64)).toBe(64);
    expect(chooseHeadGroup(true, 512, 64)).toBe(1);
    expect(chooseHeadGroup(false, 32, 64, 8)).toBe(8);
    expect(chooseHeadGroup(true, 32, 4, 100)).toBe(4);
  });

  it('list scheduling: a worker takes the next item when it frees', () => {
    expect(listScheduleMakespan([4, 1, 1, 1, 1], 2)).toBe(4);
    expect(listScheduleMakespan([1, 1, 1, 1, 4], 2)).toBe(6);
  });
});
