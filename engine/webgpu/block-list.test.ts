// The block-sparse forward's launch order (launchOrderWords): which tile each workgroup runs.

import { describe, expect, it } from 'vitest';
import { blockMask } from '../core/block-mask.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import { DEFAULT_PROBLEM, type AttentionProblem } from '../core/problem.ts';
import { blockListWgsl, blockListWords, launchOrderWords } from './block-list.ts';
import { chooseHeadGroup, listScheduleMakespan } from './grid-order.ts';

const problem = (maskMod: string, batch = 2, hq = 4, n = 512): AttentionProblem => ({
  ...DEFAULT_PROBLEM,
  batch,
  hq,
  hk: hq,
  nq: n,
  nk: n,
  d: 64,
  dv: 64,
  causal: false,
  mask: maskSpecFrom({ maskMod }, { hq, nq: n, nk: n }),
});

/** The list, its order for `windows` (one of every row by default) on `workers` slots, and each (row, qb) tile's listed count. */
function ordered(p: AttentionProblem, windows = [{ head0: 0, rows: p.batch * p.hq }], headGroup?: (rows: number) => number, workers = 256) {
  const bm = blockMask(p, 128, 16);
  const list = blockListWords(bm, p.nk);
  const order = launchOrderWords(bm, list, windows, headGroup ?? ((rows) => chooseHeadGroup(true, bm.qBlocks, rows)), workers);
  const bottomFirst = Array.from(
    { length: p.batch * p.hq * bm.qBlocks },
    (_, i) => Math.floor(i / bm.qBlocks) * bm.qBlocks + bm.qBlocks - 1 - (i % bm.qBlocks),
  );
  const perHead = bm.batch * bm.heads > 1;
  const count = (row: number, qb: number) => list[((perHead ? row : 0) * bm.qBlocks + qb) * (2 + bm.kvBlocks)];
  return { bm, order, count, bottomFirst };
}

describe('block-sparse launch order', () => {
  it('runs every (Q tile, row) of each window once, within its head group, longest first or in the head-after-head order', () => {
    // A head-dependent document mask: per-row counts differ, so the order is not the causal one.
    const p = problem('(h % 2 == 0 && q_idx >= kv_idx) || (h % 2 == 1 && floor(q_idx / 300) == floor(kv_idx / 300))');
    const windows = [
      { head0: 0, rows: 3 },
      { head0: 3, rows: 5 },
    ];
    const { bm, order, count, bottomFirst } = ordered(p, windows, () => 2, 4); // 4 slots: the grid's end is ragged
    expect(order?.length).toBe(8 * bm.qBlocks);
    const tiles = Array.from(order ?? []);
    let reordered = 0;
    for (const w of windows)
      for (let g0 = 0; g0 < w.rows; g0 += 2) {
        const [a, b] = [(w.head0 + g0) * bm.qBlocks, (w.head0 + Math.min(g0 + 2, w.rows)) * bm.qBlocks];
        const group = tiles.slice(a, b); // rows counted from the window's head0
        expect([...group].sort((x, y) => x - y)).toEqual(
          bottomFirst.slice(g0 * bm.qBlocks, b - w.head0 * bm.qBlocks).sort((x, y) => x - y),
        );
        if (group.join() === bottomFirst.slice(g0 * bm.qBlocks, b - w.head0 * bm.qBlocks).join()) continue;
        reordered++;
        const counts = group.map((t) => count(w.head0 + Math.floor(t / bm.qBlocks), t % bm.qBlocks));
        expect(counts).toEqual([...counts].sort((x, y) => y - x));
      }
    expect(reordered).toBeGreaterThan(0);
  });

  it('a mask with the heavy Q tiles on top (kv_idx >= q_idx) runs them first, and finishes sooner than bottom-first', () => {
    const { bm, order, count, bottomFirst } = ordered(problem('kv_idx >= q_idx', 4, 16, 4096));
    const lengths = (tiles: number[]) => tiles.map((t) => count(Math.floor(t / bm.qBlocks), t % bm.qBlocks));
    expect(order?.[0]).toBe(0); // the top Q tile of the first row lists every K/V tile
    // 132 SMs, one workgroup each (the d 128 tile)
    expect(listScheduleMakespan(lengths(Array.from(order ?? [])), 132)).toBeLessThan(
      0.95 * listScheduleMakespan(lengths(bottomFirst), 132),
    );
  });

  it('no table where reordering would not end the grid sooner (equal counts, a window): the kernel keeps grid_tile', () => {
    for (const [mask, n] of [
      ['kv_idx >= 0', 512],
      ['sliding_window:256', 2048],
    ] as const) {
      const p = problem(mask, 4, 16, n);
      expect(ordered(p).order, mask).toBeUndefined();
      const code = blockListWgsl(blockMask(p, 128, 16), false);
      expect(code).toContain('return grid_tile(wid, nwg);');
      expect(code).not.toContain('BLOCK_ORDER');
    }
    expect(blockListWgsl(blockMask(problem('causal'), 128, 16), true)).toContain(
      'block_list[BLOCK_ORDER + (params.head0 + wid.y) * nwg.x + wid.x]',
    );
  });
});
