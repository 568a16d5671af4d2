// .npy and safetensors parsing: files written by numpy (embedded as bytes), round trips
// through our writer, slices read without touching the rest, and every kind of bad file
// rejected with a TensorFileError that names what was found.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlobSource, MemorySource, TensorFileError, type ByteSource } from './byte-source.ts';
import { halfBitsToNumber, numberToHalfBits } from './float-codec.ts';
import { encodeNpy, readNpy, readNpyInfo } from './npy.ts';
import { readSafetensor, readSafetensorsInfo } from './safetensors.ts';
import { readElements } from './tensor-info.ts';

const hex = (h: string) => new Uint8Array(h.match(/../g)!.map((b) => parseInt(b, 16)));
const src = (bytes: Uint8Array, name = 't.npy') => new MemorySource(bytes, name);

// np.save(np.array([[1.5, -2, 65504], [2**-14, -0.0, 3.140625]], dtype=np.float16))
const NUMPY_F16 =
  '934e554d5059010076007b276465736372273a20273c6632272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c2033292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a003e00c0ff7b000400804842';
// np.save(np.array([1e-300, -2.5], dtype=np.float64))
const NUMPY_F64 =
  '934e554d5059010076007b276465736372273a20273c6638272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a59f3f8c21f6ea50100000000000004c0';

/** Replaces the header dict of a valid .npy with `dict` (same total header length). */
function withHeader(dict: string, data = new Uint8Array(24)): Uint8Array {
  let header = dict;
  header += ' '.repeat(117 - header.length) + '\n';
  const out = new Uint8Array(10 + header.length + data.length);
  out.set(hex('934e554d50590100'), 0);
  out[8] = header.length;
  for (let i = 0; i < header.length; i++) out[10 + i] = header.charCodeAt(i);
  out.set(data, 10 + header.length);
  return out;
}

async function rejects(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(TensorFileError);
  expect((e as Error).message).toMatch(pattern);
}

// np.save of np.array([0, 3, 3, -7, 2**31 - 1], dtype=np.int32) and of [[0, 5], [2**40, 1]] as int64.
const NUMPY_I32 =
  '934e554d5059010076007b276465736372273a20273c6934272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028352c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a000000000300000003000000f9ffffffffffff7f';
const NUMPY_I64 =
  '934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c2032292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a0000000000000000050000000000000000000000000100000100000000000000';

describe('npy', () => {
  it('reads a float16 file written by numpy', async () => {
    const t = await readNpy(src(hex(NUMPY_F16)));
    expect(t.info.shape).toEqual([2, 3]);
    expect(t.info.dtype).toBe('float16');
    expect(Array.from(t.data)).toEqual([1.5, -2, 65504, 2 ** -14, -0, 3.140625]);
  });
  it('reads a float64 file written by numpy, keeping float64 precision', async () => {
    const t = await readNpy(src(hex(NUMPY_F64)));
    expect(t.data).toBeInstanceOf(Float64Array);
    expect(Array.from(t.data)).toEqual([1e-300, -2.5]);
  });
  it('reads int32 and int64 files written by numpy exactly (cu_seqlens, block tables), and writes int32 as numpy does', async () => {
    const i32 = hex(NUMPY_I32);
    const t = await readNpy(src(i32));
    expect(t.info.dtype).toBe('int32');
    expect(Array.from(t.data)).toEqual([0, 3, 3, -7, 2 ** 31 - 1]);
    expect(encodeNpy([0, 3, 3, -7, 2 ** 31 - 1], [5], 'int32')).toEqual(i32);
    const t64 = await readNpy(src(hex(NUMPY_I64)));
    expect(t64.info.shape).toEqual([2, 2]);
    expect(Array.from(t64.data)).toEqual([0, 5, 2 ** 40, 1]);
  });
  it('writes the same bytes numpy writes', () => {
    expect(encodeNpy([1e-300, -2.5], [2], 'float64')).toEqual(hex(NUMPY_F64));
    expect(encodeNpy([1.5, -2, 65504, 2 ** -14, -0, 3.140625], [2, 3], 'float16')).toEqual(hex(NUMPY_F16));
  });
  it('round-trips float32 of every rank up to 4, and reads any slice alone', async () => {
    for (const shape of [[7], [3, 5], [2, 3, 4], [2, 1, 3, 5]]) {
      const n = shape.reduce((a, b) => a * b, 1);
      const values = Float32Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i) * 100));
      const bytes = encodeNpy(values, shape);
      expect((10 + (bytes[8] | (bytes[9] << 8))) % 64).toBe(0); // header aligned as numpy does
      const t = await readNpy(src(bytes));
      expect(t.info.shape).toEqual(shape);
      expect(Array.from(t.data)).toEqual(Array.from(values));
      // A slice reads only its bytes: a source that refuses any other range still serves it.
      const info = await readNpyInfo(src(bytes));
      const guarded: ByteSource = {
        size: bytes.length,
        read: async (off, len) => {
          if (off >= info.dataOffset && (off !== info.dataOffset + 2 * 4 || len !== 3 * 4)) throw new Error('read outside the slice');
          return bytes.subarray(off, off + len);
        },
      };
      if (n >= 5) expect(Array.from(await readElements(guarded, info, 2, 3))).toEqual(Array.from(values.subarray(2, 5)));
    }
  });
  it('reads through a Blob source (the browser File path) and rejects reads past the end', async () => {
    const bytes = encodeNpy([1, 2, 3, 4, 5, 6], [2, 3]);
    const blob = new BlobSource(new Blob([bytes]), 'x.npy');
    expect(Array.from((await readNpy(blob)).data)).toEqual([1, 2, 3, 4, 5, 6]);
    await rejects(blob.read(bytes.length - 2, 4), /x\.npy: read of 4 bytes at offset \d+ goes past the end/);
  });
  it('round-trips float16 for every finite half value', () => {
    for (let h = 0; h < 0x10000; h++) {
      const x = halfBitsToNumber(h);
      if (Number.isNaN(x)) continue;
      expect(numberToHalfBits(x)).toBe(h);
    }
  });
  it('reads version 2.0 headers', async () => {
    const v1 = encodeNpy([1, 2, 3], [3]);
    const hl = v1[8] | (v1[9] << 8);
    const v2 = new Uint8Array(v1.length + 2);
    v2.set(v1.subarray(0, 8), 0);
    v2[6] = 2;
    v2[8] = hl & 0xff;
    v2[9] = hl >> 8;
    v2.set(v1.subarray(10), 12);
    expect(Array.from((await readNpy(src(v2))).data)).toEqual([1, 2, 3]);
  });

  it('rejects a truncated file, naming the sizes', async () => {
    const good = encodeNpy(new Float32Array(12), [3, 4]);
    await rejects(
      readNpy(src(good.subarray(0, good.length - 5))),
      /shape \[3, 4\] of float32 needs 48 bytes of data but the file holds 43 \(truncated\)/,
    );
    await rejects(readNpy(src(good.subarray(0, 40))), /header claims 118 bytes but the file ends after 30 \(truncated\)/);
    await rejects(readNpy(src(good.subarray(0, 5))), /too short/);
  });
  it('rejects a wrong magic, showing the bytes found', async () => {
    await rejects(readNpy(src(new TextEncoder().encode('PK\x03\x04 this is a zip file'))), /wrong magic: found bytes 50 4b 03 04 20 74/);
  });
  it('rejects Fortran order', async () => {
    await rejects(readNpy(src(withHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"))), /Fortran-order/);
  });
  it('rejects big-endian and non-float dtypes by name', async () => {
    await rejects(readNpy(src(withHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"))), /big-endian float .* '>f4'/);
    await rejects(readNpy(src(withHeader("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }"))), /signed integer .* '<i2'/);
    await rejects(readNpy(src(withHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }"))), /boolean/);
  });
  it('rejects malformed headers', async () => {
    await rejects(readNpy(src(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }"))), /bad 'shape'/);
    await rejects(readNpy(src(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"))), /malformed header/);
    await rejects(readNpy(src(withHeader("{'fortran_order': False, 'shape': (2, 3), }"))), /no 'descr'/);
    await rejects(readNpy(src(withHeader('[1, 2, 3]'))), /not a dict/);
    await rejects(readNpy(src(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': " + '('.repeat(40)))), /malformed header/);
  });
  it('never hangs or throws anything but TensorFileError on garbage', async () => {
    const base = encodeNpy([1, 2, 3, 4], [2, 2]);
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.nat(base.length), async (junk, at) => {
        // Garbage alone, and garbage spliced into a valid file (so the magic often survives).
        for (const bytes of [junk, Uint8Array.from([...base.subarray(0, at), ...junk])]) {
          try {
            await readNpy(src(bytes));
          } catch (e) {
            if (!(e instanceof TensorFileError)) throw e;
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Builds a safetensors file from a header object and data bytes. */
function safetensors(header: unknown, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

describe('safetensors', () => {
  // BF16 1.0 = 0x3f80, -2.0 = 0xc000, 0.5 = 0x3f00; F32 pi.
  const data = Uint8Array.from([0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x00, 0x00, 0xdb, 0x0f, 0x49, 0x40]);
  const file = safetensors(
    {
      __metadata__: { format: 'pt' },
      w: { dtype: 'BF16', shape: [3], data_offsets: [0, 6] },
      pi: { dtype: 'F32', shape: [1, 1], data_offsets: [8, 12] },
    },
    data,
  );
  it('lists the tensors and reads BF16 and F32', async () => {
    const infos = await readSafetensorsInfo(src(file, 'm.safetensors'));
    expect(infos.map((t) => [t.name, t.dtype, t.shape])).toEqual([
      ['w', 'bfloat16', [3]],
      ['pi', 'float32', [1, 1]],
    ]);
    expect(Array.from((await readSafetensor(src(file), 'w')).data)).toEqual([1, -2, 0.5]);
    expect((await readSafetensor(src(file), 'pi')).data[0]).toBeCloseTo(Math.PI, 6);
  });
  it('reads F16 and F64', async () => {
    const f = safetensors(
      { a: { dtype: 'F16', shape: [2], data_offsets: [0, 4] }, b: { dtype: 'F64', shape: [1], data_offsets: [8, 16] } },
      Uint8Array.from([0x00, 0x3e, 0x00, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0xc0]),
    );
    expect(Array.from((await readSafetensor(src(f), 'a')).data)).toEqual([1.5, -2]);
    expect(Array.from((await readSafetensor(src(f), 'b')).data)).toEqual([-2.5]);
  });
  it('rejects tensors whose data_offsets overlap, and accepts touching and empty ones', async () => {
    const two = (b: [number, number]) =>
      src(
        safetensors(
          { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: b } },
          new Uint8Array(16),
        ),
        'o.safetensors',
      );
    await rejects(readSafetensorsInfo(two([4, 12])), /o\.safetensors: tensors 'a' \[0, 8\) and 'b' \[4, 12\) overlap in data_offsets/);
    await rejects(readSafetensor(two([0, 8]), 'a'), /overlap in data_offsets/);
    expect((await readSafetensorsInfo(two([8, 16]))).map((t) => t.name)).toEqual(['a', 'b']);
    const empty = safetensors(
      { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, e: { dtype: 'F32', shape: [0], data_offsets: [4, 4] } },
      new Uint8Array(8),
    );
    expect((await readSafetensorsInfo(src(empty))).map((t) => t.name)).toEqual(['a', 'e']);
  });
  it('asks for a name when a file holds several tensors, and names the missing one', async () => {
    await rejects(readSafetensor(src(file, 'm.safetensors')), /holds 2 tensors \(w, pi\); name one/);
    await rejects(readSafetensor(src(file, 'm.safetensors'), 'x'), /no tensor 'x'; it holds: w, pi/);
  });
  it('rejects bad files with the reason', async () => {
    await rejects(
      readSafetensor(src(safetensors({ a: { dtype: 'I16', shape: [2], data_offsets: [0, 4] } }, new Uint8Array(4)))),
      /dtype I16 is not supported/,
    );
    await rejects(
      readSafetensor(src(safetensors({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, new Uint8Array(4)))),
      /needs 8 bytes, data_offsets span 4/,
    );
    await rejects(readSafetensor(src(file.subarray(0, file.length - 3))), /truncated/);
    const badJson = safetensors({}, new Uint8Array(0));
    badJson[9] = 0x7b;
    await rejects(readSafetensorsInfo(src(badJson)), /not valid UTF-8 JSON/);
    const huge = new Uint8Array(16);
    new DataView(huge.buffer).setUint32(4, 7, true);
    await rejects(readSafetensorsInfo(src(huge)), /larger than the format allows/);
  });
  it('rejects tensors whose data_offsets overlap, and dtypes named after Object.prototype properties', async () => {
    const f32 = (a: number, b: number) => ({ dtype: 'F32', shape: [(b - a) / 4], data_offsets: [a, b] });
    await rejects(
      readSafetensorsInfo(src(safetensors({ q: f32(0, 16), k: f32(8, 24) }, new Uint8Array(24)), 'qk.safetensors')),
      /qk.safetensors: tensors 'q' \[0, 16\) and 'k' \[8, 24\) overlap in data_offsets/,
    );
    // An empty tensor inside another's span does not hide a later overlap with the larger one.
    await rejects(
      readSafetensorsInfo(src(safetensors({ a: f32(0, 16), e: f32(4, 4), c: f32(12, 20) }, new Uint8Array(20)))),
      /tensors 'a' \[0, 16\) and 'c' \[12, 20\) overlap in data_offsets/,
    );
    const ok = await readSafetensorsInfo(src(safetensors({ a: f32(0, 8), e: f32(8, 8), c: f32(8, 16) }, new Uint8Array(16))));
    expect(ok.map((t) => t.name).sort()).toEqual(['a', 'c', 'e']);
    for (const dtype of ['constructor', 'toString', '__proto__'])
      await rejects(
        readSafetensorsInfo(src(safetensors({ a: { dtype, shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)))),
        new RegExp(`dtype ${dtype} is not supported`),
      );
  });
  it('never throws anything but TensorFileError on garbage', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 120 }), fc.nat(file.length), async (junk, at) => {
        for (const bytes of [junk, Uint8Array.from([...file.subarray(0, at), ...junk])]) {
          try {
            await readSafetensorsInfo(src(bytes));
          } catch (e) {
            if (!(e instanceof TensorFileError)) throw e;
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('a file the browser cannot read', () => {
  it('gets our message naming the file and what to do, not the browser’s permission text', async () => {
    const refused = {
      size: 1 << 20,
      name: 'q.npy',
      slice: () => ({
        arrayBuffer: () =>
          Promise.reject(
            new Error('The requested file could not be read, typically due to permission problems that have occurred after a reference'),
          ),
      }),
    } as unknown as Blob;
    const e = await new BlobSource(refused).read(0, 128).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(TensorFileError);
    expect((e as Error).message).toBe(
      'q.npy: 128 bytes at offset 0 could not be read (was the file moved, changed or deleted since it was chosen?); choose the file again',
    );
  });
});
