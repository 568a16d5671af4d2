// FlexAttention's block mask at a kernel's tile size: every (Q tile, K/V tile) pair is empty
// (no key visible: skipped), partial (the mask runs inside it) or full (no mask work at all),
// stored as upstream's tensors (flash_attn/cute/block_sparsity.py@0251105a l. 17–23:
// mask_block_cnt/idx list the partial K/V tiles of each Q tile, full_block_cnt/idx the full ones).

import { checkMaskSpec } from './mask-spec.ts';
import { dtypeBytes, type AttentionProblem } from './problem.ts';
import { blockFullyVisible, blockHasVisible, blockVisibleCount, scoreModel } from './scores.ts';

export const BLOCK_EMPTY = 0;
export const BLOCK_PARTIAL = 1;
export const BLOCK_FULL = 2;

export interface BlockMask {
  blockM: number;
  blockN: number;
  /** Batch and head extents of the tensors: 1 when the mask does not depend on them (broadcast). */
  batch: number;
  heads: number;
  qBlocks: number;
  kvBlocks: number;
  /** [batch, heads, qBlocks, kvBlocks]: BLOCK_EMPTY, BLOCK_PARTIAL or BLOCK_FULL. */
  state: Uint8Array;
  /** [batch, heads, qBlocks] and [batch, heads, qBlocks, kvBlocks] (valid entries packed left, ascending). */
  maskBlockCnt: Int32Array;
  maskBlockIdx: Int32Array;
  fullBlockCnt: Int32Array;
  fullBlockIdx: Int32Array;
  counts: { empty: number; partial: number; full: number };
  /** Fraction of tile pairs that are computed (partial or full), over the whole problem. */
  density: number;
  /** What skipping the empty tiles saves over the dense kernel, over the whole problem. */
  skippedFlops: number;
  /** K and V tile reads skipped (each Q tile reads its K/V tiles once). */
  skippedBytes: number;
}

/** Pairs a mask_mod is evaluated on at most: past this the block mask is refused rather than freezing a page (causal and window alone cost one range per row). */
export const MAX_BLOCK_MASK_PAIRS = 1 << 28;

export function blockMask(p: AttentionProblem, blockM: number, blockN: number): BlockMask {
  const sm = scoreModel(p);
  const per = p.mask !== undefined && checkMaskSpec(p.mask).maskReadsBatchOrHead;
  const batch = per ? p.batch : 1;
  const heads = per ? p.hq : 1;
  const qBlocks = Math.ceil(p.nq / blockM);
  const kvBlocks = Math.ceil(p.nk / blockN);
  const pairs = batch * heads * p.nq * p.nk;
  if (sm.maskMod !== undefined && pairs > MAX_BLOCK_MASK_PAIRS) {
    throw new RangeError(`the block mask evaluates ${pairs} query/key pairs; at most ${MAX_BLOCK_MASK_PAIRS} here`);
  }
  const state = new Uint8Array(batch * heads * qBlocks * kvBlocks);
  const maskBlockCnt = new Int32Array(batch * heads * qBlocks);
  const fullBlockCnt = new Int32Array(batch * heads * qBlocks);
  const maskBlockIdx = new Int32Array(state.length);
  const fullBlockIdx = new Int32Array(state.length);
  const counts = { empty: 0, partial: 0, full: 0 };
  let skippedFlops = 0;
  let skippedBytes = 0;
  const eb = dtypeBytes(p.dtype);
  const weight = (p.batch * p.hq) / (batch * heads);
  for (let b = 0; b < batch; b++)
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < qBlocks; i++) {
        const row = (b * heads + h) * qBlocks + i;
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        for (let j = 0; j < kvBlocks; j++) {
          const c0 = j * blockN;
          const c1 = Math.min(p.nk, c0 + blockN);
          let s = BLOCK_EMPTY;
          if (blockHasVisible(sm, r0, r1, c0, c1, p.nk, b, h))
            s = blockFullyVisible(sm, r0, r1, c0, c1, p.nk, b, h) ? BLOCK_FULL : BLOCK_PARTIAL;
          state[row * kvBlocks + j] = s;
          if (s === BLOCK_FULL) {
            fullBlockIdx[row * kvBlocks + fullBlockCnt[row]++] = j;
            counts.full += weight;
          } else if (s === BLOCK_PARTIAL) {
            maskBlockIdx[row * kvBlocks + maskBlockCnt[row]++] = j;
            counts.partial += weight;
          } else {
            counts.empty += weight;
            skippedFlops += weight * 2 * (r1 - r0) * (c1 - c0) * (p.d + p.dv);
            skippedBytes += weight * (c1 - c0) * (p.d + p.dv) * eb;
          }
        }
      }
  const total = counts.empty + counts.partial + counts.full;
  return {
    blockM,
    blockN,
    batch,
    heads,
    qBlocks,
    kvBlocks,
    state,
    maskBlockCnt,
    maskBlockIdx,
    fullBlockCnt,
    fullBlockIdx,
    counts,
    density: total === 0 ? 0 : (counts.partial + counts.full) / total,
    skippedFlops,
    skippedBytes,
  };
}

/** How many (query, key) pairs the mask leaves visible, over the whole problem. */
export interface ElementDensity {
  visible: number;
  total: number;
  /** visible / total: what the mask leaves of the scores standard attention computes (it has no tiles to skip). */
  density: number;
}

/** The mask's density per score rather than per tile pair (standard attention's one row block spans every key). */
export function elementDensity(p: AttentionProblem): ElementDensity {
  const sm = scoreModel(p);
  const per = p.mask !== undefined && checkMaskSpec(p.mask).maskReadsBatchOrHead;
  const batch = per ? p.batch : 1;
  const heads = per ? p.hq : 1;
  if (sm.maskMod !== undefined && batch * heads * p.nq * p.nk > MAX_BLOCK_MASK_PAIRS) {
    throw new RangeError(
      `the element density evaluates ${batch * heads * p.nq * p.nk} query/key pairs; at most ${MAX_BLOCK_MASK_PAIRS} here`,
    );
  }
  let seen = 0;
  for (let b = 0; b < batch; b++) for (let h = 0; h < heads; h++) seen += blockVisibleCount(sm, 0, p.nq, 0, p.nk, p.nk, b, h);
  const visible = seen * ((p.batch * p.hq) / (batch * heads));
  const total = p.batch * p.hq * p.nq * p.nk;
  return { visible, total, density: total === 0 ? 0 : visible / total };
}

/** (query, key) pairs the mask leaves visible inside one tile pair, and the tile's size: what a student reads off one cell of the grid. */
export function tileVisibleCount(
  p: AttentionProblem,
  blockM: number,
  blockN: number,
  tile: { q: number; kv: number; b: number; h: number },
): { visible: number; total: number } {
  const sm = scoreModel(p);
  const r0 = tile.q * blockM;
  const r1 = Math.min(p.nq, r0 + blockM);
  const c0 = tile.kv * blockN;
  const c1 = Math.min(p.nk, c0 + blockN);
  return { visible: blockVisibleCount(sm, r0, r1, c0, c1, p.nk, tile.b, tile.h), total: Math.max(0, r1 - r0) * Math.max(0, c1 - c0) };
}
