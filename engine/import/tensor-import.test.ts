// Importing Q, K, V from files: layout detection, reading only the chosen head (checked
// against the values written), every shape/value problem named, and a fuzz run proving
// no file or choice makes the importer hang or throw anything but a named error.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemorySource, TensorFileError, type ByteSource } from '../io/byte-source.ts';
import { encodeNpy } from '../io/npy.ts';
import { encodeSafetensors } from '../io/safetensors-encode.ts';
import { DEFAULT_PROBLEM, standardAlibiSlopes } from '../core/problem.ts';
import { detectLayout, guessRole, ImportError, importRun, listTensors, readHead, type TensorChoice } from './tensor-import.ts';

const seq = (n: number, scale = 1) => Float32Array.from({ length: n }, (_, i) => ((i * 37) % 101) * scale - 50 * scale);

/** Counting source: records every read, to prove only the chosen head is read. */
class Counting extends MemorySource {
  reads: [number, number][] = [];
  override async read(offset: number, length: number): Promise<Uint8Array> {
    this.reads.push([offset, length]);
    return super.read(offset, length);
  }
}

async function files(layout: 'BHND' | 'BNHD', B: number, Hq: number, Hk: number, Nq: number, Nk: number, d: number, dv: number) {
  const shape = (H: number, N: number, D: number) => (layout === 'BHND' ? [B, H, N, D] : [B, N, H, D]);
  const q = seq(B * Hq * Nq * d);
  const k = seq(B * Hk * Nk * d, 0.5);
  const v = seq(B * Hk * Nk * dv, 0.25);
  const st = encodeSafetensors([
    { name: 'query', shape: shape(Hq, Nq, d), values: q },
    { name: 'key', shape: shape(Hk, Nk, d), values: k },
    { name: 'value', shape: shape(Hk, Nk, dv), values: v },
  ]);
  const src = new Counting(st, 'qkv.safetensors');
  return { src, q, k, v, listing: await listTensors(src) };
}

const choice = (layout: 'BHND' | 'BNHD', batch: number, head: number): TensorChoice => ({
  q: { file: 0, tensor: 'query' },
  k: { file: 0, tensor: 'key' },
  v: { file: 0, tensor: 'value' },
  layout,
  batch,
  head,
});

async function fails(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e instanceof ImportError || e instanceof TensorFileError, String(e)).toBe(true);
  expect((e as Error).message).toMatch(pattern);
}

describe('tensor import', () => {
  it('reads exactly the chosen (batch, head) under BHND and BNHD, with GQA picking the K/V head', async () => {
    for (const layout of ['BHND', 'BNHD'] as const) {
      const { src, q, k, v, listing } = await files(layout, 2, 4, 2, 6, 5, 3, 2);
      const run = await importRun([src], [listing], choice(layout, 1, 3), DEFAULT_PROBLEM);
      expect(run.full).toEqual({ batch: 2, hq: 4, hk: 2, nq: 6, nk: 5, d: 3, dv: 2 });
      expect(run.problem).toMatchObject({ batch: 1, hq: 1, hk: 1, nq: 6, nk: 5, d: 3, dv: 2, dtype: 'fp32' });
      const at = (a: Float32Array, H: number, N: number, D: number, b: number, h: number, n: number, c: number) =>
        a[layout === 'BHND' ? ((b * H + h) * N + n) * D + c : ((b * N + n) * H + h) * D + c];
      for (let n = 0; n < 6; n++) for (let c = 0; c < 3; c++) expect(run.inputs.q[n * 3 + c]).toBe(at(q, 4, 6, 3, 1, 3, n, c));
      // Query head 3 of 4 with 2 K/V heads reads K/V head 1.
      for (let n = 0; n < 5; n++) for (let c = 0; c < 3; c++) expect(run.inputs.k[n * 3 + c]).toBe(at(k, 2, 5, 3, 1, 1, n, c));
      for (let n = 0; n < 5; n++) for (let c = 0; c < 2; c++) expect(run.inputs.v[n * 2 + c]).toBe(at(v, 2, 5, 2, 1, 1, n, c));
    }
  });

  it('reads a BHND head with one read per tensor and never the whole file', async () => {
    const { src, listing } = await files('BHND', 2, 4, 4, 64, 64, 8, 8);
    src.reads = [];
    await importRun([src], [listing], choice('BHND', 0, 2), DEFAULT_PROBLEM);
    expect(src.reads.length).toBe(3);
    const read = src.reads.reduce((a, [, n]) => a + n, 0);
    expect(read).toBe(3 * 64 * 8 * 4);
    expect(read).toBeLessThan(src.size / 4);
  });

  it('gathers a BNHD head in bounded reads', async () => {
    const B = 1,
      N = 300,
      H = 8,
      D = 4;
    const q = seq(B * N * H * D);
    const t = (await listTensors(new MemorySource(encodeNpy(q, [B, N, H, D]), 'q.npy'))).tensors[0];
    const src = new Counting(encodeNpy(q, [B, N, H, D]), 'q.npy');
    const head = await readHead(src, t, 'BNHD', 0, 5);
    for (let n = 0; n < N; n++) for (let c = 0; c < D; c++) expect(head[n * D + c]).toBe(q[(n * H + 5) * D + c]);
    expect(Math.max(...src.reads.map(([, n]) => n))).toBeLessThanOrEqual(8 << 20);
  });

  it('detects the layout where only one fits, and reports both where both do', async () => {
    const info = (shape: number[]) => ({ name: 'x', dtype: 'float32' as const, shape, dataOffset: 0, byteLength: 0 });
    // Q has 8 heads, K/V 2: under BNHD the "heads" would be 100 and 64, and 100 % 64 ≠ 0.
    expect(detectLayout(info([1, 8, 100, 16]), info([1, 2, 64, 16]), info([1, 2, 64, 16])).fits).toEqual(['BHND']);
    expect(detectLayout(info([1, 100, 8, 16]), info([1, 64, 2, 16]), info([1, 64, 2, 16])).fits).toEqual(['BNHD']);
    expect(detectLayout(info([1, 4, 64, 16]), info([1, 4, 64, 16]), info([1, 4, 64, 16])).fits).toEqual(['BHND', 'BNHD']);
    const none = detectLayout(info([1, 4, 64, 16]), info([1, 4, 64, 8]), info([1, 4, 64, 16]));
    expect(none.fits).toEqual([]);
    expect(none.reasons.BHND).toMatch(/same head dim/);
  });

  it('names every shape and value problem', async () => {
    const np = (name: string, v: ArrayLike<number>, shape: number[], dtype: 'float16' | 'float32' = 'float32') =>
      new MemorySource(encodeNpy(v, shape, dtype), name);
    const run = async (srcs: ByteSource[], c: Partial<TensorChoice> = {}) =>
      importRun(
        srcs,
        await Promise.all(srcs.map(listTensors)),
        {
          q: { file: 0, tensor: srcs[0].name! },
          k: { file: 1, tensor: srcs[1].name! },
          v: { file: 2, tensor: srcs[2].name! },
          layout: 'BHND',
          batch: 0,
          head: 0,
          ...c,
        },
        DEFAULT_PROBLEM,
      );
    const Q = np('q.npy', seq(2 * 8 * 4), [1, 2, 8, 4]);
    const K = np('k.npy', seq(2 * 8 * 4), [1, 2, 8, 4]);
    const V = np('v.npy', seq(2 * 8 * 4), [1, 2, 8, 4]);
    await fails(run([Q, np('k.npy', seq(2 * 8 * 3), [1, 2, 8, 3]), V]), /same head dim.*4 and 3/);
    await fails(run([Q, K, np('v.npy', seq(2 * 7 * 4), [1, 2, 7, 4])]), /same sequence length.*8 and 7/);
    await fails(run([np('q.npy', seq(8 * 4), [8, 4]), K, V]), /must have 4 dimensions.*it has 2/);
    await fails(run([np('q.npy', seq(3 * 8 * 4), [1, 3, 8, 4]), K, V]), /query heads \(3\) must be a multiple of key\/value heads \(2\)/);
    await fails(run([np('q.npy', seq(4 * 8 * 4), [2, 2, 8, 4]), K, V]), /same batch size; got 2, 1, 1/);
    await fails(run([Q, K, V], { head: 2 }), /head 2 is out of range: Q has 2 heads/);
    await fails(run([Q, K, V], { batch: 1 }), /batch 1 is out of range/);
    const nan = seq(2 * 8 * 4);
    nan[8 * 4 + 5] = NaN;
    await fails(run([np('q.npy', nan, [1, 2, 8, 4]), K, V], { head: 1 }), /Q holds NaN at row 1, column 1 of batch 0, head 1/);
    const inf = seq(2 * 8 * 4);
    inf[3] = Infinity;
    await fails(run([Q, K, np('v.npy', inf, [1, 2, 8, 4])]), /V holds Infinity at row 0, column 3/);
    // A whole head of NaN: the sentence the CLI's run prints as its warning (engine/core/nonfinite.ts).
    const allNan = seq(2 * 8 * 4).map((x, i) => (i >= 32 ? NaN : x));
    await fails(
      run([np('q.npy', allNan, [1, 2, 8, 4]), K, V], { head: 1 }),
      /^Q holds NaN at row 0, column 0 of batch 0, head 1 and 31 more non-finite values \(32 of 32: 32 NaN, 0 ±Infinity\); attention inputs must be finite$/,
    );
    // Non-finite values in a head that is not stepped through do not matter.
    await expect(run([np('q.npy', nan, [1, 2, 8, 4]), K, V], { head: 0 })).resolves.toBeDefined();
    await fails(
      run([Q, K, V, np('s.npy', [1, 2, 3], [3])], { sinks: { file: 3, tensor: 's.npy' } }),
      /sinks.*must be 1-D with one value per query head \(2\)/,
    );
    await fails(
      run([Q, K, V, np('s.npy', [1, NaN], [2])], { sinks: { file: 3, tensor: 's.npy' }, head: 1 }),
      /sinks \(s.npy\) holds NaN for head 1/,
    );
    await fails(run([Q, K, V], { q: { file: 0, tensor: 'nope' } }), /Q: no tensor 'nope' in q.npy/);
    await fails(listTensors(new MemorySource(new Uint8Array(20), 'notes.txt')), /not a tensor file/);
  });

  it('takes sinks, ALiBi slopes and the dtype from the files', async () => {
    const np = (name: string, v: ArrayLike<number>, shape: number[], dtype: 'float16' | 'float32' = 'float16') =>
      new MemorySource(encodeNpy(v, shape, dtype), name);
    const srcs = [
      np('q.npy', seq(4 * 4 * 2, 0.01), [1, 4, 4, 2]),
      np('k.npy', seq(4 * 4 * 2, 0.01), [1, 4, 4, 2]),
      np('v.npy', seq(4 * 4 * 2, 0.01), [1, 4, 4, 2]),
      np('sinks.npy', [0.5, 1.5, 2.5, 3.5], [4], 'float32'),
    ];
    const listings = await Promise.all(srcs.map(listTensors));
    const c: TensorChoice = {
      q: { file: 0, tensor: 'q.npy' },
      k: { file: 1, tensor: 'k.npy' },
      v: { file: 2, tensor: 'v.npy' },
      layout: 'BHND',
      batch: 0,
      head: 2,
      sinks: { file: 3, tensor: 'sinks.npy' },
    };
    const r = await importRun(srcs, listings, c, { ...DEFAULT_PROBLEM, alibi: 'standard' });
    expect(r.problem.dtype).toBe('fp16');
    expect(r.problem.sinks).toEqual([2.5]);
    expect(r.problem.alibi).toEqual([standardAlibiSlopes(4)[2]]);
  });

  it('guesses roles from names', () => {
    expect(['q.npy', 'query', 'layer0.xq', 'K.npy', 'keys', 'v_proj.value', 'sinks', 'alibi_slopes', 'out'].map(guessRole)).toEqual([
      'q',
      'q',
      'q',
      'k',
      'k',
      'v',
      'sinks',
      'alibi',
      undefined,
    ]);
  });

  it('fuzz: mutated files and random choices end in a named error or a run, never a hang or a crash', async () => {
    const { src } = await files('BHND', 1, 2, 2, 4, 4, 2, 2);
    const good = await (src as MemorySource).read(0, src.size);
    const copy = Uint8Array.from(good);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(copy.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
        fc.nat(copy.length),
        fc.constantFrom('BHND' as const, 'BNHD' as const),
        fc.integer({ min: -1, max: 3 }),
        fc.integer({ min: -1, max: 3 }),
        async (edits, cut, layout, batch, head) => {
          const bytes = Uint8Array.from(copy).subarray(0, cut);
          for (const [i, b] of edits) if (i < bytes.length) bytes[i] = b;
          const s = new MemorySource(bytes, 'fuzz.safetensors');
          try {
            const l = await listTensors(s);
            await importRun([s], [l], choice(layout, batch, head), DEFAULT_PROBLEM);
          } catch (e) {
            if (!(e instanceof ImportError || e instanceof TensorFileError)) throw e;
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

/** A source whose header is real and whose data is claimed, not held: any data read is recorded and refused. */
class HeaderOnly implements ByteSource {
  readonly size: number;
  dataReads = 0;
  constructor(
    private readonly header: Uint8Array,
    dataBytes: number,
    readonly name: string,
  ) {
    this.size = header.length + dataBytes;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    if (offset + length <= this.header.length) return this.header.subarray(offset, offset + length);
    this.dataReads++;
    throw new Error('data read');
  }
}

/** A safetensors header for Q, K, V of [1, 1, n, d] float32, followed (nominally) by their bytes. */
function bigHeads(n: number, d: number): HeaderOnly {
  const bytes = n * d * 4;
  const entry = (i: number) => ({ dtype: 'F32', shape: [1, 1, n, d], data_offsets: [i * bytes, (i + 1) * bytes] });
  const json = new TextEncoder().encode(JSON.stringify({ query: entry(0), key: entry(1), value: entry(2) }));
  const header = new Uint8Array(8 + json.length);
  new DataView(header.buffer).setUint32(0, json.length, true);
  header.set(json, 8);
  return new HeaderOnly(header, 3 * bytes, 'big.safetensors');
}

describe('sizes from the headers, before any data is read', () => {
  it('a 1 GiB head is refused naming its dimensions, without reading data', async () => {
    const src = bigHeads(2 ** 21, 128);
    const listing = await listTensors(src);
    await fails(
      importRun([src], [listing], choice('BHND', 0, 0), DEFAULT_PROBLEM),
      /one head of Q, K and V \(Nq 2097152, Nk 2097152, d 128, dv 128\) would take 3072 MB as float32; FlashScope reads at most 256 MB of one head: choose tensors with a shorter sequence \(Nq, Nk\) or a smaller head dim/,
    );
    expect(src.dataReads).toBe(0);
  });

  it('the caller’s own check (the stepping budget) sees the problem before any data is read', async () => {
    const src = bigHeads(4096, 64);
    const listing = await listTensors(src);
    const seen: number[] = [];
    await fails(
      importRun([src], [listing], choice('BHND', 0, 0), DEFAULT_PROBLEM, (p) => {
        seen.push(p.nq, p.nk, p.d, p.dv);
        throw new ImportError('too large to step through');
      }),
      /too large to step through/,
    );
    expect(seen).toEqual([4096, 4096, 64, 64]);
    expect(src.dataReads).toBe(0);
  });
});
