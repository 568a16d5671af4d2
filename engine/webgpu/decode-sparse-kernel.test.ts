import { describe, expect, it } from 'vitest';
import { blockMask } from '../core/block-mask.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { blockListWords } from './block-list.ts';
import { maxListedTiles, planSparseDecode, SPARSE_DECODE_BN, SPARSE_DECODE_SLOTS } from './decode-sparse-kernel.ts';

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
});
