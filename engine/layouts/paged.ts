// A paged K/V cache (flash_attn_with_kvcache's block_table, vLLM's PagedAttention,
// TensorRT-LLM's Q_PAGED_KV layout): K and V live in a pool of fixed-size pages,
// k_cache [num_pages, page_size, Hk, d] and v_cache [num_pages, page_size, Hk, dv]; sequence
// b holds cache_seqlens[b] tokens, and its logical key position j is slot j mod page_size
// of page block_table[b, floor(j / page_size)]. Entries of the table past a sequence's
// ceil(cache_seqlens[b] / page_size) pages are unused and never read, and neither is any
// slot past a sequence's last token: the hidden check fills those with NaN.
//
// Queries are dense, q [B, Nq, Hq, d]: one decode step (Nq = 1) or a chunk of Nq new tokens
// whose causal mask is aligned bottom-right (query i sees keys j ≤ i + cache_seqlens[b] − Nq).
//
// Traffic: the K/V bytes are the dense ones (a partial last page is read only up to the
// sequence's end); on top, each K/V tile load reads the table entry of every page it spans
// (4 bytes; 8 for fmha_v2, whose Q_PAGED_KV table holds a K and a V index per page), and
// each Q tile load reads the sequence's cache_seqlens entry (4 bytes). Trace events whose
// columns are keys carry `pages`, the physical pages those columns lie in.
//
// K/V tiles never straddle two pages unless the tile is wider than a page: without an
// explicit --block-n the tile width is the algorithm's default cut down to the largest
// divisor of page_size (FA2's paged path likewise needs page_block_size % kBlockN == 0).

import { resolveBlocks } from '../algorithms/blocks.ts';
import { descriptorOf } from '../algorithms/registry.ts';
import type { RunOptions, StepAlgorithm } from '../algorithms/types.ts';
import { ProblemError } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import type { EventAnnotator } from '../trace/tracer.ts';
import { decodingSplitFeatures } from '../algorithms/flash-decoding/splits.ts';
import {
  runSequences,
  sequenceProblem,
  type LayoutBase,
  type LayoutGenerator,
  type LayoutRunResult,
  type SequenceWork,
} from './sequence-runner.ts';

export interface PagedProblem {
  base: LayoutBase;
  batch: number;
  /** Query rows per sequence (1 for a decode step). */
  nq: number;
  numPages: number;
  pageSize: number;
  /** Columns of the block table (max pages per sequence). */
  maxPages: number;
  /** [B, maxPages], row-major. */
  blockTable: readonly number[];
  /** [B]: tokens in the cache per sequence. */
  cacheSeqlens: readonly number[];
}

export interface PagedInputs {
  /** [B, Hq, Nq, d] (BHND, as the dense engine holds Q). */
  q: Float32Array;
  /** [num_pages, page_size, Hk, d] */
  kCache: Float32Array;
  /** [num_pages, page_size, Hk, dv] */
  vCache: Float32Array;
}

export const pagesOf = (pp: PagedProblem, b: number): number => Math.ceil(pp.cacheSeqlens[b] / pp.pageSize);

/** Physical page of logical key position j of sequence b. */
export const physicalPage = (pp: PagedProblem, b: number, j: number): number =>
  pp.blockTable[b * pp.maxPages + Math.floor(j / pp.pageSize)];

/** Validates the table and lengths against the pool; throws ProblemError naming the tensor and index. */
export function validatePaged(pp: PagedProblem, x: PagedInputs): void {
  const { hq, hk, d, dv } = pp.base;
  const { batch: B, nq, numPages, pageSize, maxPages } = pp;
  if (x.q.length !== B * hq * nq * d)
    throw new ProblemError('q', `expected [B=${B}, Nq=${nq}, Hq=${hq}, d=${d}] = ${B * hq * nq * d} elements, got ${x.q.length}`);
  if (x.kCache.length !== numPages * pageSize * hk * d) {
    throw new ProblemError(
      'k_cache',
      `expected [num_pages=${numPages}, page_size=${pageSize}, Hk=${hk}, d=${d}] elements, got ${x.kCache.length}`,
    );
  }
  if (x.vCache.length !== numPages * pageSize * hk * dv) {
    throw new ProblemError(
      'v_cache',
      `expected [num_pages=${numPages}, page_size=${pageSize}, Hk=${hk}, dv=${dv}] elements, got ${x.vCache.length}`,
    );
  }
  if (pp.blockTable.length !== B * maxPages)
    throw new ProblemError('block_table', `expected [B=${B}, max_pages=${maxPages}], got ${pp.blockTable.length} entries`);
  if (pp.cacheSeqlens.length !== B)
    throw new ProblemError('cache_seqlens', `expected one length per sequence (B = ${B}), got ${pp.cacheSeqlens.length}`);
  for (let b = 0; b < B; b++) {
    const L = pp.cacheSeqlens[b];
    if (!Number.isInteger(L) || L < 0) throw new ProblemError(`cache_seqlens[${b}]`, `must be an integer >= 0, got ${L}`);
    if (L > maxPages * pageSize) {
      throw new ProblemError(
        `cache_seqlens[${b}]`,
        `${L} tokens need ${Math.ceil(L / pageSize)} pages of ${pageSize}, but block_table has ${maxPages} columns (${maxPages * pageSize} tokens)`,
      );
    }
    for (let j = 0; j < Math.ceil(L / pageSize); j++) {
      const e = pp.blockTable[b * maxPages + j];
      if (!Number.isInteger(e) || e < 0 || e >= numPages) {
        throw new ProblemError(
          `block_table[${b}, ${j}]`,
          `page ${e} is out of range: k_cache/v_cache hold pages 0 … ${numPages - 1} (needed for tokens ${j * pageSize} … ${Math.min(L, (j + 1) * pageSize) - 1} of sequence ${b})`,
        );
      }
    }
  }
}

/** Largest divisor of n that is at most cap. */
export function largestDivisorAtMost(n: number, cap: number): number {
  for (let t = Math.min(n, cap); t > 1; t--) if (n % t === 0) return t;
  return 1;
}

/** The K/V tile width of `algo` on pages of `pageSize` (see the header), and how many tiles make a page (1 when a tile spans pages). */
export function pagedBlockN(
  algo: StepAlgorithm,
  pp: PagedProblem,
  opts: Pick<RunOptions, 'blockM' | 'blockN' | 'sramBytes'>,
): { blockN: number; blocksPerPage: number } {
  if (opts.blockN !== undefined) {
    const bn = opts.blockN;
    if (pp.pageSize % bn !== 0 && bn % pp.pageSize !== 0) {
      throw new ProblemError('blockN', `a K/V tile of ${bn} keys neither divides nor is a multiple of the page size ${pp.pageSize}`);
    }
    return { blockN: bn, blocksPerPage: pp.pageSize % bn === 0 ? pp.pageSize / bn : 1 };
  }
  const probe = sequenceProblem(pp.base, Math.max(1, pp.nq), Math.max(1, pp.pageSize));
  const natural = descriptorOf(algo.id).serving.pagedBlockN?.(probe) ?? resolveBlocks(probe, opts).blockN;
  const blockN = largestDivisorAtMost(pp.pageSize, natural);
  return { blockN, blocksPerPage: pp.pageSize / blockN };
}

/** Gathers sequence b's keys (or values) from the pool into BHND [1, Hk, L, e]: only owned slots are read. */
export function gatherPages(pp: PagedProblem, cache: Float32Array, e: number, b: number): Float32Array {
  const { hk } = pp.base;
  const L = pp.cacheSeqlens[b];
  const out = new Float32Array(hk * L * e);
  for (let j = 0; j < L; j++) {
    const slot = physicalPage(pp, b, j) * pp.pageSize + (j % pp.pageSize);
    for (let h = 0; h < hk; h++) {
      const s = (slot * hk + h) * e;
      out.set(cache.subarray(s, s + e), (h * L + j) * e);
    }
  }
  return out;
}

/** Physical pages of key columns [c0, c1) of sequence b, in logical order. */
export function pagesOfColumns(pp: PagedProblem, b: number, c0: number, c1: number): number[] {
  const out: number[] = [];
  if (c1 <= c0) return out;
  for (let j = Math.floor(c0 / pp.pageSize); j <= Math.floor((c1 - 1) / pp.pageSize); j++) out.push(pp.blockTable[b * pp.maxPages + j]);
  return out;
}

function pagedAnnotator(pp: PagedProblem, b: number, tableEntryBytes: number, touched: Set<number>): EventAnnotator {
  return (kind, base) => {
    const [c0, c1] = base.tile.cols;
    const hasCols = c1 > c0;
    const fields = hasCols ? () => ({ pages: pagesOfColumns(pp, b, c0, c1) }) : undefined;
    if (kind !== 'load') return fields ? { fields } : undefined;
    const read = base.delta.hbmRead ?? {};
    const extra: { block_table?: number; cache_seqlens?: number } = {};
    if (read.Q) extra.cache_seqlens = 4;
    if (hasCols && read.K) {
      const pages = pagesOfColumns(pp, b, c0, c1);
      for (const pg of pages) touched.add(pg);
      extra.block_table = pages.length * tableEntryBytes;
    } else if (hasCols && read.V) {
      for (const pg of pagesOfColumns(pp, b, c0, c1)) touched.add(pg);
    }
    return { hbmRead: extra, fields };
  };
}

export interface PagedRun {
  gen: LayoutGenerator;
  /** Distinct physical pages read so far (complete once the generator is done). */
  touched: Set<number>;
  blockN: number;
}

/** Steps `algo` over a paged cache; validate first (throws ProblemError naming the tensor and index). */
export function runPaged(algo: StepAlgorithm, pp: PagedProblem, x: PagedInputs, opts: Omit<RunOptions, 'annotate'>): PagedRun {
  validatePaged(pp, x);
  const { blockN, blocksPerPage } = pagedBlockN(algo, pp, opts);
  const runOpts = { ...opts, blockN };
  const lq = Array.from({ length: pp.batch }, () => pp.nq);
  const features = decodingSplitFeatures(algo, pp.base, lq, pp.cacheSeqlens, runOpts, blocksPerPage);
  const touched = new Set<number>();
  const tableEntryBytes = descriptorOf(algo.id).serving.pageTableEntryBytes;
  const { hq, d, dv } = pp.base;
  const work: SequenceWork[] = lq.map((nq, b) => {
    const nk = pp.cacheSeqlens[b];
    const w: SequenceWork = { b, nq, nk, annotate: pagedAnnotator(pp, b, tableEntryBytes, touched), features };
    if (nq > 0 && nk > 0) {
      w.problem = sequenceProblem(pp.base, nq, nk);
      w.inputs = () => ({
        q: x.q.slice(b * hq * nq * d, (b + 1) * hq * nq * d),
        k: gatherPages(pp, x.kCache, d, b),
        v: gatherPages(pp, x.vCache, dv, b),
      });
    }
    return w;
  });
  return { gen: runSequences(algo, pp.base, work, runOpts), touched, blockN };
}

/** o [B, Hq, Nq, dv] and lse [B, Hq, Nq] (BHND) from per-sequence results. */
export function pagedOutput(pp: PagedProblem, r: LayoutRunResult): { o: Float32Array; lse: Float32Array } {
  const { hq, dv } = pp.base;
  const n = pp.nq;
  const o = new Float32Array(pp.batch * hq * n * dv);
  const lse = new Float32Array(pp.batch * hq * n);
  r.outputs.forEach((s, b) => {
    if (!s) return;
    o.set(s.o, b * hq * n * dv);
    lse.set(s.lse, b * hq * n);
  });
  return { o, lse };
}

/** The float64 reference: the dense reference per sequence on its gathered keys (O = 0, LSE = −inf without keys). */
export function referencePaged(pp: PagedProblem, x: PagedInputs): { o: Float64Array; lse: Float64Array } {
  validatePaged(pp, x);
  const { hq, d, dv } = pp.base;
  const n = pp.nq;
  const o = new Float64Array(pp.batch * hq * n * dv);
  const lse = new Float64Array(pp.batch * hq * n).fill(-Infinity);
  if (n === 0) return { o, lse };
  for (let b = 0; b < pp.batch; b++) {
    const L = pp.cacheSeqlens[b];
    if (L === 0) continue;
    const r = referenceAttention(sequenceProblem(pp.base, n, L), {
      q: x.q.slice(b * hq * n * d, (b + 1) * hq * n * d),
      k: gatherPages(pp, x.kCache, d, b),
      v: gatherPages(pp, x.vCache, dv, b),
    });
    o.set(r.o, b * hq * n * dv);
    lse.set(r.lse, b * hq * n);
  }
  return { o, lse };
}
