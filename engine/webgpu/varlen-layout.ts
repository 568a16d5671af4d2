// The varlen forward on the GPU: where a flash kernel's workgroup finds its rows in a packed
// batch (engine/layouts/varlen.ts: q [total_q, Hq, d], k/v [total_k, Hk, d|dv], offsets
// cu_seqlens_q / cu_seqlens_k).
//
// The grid is [tiles, Hq]; tiles are the (sequence, query block) pairs of the batch, listed
// once on the host: a sequence of n rows has ceil(n / BM) blocks and none more, so no
// workgroup works on padding (a batch of lengths 100 and 4000 launches 2 + 63 blocks per head
// at BM = 64, not 2 · 63). The list is sorted by how many keys the block sees, shortest first:
// grid_tile (grid-order.ts) hands out x from the top, so the GPU starts the longest tiles
// first across all sequences, in groups of heads, and the last wave holds short tiles only.
//
// One storage buffer (binding 7) holds the table, as u32 words:
//   [0] B   [1] total_q   [2 … B+2] cu_seqlens_q   [B+3 … 2B+3] cu_seqlens_k
//   [2B+4 …] the tile list, (sequence, query block) pairs.
// A workgroup reads its pair and its sequence's four offsets (the 16 bytes of varlen.ts's
// counters) and builds `geo` (sequence-geometry.ts); rows are H·d apart in the packed tensors.

import { ProblemError } from '../core/problem.ts';

/** How a flash kernel addresses rows of Q, K, V, O and LSE (strings of WGSL). */
export interface RowAddress {
  /** Elements between consecutive rows (tokens) of Q, K and V. */
  qs: string;
  ks: string;
  vs: string;
  /** Index of the first element of O's query row `row` of this workgroup's head. */
  oRow: (row: string) => string;
  /** Index of LSE's entry for query row `row`. */
  lse: (row: string) => string;
}

/** The dense [B, H, N, d] layout: rows d apart, one (batch, head) after another. */
export const DENSE_ADDRESS: RowAddress = {
  qs: 'D',
  ks: 'D',
  vs: 'DV',
  oRow: (row) => `(bh * params.nq + ${row}) * DV`,
  lse: (row) => `params.lse0 + bh * params.nq + ${row}`,
};

/** The packed layout: o [total_q, Hq, dv], lse [Hq, total_q]. */
export const VARLEN_ADDRESS: RowAddress = {
  qs: 'QS',
  ks: 'KS',
  vs: 'VS',
  oRow: (row) => `(sq0 + ${row}) * params.hq * DV + h * DV`,
  lse: (row) => `h * tq + sq0 + ${row}`,
};

export const VARLEN_BINDING = 7;

export const VARLEN_BINDING_WGSL = /* wgsl */ `
@group(0) @binding(${VARLEN_BINDING}) var<storage, read> vl: array<u32>; // varlen-layout.ts: B, total_q, cu_seqlens_q, cu_seqlens_k, tiles
`;

/**
 * The entry point's first lines in a varlen kernel: the workgroup's sequence and query block,
 * its head, `geo`, the row strides and the bases of its head's rows in Q, K and V. Declares
 * what the dense prologue declares (tile, row0, bh, h, bhk, qbase, kbase, vbase) plus sq0, tq,
 * geo and the strides QS, KS, VS.
 */
export function varlenPrologue(bm: string): string {
  return /* wgsl */ `
  let tile = grid_tile(wid, nwg); // x: index into the tile list (shortest first: longest run first)
  let nseq = vl[0];
  let tq = vl[1];
  let ti = 2u * nseq + 4u + 2u * tile.x;
  let seq = vl[ti];
  let sq0 = vl[2u + seq];
  let sk0 = vl[nseq + 3u + seq];
  let geo = make_geo(vl[3u + seq] - sq0, vl[nseq + 4u + seq] - sk0);
  let row0 = vl[ti + 1u] * ${bm};
  let bh = tile.y; // the query head (a packed batch has no batch dimension)
  let h = bh;
  let bhk = h / (params.hq / params.hk);
  let QS = params.hq * D;
  let KS = params.hk * D;
  let VS = params.hk * DV;
  let qbase = sq0 * QS + h * D;
  let kbase = sk0 * KS + bhk * D;
  let vbase = sk0 * VS + bhk * DV;`;
}

export interface VarlenMask {
  causal: boolean;
  window?: { left: number; right: number };
}

/** Keys [lo, hi) that rows [r0, r1) of a sequence of nq rows and nk keys can see (params.ts's block_key_range). */
export function blockKeyRange(nq: number, nk: number, r0: number, r1: number, m: VarlenMask): [number, number] {
  const diag = nk - nq;
  let lo = 0;
  let hi = nk;
  if (m.window && m.window.left >= 0) lo = Math.max(lo, r0 + diag - m.window.left);
  let right = m.causal ? 0 : -1;
  if (m.window && m.window.right >= 0) right = right >= 0 ? Math.min(right, m.window.right) : m.window.right;
  if (right >= 0) hi = Math.min(hi, r1 - 1 + diag + right + 1);
  lo = Math.min(Math.max(lo, 0), nk);
  hi = Math.min(Math.max(hi, lo), nk);
  return [lo, hi];
}

export interface VarlenTile {
  seq: number;
  block: number;
  /** Keys the block sees (its length in the launch order). */
  keys: number;
}

/** The (sequence, query block) pairs of a packed batch, shortest first (see the header). */
export function varlenTiles(cuQ: readonly number[], cuK: readonly number[], bm: number, m: VarlenMask): VarlenTile[] {
  const tiles: VarlenTile[] = [];
  for (let s = 0; s + 1 < cuQ.length; s++) {
    const nq = cuQ[s + 1] - cuQ[s];
    const nk = cuK[s + 1] - cuK[s];
    for (let b = 0; b * bm < nq; b++) {
      const [lo, hi] = blockKeyRange(nq, nk, b * bm, Math.min(nq, (b + 1) * bm), m);
      tiles.push({ seq: s, block: b, keys: hi - lo });
    }
  }
  // Stable: equal lengths keep sequence order.
  return tiles
    .map((t, i) => ({ t, i }))
    .sort((a, b) => a.t.keys - b.t.keys || a.i - b.i)
    .map((x) => x.t);
}

/** The table of binding 7 (see the header). */
export function packVarlenTable(cuQ: readonly number[], cuK: readonly number[], tiles: readonly VarlenTile[]): Uint32Array {
  const B = cuQ.length - 1;
  if (cuK.length !== cuQ.length)
    throw new ProblemError('cu_seqlens_k', `must have the same length as cu_seqlens_q (B + 1 = ${cuQ.length}), got ${cuK.length}`);
  const t = new Uint32Array(2 * B + 4 + 2 * tiles.length);
  t[0] = B;
  t[1] = cuQ[B];
  t.set(cuQ, 2);
  t.set(cuK, B + 3);
  tiles.forEach((x, i) => {
    t[2 * B + 4 + 2 * i] = x.seq;
    t[2 * B + 5 + 2 * i] = x.block;
  });
  return t;
}
