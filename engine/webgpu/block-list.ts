// The block mask (engine/core/block-mask.ts) as the block-sparse kernels read it: per Q tile,
// the K/V tiles to visit, upstream's mask_block_cnt/idx then full_block_cnt/idx in one list,
// the full ones also flagged (a full tile runs without mask tests, a partial one tests every
// score, an empty one is never read).

import { BLOCK_EMPTY, BLOCK_FULL, BLOCK_PARTIAL, type BlockMask } from '../core/block-mask.ts';

/** Set on a list entry whose tile is full (every key exists and every pair is visible). */
export const FULL_FLAG = 0x80000000;

/** The storage binding of the list in the forward kernels. */
export const BLOCK_LIST_BINDING = 9;

/**
 * [rows][2 + kvBlocks] words: the count, how many of the listed tiles are partial, then the
 * partial tiles and after them the full ones, each group ascending (upstream's two lists, one
 * after the other, so that a kernel can run each group in a loop of its own). A tile that
 * reaches past Nk is listed as partial (its missing keys need the edge path's bounds test).
 */
export function blockListWords(bm: BlockMask, nk: number): Uint32Array {
  const rows = bm.batch * bm.heads * bm.qBlocks;
  const stride = 2 + bm.kvBlocks;
  const out = new Uint32Array(rows * stride);
  for (let r = 0; r < rows; r++) {
    const partial: number[] = [];
    const full: number[] = [];
    for (let j = 0; j < bm.kvBlocks; j++) {
      const s = bm.state[r * bm.kvBlocks + j];
      if (s === BLOCK_FULL && (j + 1) * bm.blockN <= nk) full.push((j | FULL_FLAG) >>> 0);
      else if (s === BLOCK_FULL || s === BLOCK_PARTIAL) partial.push(j);
    }
    out[r * stride] = partial.length + full.length;
    out[r * stride + 1] = partial.length;
    out.set(partial, r * stride + 2);
    out.set(full, r * stride + 2 + partial.length);
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
const BLOCK_STRIDE = ${2 + bm.kvBlocks}u;
const BLOCK_FULL_FLAG = ${FULL_FLAG}u;
// Tile t's first key, or Nk past the list's end (stagings load zeros there).
fn block_start(base: u32, count: u32, t: u32, bn: u32) -> u32 {
  if (t >= count) { return params.nk; }
  return (block_list[base + 2u + t] & ~BLOCK_FULL_FLAG) * bn;
}
fn block_base(bh_row: u32, qb: u32) -> u32 { return (${perHead ? `bh_row * ${bm.qBlocks}u + ` : ''}qb) * BLOCK_STRIDE; }
`;
}

/** Bits of a group list entry (groupBlockListWords) that hold the tile; bit 16 + i: head i sees it whole. */
export const GROUP_TILE_BITS = 0xffff;

/**
 * The block list of decoding, whose one workgroup serves `heads` consecutive query heads of one
 * key head: [groups][1 + kvBlocks] words, the count, then ascending the tiles any of the heads
 * sees, each with bit 16 + i set where head i sees the whole tile (scored without mask tests).
 * One group row where the mask depends on neither batch nor head. bm: one Q tile (decoding's Nq).
 */
export function groupBlockListWords(bm: BlockMask, nk: number, heads: number): Uint32Array {
  if (bm.qBlocks !== 1 || heads > 16 || bm.kvBlocks > GROUP_TILE_BITS + 1)
    throw new Error('the group block list takes one Q tile, at most 16 heads and 65536 tiles');
  const shared = bm.batch * bm.heads === 1;
  const groups = shared ? 1 : (bm.batch * bm.heads) / heads;
  const stride = 1 + bm.kvBlocks;
  const out = new Uint32Array(groups * stride);
  for (let g = 0; g < groups; g++) {
    let n = 0;
    for (let j = 0; j < bm.kvBlocks; j++) {
      let seen = false;
      let full = 0;
      for (let i = 0; i < heads; i++) {
        const s = bm.state[(shared ? 0 : g * heads + i) * bm.kvBlocks + j];
        seen ||= s !== BLOCK_EMPTY;
        if (s === BLOCK_FULL && (j + 1) * bm.blockN <= nk) full |= 1 << (16 + i);
      }
      if (seen) out[g * stride + 1 + n++] = (j | full) >>> 0;
    }
    out[g * stride] = n;
  }
  return out;
}

/** WGSL for reading a group list: `group_base(g)` is where group g's count sits. */
export function groupBlockListWgsl(bm: BlockMask): string {
  return /* wgsl */ `
@group(0) @binding(${BLOCK_LIST_BINDING}) var<storage, read> block_list: array<u32>;
fn group_base(g: u32) -> u32 { return ${bm.batch * bm.heads > 1 ? `g * ${1 + bm.kvBlocks}u` : '0u'}; }
`;
}
