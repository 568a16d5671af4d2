// Bringing the person's own Q, K, V into a run. The files are read through ByteSources, so
// a multi-gigabyte file costs a header read plus the slices of the one (batch, head) that
// will be stepped through. Every check a real file can fail names the tensor and what is
// wrong, before anything reaches a debugger session.

import { TensorFileError, type ByteSource } from '../io/byte-source.ts';
import { countNonFinite, nonFiniteSentence } from '../core/nonfinite.ts';
import { readNpyInfo } from '../io/npy.ts';
import { readSafetensorsInfo } from '../io/safetensors.ts';
import { readElements, type TensorInfo } from '../io/tensor-info.ts';
import { integerValuesMessage, isIntegerStorage, type StoredFloat } from '../io/float-codec.ts';
import { kvHead, type AttentionInputs } from '../core/inputs.ts';
import { standardAlibiSlopes, type AttentionProblem, type DType, type ProblemDims } from '../core/problem.ts';

/** BHND: [batch, heads, seq, dim] (FlashScope's own order). BNHD: [batch, seq, heads, dim] (FlashAttention's q/k/v). */
export type Layout = 'BHND' | 'BNHD';

export interface FileListing {
  name: string;
  size: number;
  kind: 'npy' | 'safetensors';
  tensors: TensorInfo[];
}

/** A tensor inside the imported files: file index and tensor name (a .npy file's one tensor has its file's name). */
export interface TensorRef {
  file: number;
  tensor: string;
}

export interface TensorChoice {
  q: TensorRef;
  k: TensorRef;
  v: TensorRef;
  /** Optional 1-D per-query-head tensors. */
  sinks?: TensorRef;
  alibi?: TensorRef;
  layout: Layout;
  batch: number;
  head: number;
}

/** What a LoadRequest carries: the file handles (Blob/File, cloned by reference) and the choice. */
export interface TensorImport extends TensorChoice {
  files: Blob[];
  names: string[];
}

/** The sizes the imported tensors give the problem. */
export type ImportedShape = ProblemDims;

export class ImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportError';
  }
}

/** Lists the tensors of one file; the file type comes from its name, the parsers check the bytes. */
export async function listTensors(src: ByteSource): Promise<FileListing> {
  const name = src.name ?? 'file';
  if (/\.npy$/i.test(name)) {
    const info = await readNpyInfo(src);
    return { name, size: src.size, kind: 'npy', tensors: [{ ...info, name }] };
  }
  if (/\.safetensors$/i.test(name)) return { name, size: src.size, kind: 'safetensors', tensors: await readSafetensorsInfo(src) };
  throw new TensorFileError(`${name}: not a tensor file FlashScope reads (expected a .npy or .safetensors file name)`);
}

const label = (what: string, t: TensorInfo) => `${what} (${t.name}, shape [${t.shape.join(', ')}])`;

/** Q, K, V as rank-4 shapes; a rank-3 tensor is read as batch 1. */
function rank4(what: string, t: TensorInfo): number[] {
  if (t.shape.length === 4) return t.shape;
  if (t.shape.length === 3) return [1, ...t.shape];
  throw new ImportError(
    `${label(what, t)} must have 4 dimensions (batch, heads, seq, dim or batch, seq, heads, dim) or 3 (no batch); it has ${t.shape.length}`,
  );
}

/** The problem's dimensions under one layout, or the first reason that layout cannot be right. */
export function shapesUnder(layout: Layout, q: TensorInfo, k: TensorInfo, v: TensorInfo): ImportedShape {
  const [qs, ks, vs] = [rank4('Q', q), rank4('K', k), rank4('V', v)];
  const split = (s: number[]) => (layout === 'BHND' ? { b: s[0], h: s[1], n: s[2], d: s[3] } : { b: s[0], n: s[1], h: s[2], d: s[3] });
  const Q = split(qs);
  const K = split(ks);
  const V = split(vs);
  for (const [what, t] of [
    ['Q', Q],
    ['K', K],
    ['V', V],
  ] as const) {
    if (t.b === 0 || t.h === 0 || t.n === 0 || t.d === 0)
      throw new ImportError(`${what} has an empty dimension (shape [${(what === 'Q' ? qs : what === 'K' ? ks : vs).join(', ')}])`);
  }
  if (Q.b !== K.b || K.b !== V.b) throw new ImportError(`Q, K and V must have the same batch size; got ${Q.b}, ${K.b}, ${V.b}`);
  if (Q.d !== K.d) throw new ImportError(`Q and K must have the same head dim (QKᵀ); got ${Q.d} and ${K.d}`);
  if (K.n !== V.n) throw new ImportError(`K and V must have the same sequence length (${layout}); got ${K.n} and ${V.n}`);
  if (K.h !== V.h) throw new ImportError(`K and V must have the same number of heads (${layout}); got ${K.h} and ${V.h}`);
  if (Q.h % K.h !== 0) throw new ImportError(`query heads (${Q.h}) must be a multiple of key/value heads (${K.h}) under layout ${layout}`);
  return { batch: Q.b, hq: Q.h, hk: K.h, nq: Q.n, nk: K.n, d: Q.d, dv: V.d };
}

/**
 * The layout when only one fits the shapes; otherwise both (the person picks). A layout
 * fits when Q, K and V agree under it (same batch, head dims, K/V lengths, heads dividing).
 */
export function detectLayout(q: TensorInfo, k: TensorInfo, v: TensorInfo): { fits: Layout[]; reasons: Partial<Record<Layout, string>> } {
  const fits: Layout[] = [];
  const reasons: Partial<Record<Layout, string>> = {};
  for (const l of ['BHND', 'BNHD'] as const) {
    try {
      shapesUnder(l, q, k, v);
      fits.push(l);
    } catch (e) {
      reasons[l] = (e as Error).message;
    }
  }
  return { fits, reasons };
}

/** Problem dtype from the stored types: a shared 16-bit type is kept, anything mixed or wider runs in fp32. */
export function dtypeOf(types: StoredFloat[]): DType {
  if (types.every((t) => t === 'float16')) return 'fp16';
  if (types.every((t) => t === 'bfloat16')) return 'bf16';
  return 'fp32';
}

/** Reads are grouped so one read covers at most this many bytes of the file. */
const READ_CHUNK_BYTES = 8 << 20;

/**
 * One (batch, head) of a rank-4 tensor as [seq × dim] float32: one contiguous read under
 * BHND; under BNHD, strided rows gathered from reads of bounded size.
 */
export async function readHead(src: ByteSource, t: TensorInfo, layout: Layout, b: number, h: number): Promise<Float32Array> {
  const s = t.shape.length === 3 ? [1, ...t.shape] : t.shape;
  const [B, d] = [s[0], s[3]];
  const [H, N] = layout === 'BHND' ? [s[1], s[2]] : [s[2], s[1]];
  if (b < 0 || b >= B || h < 0 || h >= H)
    throw new ImportError(`${t.name}: no (batch ${b}, head ${h}); it has ${B} batches and ${H} heads`);
  const out = new Float32Array(N * d);
  if (layout === 'BHND') {
    out.set(await readElements(src, t, (b * H + h) * N * d, N * d));
    return out;
  }
  const elem = t.byteLength / Math.max(1, B * N * H * d);
  const rowsPerRead = Math.max(1, Math.floor(READ_CHUNK_BYTES / (H * d * elem)));
  for (let n0 = 0; n0 < N; n0 += rowsPerRead) {
    const n1 = Math.min(N, n0 + rowsPerRead);
    const start = ((b * N + n0) * H + h) * d;
    const span = ((n1 - 1 - n0) * H + 1) * d;
    const chunk = await readElements(src, t, start, span);
    for (let n = n0; n < n1; n++) out.set(chunk.subarray((n - n0) * H * d, (n - n0) * H * d + d), n * d);
  }
  return out;
}

function checkFinite(what: string, a: Float32Array, cols: number, b: number, h: number): void {
  const c = countNonFinite(a);
  // The same sentence the CLI's run prints as a warning, for the one head read here.
  if (c.count > 0) throw new ImportError(nonFiniteSentence(what, c, [1, 1, a.length / cols, cols], { batch: b, head: h }));
}

function find(listings: FileListing[], ref: TensorRef, what: string): TensorInfo {
  const f = listings[ref.file];
  const t = f?.tensors.find((x) => x.name === ref.tensor);
  if (!t) throw new ImportError(`${what}: no tensor '${ref.tensor}' in ${f ? f.name : `file #${ref.file}`}`);
  return t;
}

async function perHeadValue(src: ByteSource, t: TensorInfo, what: string, hq: number, head: number): Promise<number> {
  if (isIntegerStorage(t.dtype)) throw new ImportError(integerValuesMessage(`${what} (${t.name})`, t.dtype));
  if (t.shape.length !== 1 || t.shape[0] !== hq) {
    throw new ImportError(`${label(what, t)} must be 1-D with one value per query head (${hq})`);
  }
  const v = (await readElements(src, t, head, 1))[0];
  if (!Number.isFinite(v)) throw new ImportError(`${what} (${t.name}) holds ${v} for head ${head}; it must be finite`);
  return v;
}

/** The most one head of Q, K and V may take as float32: what a run holds besides its trace. */
export const MAX_HEAD_BYTES = 256 * 2 ** 20;

/** Refuses, from the headers' shapes alone, a head too large to read, naming the dimensions to change. */
function checkHeadBytes(full: ImportedShape): void {
  const bytes = 4 * (full.nq * full.d + full.nk * (full.d + full.dv));
  if (bytes <= MAX_HEAD_BYTES) return;
  const mb = (x: number) => Math.round(x / 2 ** 20);
  throw new ImportError(
    `one head of Q, K and V (Nq ${full.nq}, Nk ${full.nk}, d ${full.d}, dv ${full.dv}) would take ${mb(bytes)} MB as float32; ` +
      `FlashScope reads at most ${mb(MAX_HEAD_BYTES)} MB of one head: choose tensors with a shorter sequence (Nq, Nk) or a smaller head dim (d, dv)`,
  );
}

export interface ImportedRun {
  /** The stepped problem: the chosen (batch, head) as a single-head problem. */
  problem: AttentionProblem;
  inputs: AttentionInputs;
  /** Dimensions of the whole tensors in the files. */
  full: ImportedShape;
}

/**
 * Checks the choice against the files and reads the chosen head. `base` supplies what the
 * files do not say (mask, window, softcap, scale); shapes and dtype come from the files.
 */
export async function importRun(
  sources: ByteSource[],
  listings: FileListing[],
  c: TensorChoice,
  base: AttentionProblem,
  admit?: (problem: AttentionProblem) => void,
): Promise<ImportedRun> {
  const q = find(listings, c.q, 'Q');
  const k = find(listings, c.k, 'K');
  const v = find(listings, c.v, 'V');
  // Integer files list fine (they may be a serving layout's offsets or block table), but are never Q, K or V.
  for (const [what, t] of [
    ['Q', q],
    ['K', k],
    ['V', v],
  ] as const)
    if (isIntegerStorage(t.dtype)) throw new ImportError(integerValuesMessage(`${what} (${t.name})`, t.dtype));
  const full = shapesUnder(c.layout, q, k, v);
  if (!Number.isInteger(c.batch) || c.batch < 0 || c.batch >= full.batch)
    throw new ImportError(`batch ${c.batch} is out of range: the tensors have ${full.batch} (0 to ${full.batch - 1})`);
  if (!Number.isInteger(c.head) || c.head < 0 || c.head >= full.hq)
    throw new ImportError(`head ${c.head} is out of range: Q has ${full.hq} heads (0 to ${full.hq - 1})`);
  checkHeadBytes(full);
  const problem: AttentionProblem = {
    ...base,
    batch: 1,
    hq: 1,
    hk: 1,
    nq: full.nq,
    nk: full.nk,
    d: full.d,
    dv: full.dv,
    dtype: dtypeOf([q.dtype, k.dtype, v.dtype]),
  };
  delete problem.sinks;
  // The stepped problem has one head, so 'standard' slopes must be those of the chosen head among all Hq.
  if (base.alibi === 'standard') problem.alibi = [standardAlibiSlopes(full.hq)[c.head]];
  else delete problem.alibi;
  admit?.(problem);
  const kvh = kvHead(full, c.head);
  const qa = await readHead(sources[c.q.file], q, c.layout, c.batch, c.head);
  const ka = await readHead(sources[c.k.file], k, c.layout, c.batch, kvh);
  const va = await readHead(sources[c.v.file], v, c.layout, c.batch, kvh);
  checkFinite('Q', qa, full.d, c.batch, c.head);
  checkFinite('K', ka, full.d, c.batch, kvh);
  checkFinite('V', va, full.dv, c.batch, kvh);
  if (c.sinks) problem.sinks = [await perHeadValue(sources[c.sinks.file], find(listings, c.sinks, 'sinks'), 'sinks', full.hq, c.head)];
  if (c.alibi)
    problem.alibi = [await perHeadValue(sources[c.alibi.file], find(listings, c.alibi, 'ALiBi slopes'), 'ALiBi slopes', full.hq, c.head)];
  return { problem, inputs: { q: qa, k: ka, v: va }, full };
}

/** Names that say which tensor is which: q/query, k/key, v/value (any case, as a word or the whole name). */
export function guessRole(name: string): 'q' | 'k' | 'v' | 'sinks' | 'alibi' | undefined {
  const base = name.replace(/\.(npy|safetensors)$/i, '').toLowerCase();
  const words = base.split(/[^a-z0-9]+/).filter(Boolean);
  const has = (...w: string[]) => words.some((x) => w.includes(x));
  if (has('sinks', 'sink')) return 'sinks';
  if (has('alibi', 'slopes')) return 'alibi';
  if (has('q', 'query', 'queries', 'xq')) return 'q';
  if (has('k', 'key', 'keys', 'xk')) return 'k';
  if (has('v', 'value', 'values', 'xv')) return 'v';
  return undefined;
}
