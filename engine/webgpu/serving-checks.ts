// Kernel checks of the serving layouts on the GPU (small shapes, so SwiftShader runs them in
// the browser test and the benchmark's self-test runs them on a real GPU): every variant
// against engine/layouts' float64 references, referenceVarlen and referencePaged.
//
// The variants cover what each kernel decides per sequence: empty sequences on either side,
// nk ≠ nq under a bottom-right causal mask, windows, GQA/MQA, sinks, ALiBi, softcap, dv ≠ d,
// sequences shorter than a query block next to ones that end mid-block (a block that read past
// its sequence's rows would mix two sequences); paged: pages shuffled in the
// pool, partial last pages, a sequence with no tokens, table entries past a sequence's pages
// that are out of range, and every slot no sequence owns filled with NaN — one read of one of
// them turns a whole row of O into NaN.

import { mulberry32, normalSource } from '../core/random.ts';
import { referencePaged, type PagedInputs, type PagedProblem } from '../layouts/paged.ts';
import { referenceVarlen, seqOffsets, type VarlenInputs, type VarlenProblem } from '../layouts/varlen.ts';
import { roundArray } from '../core/dtype.ts';
import type { WebGpuContext, WebGpuPath } from './device.ts';
import { pathElem } from './backend.ts';
import { PagedDecodeGpuRun, VarlenGpuRun, type PagedRunOptions, type VarlenRunOptions } from './serving-runs.ts';

export interface VarlenVariant {
  name: string;
  vp: VarlenProblem;
}

export interface PagedVariant {
  name: string;
  /** Sequence lengths; the pool and table are generated from them (pagedCase). */
  pageSize: number;
  cacheSeqlens: number[];
  nq: number;
  base: PagedProblem['base'];
}

export const VARLEN_VARIANTS: VarlenVariant[] = [
  {
    name: 'varlen: causal, GQA 2:1, nk ≠ nq, empty sequences',
    vp: {
      base: { hq: 4, hk: 2, d: 64, dv: 64, causal: true, dtype: 'fp32' },
      cuSeqlensQ: seqOffsets([1, 37, 0, 130, 5]),
      cuSeqlensK: seqOffsets([7, 37, 3, 150, 0]),
    },
  },
  {
    name: 'varlen: window, softcap, ALiBi, dv ≠ d',
    vp: {
      base: { hq: 2, hk: 2, d: 32, dv: 48, causal: false, window: { left: 20, right: 3 }, softcap: 5, alibi: 'standard', dtype: 'fp32' },
      cuSeqlensQ: seqOffsets([70, 3, 90]),
      cuSeqlensK: seqOffsets([70, 40, 90]),
    },
  },
  {
    name: 'varlen: sinks, MQA, odd head dim, a sequence without keys',
    vp: {
      base: { hq: 3, hk: 1, d: 20, dv: 20, causal: false, sinks: [0.5, -1, 2], dtype: 'fp32' },
      cuSeqlensQ: seqOffsets([33, 65, 2, 1]),
      cuSeqlensK: seqOffsets([40, 65, 0, 300]),
    },
  },
  {
    name: 'varlen: causal, d = 128',
    vp: {
      base: { hq: 2, hk: 1, d: 128, dv: 128, causal: true, dtype: 'fp32' },
      cuSeqlensQ: seqOffsets([100, 17, 64]),
      cuSeqlensK: seqOffsets([100, 17, 200]),
    },
  },
];

export const PAGED_VARIANTS: PagedVariant[] = [
  {
    name: 'paged decode: GQA 4:1, page 16, an empty sequence',
    pageSize: 16,
    cacheSeqlens: [1, 100, 0, 333],
    nq: 1,
    base: { hq: 8, hk: 2, d: 64, dv: 64, causal: false, dtype: 'fp32' },
  },
  {
    name: 'paged chunk Nq = 2: causal, GQA 2:1, ALiBi, sinks, page 8, dv ≠ d',
    pageSize: 8,
    cacheSeqlens: [2, 61, 96],
    nq: 2,
    base: { hq: 4, hk: 2, d: 32, dv: 48, causal: true, alibi: 'standard', sinks: [0.5, -1, 2, 0], dtype: 'fp32' },
  },
  {
    name: 'paged decode: MQA, d = 128, page 64, softcap',
    pageSize: 64,
    cacheSeqlens: [700, 64, 65],
    nq: 1,
    base: { hq: 4, hk: 1, d: 128, dv: 128, causal: false, softcap: 5, dtype: 'fp32' },
  },
  // 16 rows per key head: two workgroups of 4 heads × 2 rows each read the group's K/V
  {
    name: 'paged chunk Nq = 2: causal, GQA 8:1 (query heads in two chunks), page 32',
    pageSize: 32,
    cacheSeqlens: [40, 1, 200],
    nq: 2,
    base: { hq: 8, hk: 1, d: 64, dv: 64, causal: true, dtype: 'fp32' },
  },
];

function normals(n: number, next: () => number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = next();
  return a;
}

export function varlenInputs(vp: VarlenProblem, seed: number): VarlenInputs {
  const next = normalSource(mulberry32(seed));
  const { hq, hk, d, dv } = vp.base;
  const tq = vp.cuSeqlensQ[vp.cuSeqlensQ.length - 1];
  const tk = vp.cuSeqlensK[vp.cuSeqlensK.length - 1];
  return { q: normals(tq * hq * d, next), k: normals(tk * hk * d, next), v: normals(tk * hk * dv, next) };
}

/**
 * A paged problem for the lengths: a pool with two spare pages, pages dealt to the sequences
 * in a shuffled order, table entries past a sequence's pages set to out-of-range indices, and
 * NaN in every slot no sequence owns (whole spare pages and the tails of partial last pages).
 */
export function pagedCase(v: PagedVariant, seed: number): { pp: PagedProblem; x: PagedInputs } {
  const rand = mulberry32(seed);
  const next = normalSource(rand);
  const P = v.pageSize;
  const { hq, hk, d, dv } = v.base;
  const B = v.cacheSeqlens.length;
  const pagesPer = v.cacheSeqlens.map((L) => Math.ceil(L / P));
  const maxPages = Math.max(1, ...pagesPer) + 1;
  const numPages = pagesPer.reduce((a, n) => a + n, 0) + 2;
  const order = Array.from({ length: numPages }, (_, i) => i);
  for (let i = numPages - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const blockTable = new Array<number>(B * maxPages).fill(numPages + 7); // out of range: never needed
  let taken = 0;
  const owned = new Uint8Array(numPages * P);
  v.cacheSeqlens.forEach((L, b) => {
    for (let j = 0; j < pagesPer[b]; j++) {
      const page = order[taken++];
      blockTable[b * maxPages + j] = page;
      for (let t = 0; t < Math.min(P, L - j * P); t++) owned[page * P + t] = 1;
    }
  });
  const kCache = normals(numPages * P * hk * d, next);
  const vCache = normals(numPages * P * hk * dv, next);
  for (let s = 0; s < numPages * P; s++) {
    if (owned[s]) continue;
    kCache.fill(NaN, s * hk * d, (s + 1) * hk * d);
    vCache.fill(NaN, s * hk * dv, (s + 1) * hk * dv);
  }
  const pp: PagedProblem = { base: v.base, batch: B, nq: v.nq, numPages, pageSize: P, maxPages, blockTable, cacheSeqlens: v.cacheSeqlens };
  return { pp, x: { q: normals(B * hq * v.nq * d, next), kCache, vCache } };
}

/** One check's row: a problem's largest errors against the float64 reference, or why it did not run. */
export interface CheckRow {
  path: WebGpuPath;
  variant: string;
  maxErrO: number;
  maxErrLse: number;
  config: string;
  error?: string;
}

export interface ServingCheck extends CheckRow {
  kind: 'varlen' | 'paged';
}

/** What a check row says of a run that threw: no error figures, the run's own message. */
export function failedRow(e: unknown): { maxErrO: number; maxErrLse: number; config: string; error: string } {
  return { maxErrO: NaN, maxErrLse: NaN, config: '', error: e instanceof Error ? e.message : String(e) };
}

/** Largest |got − ref| (equal values count 0, so −∞ = −∞); a NaN or a length mismatch is Infinity. */
export function maxErr(got: Float32Array, ref: ArrayLike<number>): number {
  let e = 0;
  for (let i = 0; i < got.length; i++) {
    const d = got[i] === ref[i] ? 0 : Math.abs(got[i] - ref[i]);
    e = Math.max(e, Number.isNaN(d) ? Infinity : d);
  }
  return got.length === ref.length ? e : Infinity;
}

/** The varlen forward on `path` (f16 paths: inputs rounded to fp16, the reference from the rounded ones). */
export async function checkVarlen(
  ctx: WebGpuContext,
  path: WebGpuPath,
  variants = VARLEN_VARIANTS,
  opts: Omit<VarlenRunOptions, 'path'> = {},
): Promise<ServingCheck[]> {
  const out: ServingCheck[] = [];
  for (const v of variants) {
    const f16 = pathElem(path) === 'f16';
    const vp: VarlenProblem = { ...v.vp, base: { ...v.vp.base, dtype: f16 ? 'fp16' : 'fp32' } };
    const raw = varlenInputs(vp, 11);
    const x = f16 ? { q: roundArray('fp16', raw.q), k: roundArray('fp16', raw.k), v: roundArray('fp16', raw.v) } : raw;
    let run: VarlenGpuRun | undefined;
    try {
      const ref = referenceVarlen(vp, x);
      run = await VarlenGpuRun.create(ctx, vp, { path, ...opts });
      run.upload(x);
      await run.execute();
      const r = await run.read();
      out.push({
        kind: 'varlen',
        path,
        variant: v.name,
        maxErrO: maxErr(r.o, ref.o),
        maxErrLse: maxErr(r.lse, ref.lse),
        config: run.config,
      });
    } catch (e) {
      out.push({ kind: 'varlen', path, variant: v.name, ...failedRow(e) });
    } finally {
      run?.destroy();
    }
  }
  return out;
}

/** Paged flash-decoding (f16 q and K/V: the reference sees the fp16-rounded inputs) on every paged variant. */
export async function checkPaged(ctx: WebGpuContext, variants = PAGED_VARIANTS, opts: PagedRunOptions = {}): Promise<ServingCheck[]> {
  const out: ServingCheck[] = [];
  for (const v of variants) {
    let run: PagedDecodeGpuRun | undefined;
    try {
      const { pp, x: raw } = pagedCase(v, 5);
      const x = { q: roundArray('fp16', raw.q), kCache: roundArray('fp16', raw.kCache), vCache: roundArray('fp16', raw.vCache) };
      const ref = referencePaged(pp, x);
      run = await PagedDecodeGpuRun.create(ctx, pp, opts);
      run.upload(x);
      await run.execute();
      const r = await run.read();
      out.push({
        kind: 'paged',
        path: 'decode',
        variant: v.name,
        maxErrO: maxErr(r.o, ref.o),
        maxErrLse: maxErr(r.lse, ref.lse),
        config: run.config,
      });
    } catch (e) {
      out.push({ kind: 'paged', path: 'decode', variant: v.name, ...failedRow(e) });
    } finally {
      run?.destroy();
    }
  }
  return out;
}
