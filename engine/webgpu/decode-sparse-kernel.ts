// Block-sparse flash-decoding: the split pass over the block list (block-list.ts) instead of a
// key range. The short query block is one Q tile; each split takes a run of listed K/V tiles,
// so the work divides by visited tiles, not by keys (a 256-key window in a 32k cache is spread
// over splits instead of landing in one). Empty tiles are never listed, so never loaded; full
// tiles score without mask tests (score_full), partial ones with them (score_edge). The LSE
// combine of decode-kernels.ts merges the partials.
//
// Where decode-group-kernel.ts's layout takes the problem (subgroups, head dims a multiple of 4
// up to 256, at most DECODE_GROUP_MAX_ROWS rows a workgroup), its kernel walks the group block
// list (groupBlockListWords): one workgroup serves every query head of a key head, so each
// listed K/V byte is read once for all of them, with the dense decode's prefetch.
// Elsewhere the kernel below: one workgroup per (split, batch·query head), SPARSE_DECODE_THREADS lanes, per query row:
//   1. four lanes per key, each summing every fourth f16 pair of the row (16 contiguous bytes per key per step);
//   2. one lane per key scores it, the split's max, then its sum of exp(s − max);
//   3. one lane per output column sums P·V over the split's keys (a coalesced V row read per key).

import { PARAMS_WGSL, scoreWgsl, type ScoreSpec } from './params.ts';
import { WORKGROUP_REDUCE_WGSL } from './decode-kernels.ts';

export const SPARSE_DECODE_THREADS = 128;
/** Keys per K/V tile of the block list. */
export const SPARSE_DECODE_BN = 64;
/** Keys per split at most: its scores and partial dots live in workgroup memory (about 13 KiB in all). */
export const SPARSE_DECODE_SLOTS = 512;
/** Workgroups the splits aim for over all heads (a bandwidth-bound pass keeps the whole GPU busy). */
const TARGET_WORKGROUPS = 2048;

export interface SparseDecodePlan {
  /** List entries (K/V tiles) per split. */
  tilesPerSplit: number;
  splits: number;
  /** The most tiles any (batch, query head) row lists. */
  maxListed: number;
}

/** The most listed tiles of any row of a block list (count first; rows of `header` + kvBlocks words). */
export function maxListedTiles(words: Uint32Array, kvBlocks: number, header = 2): number {
  let most = 0;
  for (let r = 0; r < words.length; r += header + kvBlocks) most = Math.max(most, words[r]);
  return most;
}

/**
 * Splits of the group layout: about `workgroups` workgroups over `groups` (batch, key head)
 * groups, at least 256 keys a split (as decodeSplits: each pays for its query load and the
 * end-of-split reduction), in whole tiles of `bn` keys.
 */
export function planGroupSparseDecode(maxListed: number, groups: number, bn: number, workgroups: number): SparseDecodePlan {
  const want = Math.max(1, Math.min(Math.ceil(workgroups / groups), Math.ceil((maxListed * bn) / 256)));
  const tilesPerSplit = Math.max(1, Math.ceil(maxListed / want));
  return { tilesPerSplit, splits: Math.max(1, Math.ceil(maxListed / tilesPerSplit)), maxListed };
}

/**
 * Splits for `rows` (batch, query head) rows: enough for about TARGET_WORKGROUPS workgroups,
 * at least two tiles each (a split pays for a query load and two reductions) and at most
 * SPARSE_DECODE_SLOTS keys.
 */
export function planSparseDecode(maxListed: number, rows: number): SparseDecodePlan {
  const most = SPARSE_DECODE_SLOTS / SPARSE_DECODE_BN;
  const want = Math.max(1, Math.ceil(TARGET_WORKGROUPS / rows));
  const tilesPerSplit = Math.min(most, Math.max(2, Math.ceil(maxListed / want)));
  return { tilesPerSplit, splits: Math.max(1, Math.ceil(maxListed / tilesPerSplit)), maxListed };
}

/**
 * The split kernel. `blockList`: blockListWgsl of the problem's block mask at one Q tile of
 * Nq rows and SPARSE_DECODE_BN keys. Bindings as decodeSplitKernelWgsl's (aux only where ALiBi
 * reads it), plus the block list and the mask's aux words; params.split_len is tiles per split.
 */
export function sparseDecodeKernelWgsl(d: number, dv: number, score: ScoreSpec, blockList: string): string {
  const NT = SPARSE_DECODE_THREADS;
  const BN = SPARSE_DECODE_BN;
  const S = SPARSE_DECODE_SLOTS;
  const half = (buf: string, i: string) => `unpack2x16float(${buf}[(${i}) >> 1u])[(${i}) & 1u]`;
  // Even head dims read whole f16 pairs (a row starts on a word); odd ones element by element.
  const dot =
    d % 2 === 0
      ? `for (var w = quarter; w < ${d / 2}u; w += 4u) {
          let kk = unpack2x16float(k[(kbase + key) * ${d / 2}u + w]);
          acc += qs[2u * w] * kk.x + qs[2u * w + 1u] * kk.y;
        }`
      : `for (var c = quarter; c < D; c += 4u) { acc += qs[c] * ${half('k', '(kbase + key) * D + c')}; }`;
  return /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read_write> opart: array<f32>;   // [bh][split][row][dv]
@group(0) @binding(5) var<storage, read_write> lpart: array<f32>;   // [bh][split][row]
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${blockList}
${scoreWgsl(score)}
const D = ${d}u; const DV = ${dv}u; const NT = ${NT}u; const BN = ${BN}u;
var<workgroup> qs: array<f32, ${d}>;
var<workgroup> keys: array<u32, ${S}>;            // the split's keys, tile by tile
var<workgroup> tile_full: array<u32, ${S / BN}>;  // 1 where the tile needs no mask tests
var<workgroup> part: array<f32, ${4 * S}>;        // four partial dots per key
var<workgroup> sc: array<f32, ${S}>;              // scores, then P
var<workgroup> red: array<f32, ${NT}>;

${WORKGROUP_REDUCE_WGSL}
@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let split = wid.x; let bh = wid.y;
  let bh_row = bh + params.head0; // bh counts from the window's first row
  let h = bh_row % params.hq;${score.user ? '\n  mask_row = bh_row;' : ''}
  let kbase = kv_head(bh) * params.nk;
  let base = block_base(bh_row, 0u);
  let count = block_list[base];
  let e0 = min(count, split * params.split_len);
  let tiles = min(count, e0 + params.split_len) - e0;
  let n = tiles * BN;
  for (var j = lid; j < n; j += NT) { keys[j] = (block_list[base + 2u + e0 + j / BN] & ~BLOCK_FULL_FLAG) * BN + j % BN; }
  for (var t = lid; t < tiles; t += NT) { tile_full[t] = select(0u, 1u, (block_list[base + 2u + e0 + t] & BLOCK_FULL_FLAG) != 0u); }
  for (var row = 0u; row < params.nq; row++) {
    workgroupBarrier();
    for (var c = lid; c < D; c += NT) { qs[c] = ${half('q', '(bh * params.nq + row) * D + c')}; }
    workgroupBarrier();
    // 1. partial dots (keys past Nk, in a tile that reaches past it, are never read)
    let quarter = lid % 4u;
    for (var j = lid / 4u; j < n; j += NT / 4u) {
      let key = keys[j];
      var acc = 0.0;
      if (key < params.nk) {
        ${dot}
      }
      part[4u * j + quarter] = acc;
    }
    workgroupBarrier();
    // 2. scores: full tiles without mask tests; the split's max and sum
    var mloc = NEG_INF;
    for (var j = lid; j < n; j += NT) {
      let key = keys[j];
      let x = part[4u * j] + part[4u * j + 1u] + part[4u * j + 2u] + part[4u * j + 3u];
      var s: f32;
      if (tile_full[j / BN] != 0u) { s = score_full(h, row, key, x); } else { s = score_edge(h, row, key, x); }
      sc[j] = s;
      mloc = max(mloc, s);
    }
    let m = reduce(lid, mloc, true);
    var lloc = 0.0;
    for (var j = lid; j < n; j += NT) {
      let p = select(0.0, exp(sc[j] - m), sc[j] > NEG_INF);
      sc[j] = p;
      lloc += p;
    }
    let l = reduce(lid, lloc, false); // its barriers also publish sc
    // 3. P·V, one output column per lane
    let inv = select(0.0, 1.0 / l, l > 0.0);
    let out = (bh * params.splits + split) * params.nq + row;
    for (var c = lid; c < DV; c += NT) {
      var o = 0.0;
      for (var j = 0u; j < n; j++) {
        let key = keys[j];
        if (key < params.nk) { o += sc[j] * ${half('v', '(kbase + key) * DV + c')}; }
      }
      opart[out * DV + c] = o * inv;
    }
    if (lid == 0u) { lpart[out] = select(NEG_INF, m + log(l), l > 0.0); }
  }
}
`;
}
