import { describe, expect, it } from 'vitest';
import { blockMask } from '../core/block-mask.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { blockListWords, groupBlockListWords } from './block-list.ts';
import { maxListedTiles, planGroupSparseDecode, planSparseDecode, SPARSE_DECODE_BN, SPARSE_DECODE_SLOTS } from './decode-sparse-kernel.ts';

describe('block-sparse flash-decoding splits', () => {
  it('divide the listed tiles, not the keys: a window in a long cache spreads over splits', () => {
    // B 4, H 16: 64 rows; a 512-key window is 9 listed 64-key tiles (8 full-width plus the ragged start).
    expect(planSparseDecode(9, 64)).toEqual({ tilesPerSplit: 2, splits: 5, maxListed: 9 });
    // Dense 32k cache at 64 rows: at most SLOTS keys a split.
    const dense = planSparseDecode(512, 64);
    expect(dense.tilesPerSplit * SPARSE_DECODE_BN).toBe(SPARSE_DECODE_SLOTS);
    expect(dense.splits * dense.tilesPerSplit).toBeGreaterThanOrEqual(512);
    // Every row fully masked: one split, which writes an empty partial.
    expect(planSparseDecode(0, 8).splits).toBe(1);
  });

  it('read the most listed tiles of any row off the block list', () => {
    const p: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 1, nk: 700, d: 16, dv: 16, causal: false, dtype: 'fp32' };
    const doc = maskSpecFrom({ maskMod: 'document:300,400' }, p);
    const bm = blockMask({ ...p, mask: doc }, 1, SPARSE_DECODE_BN);
    // Keys 300–699 of eleven tiles: tiles 4–10.
    expect(maxListedTiles(blockListWords(bm, p.nk), bm.kvBlocks)).toBe(7);
    const perHead = maskSpecFrom({ maskMod: 'kv_idx < 64 * (h + 1)' }, p);
    const bh = blockMask({ ...p, mask: perHead }, 1, SPARSE_DECODE_BN);
    expect(bh.heads).toBe(2);
    expect(maxListedTiles(blockListWords(bh, p.nk), bh.kvBlocks)).toBe(2);
  });

  it('on the group layout list, per key head, the tiles any of its query heads sees, each flagged full per head', () => {
    // Hq 4 / Hk 2: two groups of two heads; head h sees keys below 64·(h + 1) of 700 (eleven tiles, the last ragged).
    const p: AttentionProblem = { batch: 1, hq: 4, hk: 2, nq: 1, nk: 700, d: 16, dv: 16, causal: false, dtype: 'fp32' };
    const bm = blockMask({ ...p, mask: maskSpecFrom({ maskMod: 'kv_idx < 64 * (h + 1)' }, p) }, 1, SPARSE_DECODE_BN);
    const w = groupBlockListWords(bm, p.nk, 2);
    const row = (g: number) => Array.from(w.subarray(g * 12, g * 12 + 1 + w[g * 12]));
    const full = (...heads: number[]) => heads.reduce((a, i) => a | (1 << (16 + i)), 0);
    expect(row(0)).toEqual([2, 0 | full(0, 1), 1 | full(1)]);
    expect(row(1)).toEqual([4, 0 | full(0, 1), 1 | full(0, 1), 2 | full(0, 1), 3 | full(1)]);
    expect(maxListedTiles(w, bm.kvBlocks, 1)).toBe(4);
    // No head or batch dependence: one row for every group; the ragged last tile is listed, never full.
    const shared = blockMask({ ...p, mask: maskSpecFrom({ maskMod: 'kv_idx >= 600' }, p) }, 1, SPARSE_DECODE_BN);
    expect(Array.from(groupBlockListWords(shared, p.nk, 2).subarray(0, 3))).toEqual([2, 9, 10]);
  });

  it('split the group list into whole tiles, at least 256 keys a split', () => {
    // 8 groups, 512 tiles of 64 keys, 512 workgroups: 64 splits of 8 tiles.
    expect(planGroupSparseDecode(512, 8, 64, 512)).toEqual({ tilesPerSplit: 8, splits: 64, maxListed: 512 });
    // A 9-tile window: 256 keys a split at least, so 3 splits of 3 tiles (not 9 of one).
    expect(planGroupSparseDecode(9, 8, 64, 512)).toEqual({ tilesPerSplit: 3, splits: 3, maxListed: 9 });
    expect(planGroupSparseDecode(0, 8, 64, 512).splits).toBe(1);
  });
});
