// The block mask (engine/core/block-mask.ts) as the block-sparse kernels read it: per Q tile,
// the count of K/V tiles to visit and their indices in ascending order, upstream's
// mask_block_cnt/idx and full_block_cnt/idx merged into one list with the full ones flagged
// (a full tile runs without mask tests, a partial one tests every score, an empty one is never
// read).

import { BLOCK_FULL, BLOCK_PARTIAL, type BlockMask } from '../core/block-mask.ts';

/** Set on a list entry whose tile is full (every key exists and every pair is visible). */
export const FULL_FLAG = 0x80000000;

/** The storage binding of the list in the forward kernels. */
export const BLOCK_LIST_BINDING = 9;

/**
 * [rows][1 + kvBlocks] words: the count, then the tiles. A tile that reaches past Nk is never
 * flagged full (its missing keys need the edge path's bounds test).
 */
export function blockListWords(bm: BlockMask, nk: number): Uint32Array {
  const rows = bm.batch * bm.heads * bm.qBlocks;
  const stride = 1 + bm.kvBlocks;
  const out = new Uint32Array(rows * stride);
  for (let r = 0; r < rows; r++) {
    let n = 0;
    for (let j = 0; j < bm.kvBlocks; j++) {
      const s = bm.state[r * bm.kvBlocks + j];
      if (s !== BLOCK_FULL && s !== BLOCK_PARTIAL) continue;
      const full = s === BLOCK_FULL && (j + 1) * bm.blockN <= nk;
      out[r * stride + 1 + n++] = (j | (full ? FULL_FLAG : 0)) >>> 0;
    }
    out[r * stride] = n;
  }
  return out;
}

/**
 * WGSL for reading the list: `block_base(bh_row, qb)` is where Q tile qb's count sits for
 * (batch, query head) row bh_row (read only when the mask depends on them).
 */
export function blockListWgsl(bm: BlockMask): string {
  const perHead = bm.batch * bm.heads > 1;
  return /* wgsl */ `
@group(0) @binding(${BLOCK_LIST_BINDING}) var<storage, read> block_list: array<u32>;
const BLOCK_STRIDE = ${1 + bm.kvBlocks}u;
const BLOCK_FULL_FLAG = ${FULL_FLAG}u;
// Tile t's first key, or Nk past the list's end (stagings load zeros there).
fn block_start(base: u32, count: u32, t: u32, bn: u32) -> u32 {
  if (t >= count) { return params.nk; }
  return (block_list[base + 1u + t] & ~BLOCK_FULL_FLAG) * bn;
}
fn block_base(bh_row: u32, qb: u32) -> u32 { return (${perHead ? `bh_row * ${bm.qBlocks}u + ` : ''}qb) * BLOCK_STRIDE; }
`;
}
