// Flash-decoding over a paged K/V cache on the GPU (engine/layouts/paged.ts: k_cache /
// v_cache [num_pages, page_size, Hk, d|dv], block_table [B, max_pages], cache_seqlens [B],
// q [B, Hq, Nq, d] as the dense engine holds it).
//
// The split pass is decode-group-kernel.ts's with two changes made by the hooks below:
//   - the grid is [work items, Hk]: a work item is one (sequence, split) pair, listed on the
//     host, so a sequence of L tokens gets ceil(L / split_len) splits and no more — a batch of
//     1k- and 32k-token sequences launches no empty workgroups for the short ones;
//   - a split is a whole number of pages (split_len is a multiple of page_size), and the key
//     loop runs page by page: one block-table read per page of the split, a uniform load the
//     whole workgroup shares, then the dense kernel's loop over that page's keys with the key's
//     row in the pool = (page · page_size + key − first key of the page) · Hk + key head.
// Keys are clamped to the page's last owned key before they are loaded (and masked after), so
// no lane ever reads a slot past cache_seqlens[b] or a page the table does not give the
// sequence: unowned slots may hold anything, NaN included.
//
// Partials go to [(split base of b + split) · Hq + head][row], and the combine below merges
// sequence b's splits; a sequence with no tokens gets O = 0 and LSE = −inf (as the CPU engine).
//
// One storage buffer (binding 7) holds the tables, as u32 words:
//   [0] B   [1] max_pages   [2] work items W   [3 … B+3) cache_seqlens
//   [B+3 … 2B+4) split bases (prefix sums of the splits per sequence)
//   [2B+4 … 2B+4+2W) work items, (sequence, split) pairs   [then] block_table [B, max_pages].

import { COMBINE_THREADS, lseCombineBodyWgsl } from './decode-kernels.ts';
import { PARAMS_WGSL, SCORE_WGSL } from './params.ts';

export const PAGED_BINDING = 7;

export const PAGED_BINDING_WGSL = /* wgsl */ `
@group(0) @binding(${PAGED_BINDING}) var<storage, read> pt: array<u32>; // paged-layout.ts: B, max_pages, W, cache_seqlens, split bases, work items, block table
`;

/**
 * The split pass's first lines, paged: the work item's sequence b and split, the workgroup's
 * first (batch, query head) row bh0, its key head hk, `geo`, where b's partials start (sbase)
 * and b's row of the block table (ptab); hq0 is the first query head within b. The grid's y
 * counts chunks of G query heads (the kernel's constant): a whole key-head group where its
 * rows fit one workgroup (the group kernel's limit, DECODE_GROUP_MAX_ROWS), else a divisor of
 * it, and each chunk reads the group's K/V.
 */
export function pagedPrologue(): string {
  return /* wgsl */ `
  let nseq = pt[0];
  let wi = 2u * nseq + 4u + 2u * wid.x;
  let b = pt[wi];
  let split = pt[wi + 1u];
  let hq0 = wid.y * G;
  let hk = hq0 / (params.hq / params.hk);
  let bh0 = b * params.hq + hq0;  // q is [B, Hq, Nq, d]
  let geo = make_geo(NQ, pt[3u + b]);
  let sbase = pt[nseq + 3u + b];
  let ptab = 2u * nseq + 4u + 2u * pt[2] + b * pt[1];`;
}

/**
 * Opens the paged key loop (two loops; the kernel closes the outer one after the dense loop's
 * brace). The next page's table entry is loaded before this page's keys: the K/V addresses of a
 * page depend on its entry, and loaded at the top of its own page the entry's latency would
 * stall every page's first loads.
 */
export function pagedLoop(pageSize: number, step: string): string {
  const P = `${pageSize}u`;
  return /* wgsl */ `// Page by page: one block-table read per page of the split, shared by the workgroup.
  let pg_last = select(lo, hi - 1u, hi > lo) / ${P};
  var page = pt[ptab + lo / ${P}];
  for (var pg = lo / ${P}; pg * ${P} < hi; pg++) {
    let page_next = pt[ptab + min(pg + 1u, pg_last)];
    let pend = min(hi, pg * ${P} + ${P});
    for (var j0 = max(lo, pg * ${P}); j0 < pend; j0 += ${step}) {`;
}

export interface PagedWork {
  /** Keys per split: a multiple of the page size. */
  splitLen: number;
  /** Splits per sequence. */
  splits: number[];
  /** Prefix sums of `splits` (length B + 1). */
  base: number[];
  /** (sequence, split) pairs, longest sequences' splits first (all but a sequence's last split are equally long). */
  items: [number, number][];
}

/**
 * Splits for a batch: whole pages, at least 256 keys, and about `workgroups` workgroups in all
 * (work items × Hk): a bandwidth-bound pass needs the whole GPU busy. `splitPages` fixes the
 * split length instead (tests: many splits per sequence on small problems).
 */
export function pagedWork(
  cacheSeqlens: readonly number[],
  pageSize: number,
  hk: number,
  workgroups = 2048,
  splitPages?: number,
): PagedWork {
  const total = cacheSeqlens.reduce((a, L) => a + L, 0);
  const pages = splitPages ?? Math.max(Math.ceil(256 / pageSize), Math.ceil((total * hk) / workgroups / pageSize), 1);
  if (!(Number.isInteger(pages) && pages >= 1)) throw new RangeError(`splitPages must be a whole number of pages >= 1, got ${splitPages}`);
  const splitLen = pages * pageSize;
  const splits = cacheSeqlens.map((L) => Math.ceil(L / splitLen));
  const base = [0];
  for (const s of splits) base.push(base[base.length - 1] + s);
  const items: [number, number][] = [];
  splits.forEach((n, b) => {
    for (let s = 0; s < n; s++) items.push([b, s]);
  });
  // Full splits first, the sequences' shorter last splits at the end of the launch order.
  const len = ([b, s]: [number, number]) => Math.min(splitLen, cacheSeqlens[b] - s * splitLen);
  items.sort((x, y) => len(y) - len(x));
  return { splitLen, splits, base, items };
}

/** The table of binding 7 (see the header). */
export function packPagedTable(
  cacheSeqlens: readonly number[],
  blockTable: readonly number[],
  maxPages: number,
  w: PagedWork,
): Uint32Array {
  const B = cacheSeqlens.length;
  const t = new Uint32Array(2 * B + 4 + 2 * w.items.length + B * maxPages);
  t[0] = B;
  t[1] = maxPages;
  t[2] = w.items.length;
  t.set(cacheSeqlens, 3);
  t.set(w.base, B + 3);
  w.items.forEach(([b, s], i) => {
    t[2 * B + 4 + 2 * i] = b;
    t[2 * B + 5 + 2 * i] = s;
  });
  // Entries past a sequence's pages are never read; negative ones (unused slots) wrap harmlessly.
  blockTable.forEach((e, i) => (t[2 * B + 4 + 2 * w.items.length + i] = e >>> 0));
  return t;
}

/**
 * LSE combine of a paged batch: one workgroup per (row, batch × head); sequence b's splits are
 * partials sbase[b] … sbase[b + 1] − 1, combined by decode-kernels.ts's combine body. Sinks join
 * as in dense decoding, except for a sequence with no tokens, whose rows are O = 0, LSE = −inf
 * (the CPU engine's rule).
 */
export function pagedCombineKernelWgsl(nq: number, dv: number): string {
  return /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> opart: array<f32>;
@group(0) @binding(2) var<storage, read> lpart: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${PAGED_BINDING_WGSL}
${SCORE_WGSL}
const NQ = ${nq}u;
var<workgroup> red: array<f32, ${COMBINE_THREADS}>;

@compute @workgroup_size(${COMBINE_THREADS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x;
  let bh = wid.y;                 // b · Hq + h
  let b = bh / params.hq;
  let h = bh % params.hq;
  let nseq = pt[0];
  let s0 = pt[nseq + 3u + b];
  let s1 = pt[nseq + 4u + b];
  let sink = select(NEG_INF, sink_logit(h), s1 > s0);
  let ns = s1 - s0;
  let base = (s0 * params.hq + h) * NQ + row;
  let step = params.hq * NQ;     // from one split's partial of this row to the next
  let orow = bh * NQ + row;
  let lse_at = orow;
${lseCombineBodyWgsl(dv)}
}
`;
}
