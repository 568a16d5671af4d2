// The browser half of the hostile-input suite for tensor files: each malformed, oversized or
// prototype-named file goes through the import worker's path (Blob → BlobSource → listTensors →
// importRun) and must be refused with a TensorFileError or ImportError naming the file and what
// is wrong, never another exception.

import { describe, expect, it } from 'vitest';
import { BlobSource, TensorFileError } from '../io/byte-source.ts';
import { encodeNpy } from '../io/npy.ts';
import { DEFAULT_PROBLEM } from '../core/problem.ts';
import { ImportError, importRun, listTensors, type Layout, type TensorChoice } from './tensor-import.ts';

const enc = new TextEncoder();
const vals = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i));

/** A .npy file with the given header text (padded as numpy does) and data bytes. */
function npyWithHeader(header: string, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const body = enc.encode(header);
  const pad = (64 - ((10 + body.length + 1) % 64)) % 64;
  const out = new Uint8Array(10 + body.length + pad + 1 + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  const len = body.length + pad + 1;
  out[8] = len & 0xff;
  out[9] = len >> 8;
  out.set(body, 10);
  out.fill(0x20, 10 + body.length, 10 + body.length + pad);
  out[10 + len - 1] = 0x0a;
  out.set(data, 10 + len);
  return out;
}

/** A safetensors file with the given header object and data bytes. */
function safetensorsWith(header: unknown, data: Uint8Array = new Uint8Array(0), rawHeader?: string): Uint8Array {
  const h = enc.encode(rawHeader ?? JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

const good = (n = 8, d = 4) => encodeNpy(vals(n * d), [1, n, 1, d]);
const blob = (bytes: Uint8Array) => new Blob([bytes.slice().buffer as ArrayBuffer]);

/** Lists one file; the error it must raise names the file. */
const LISTING_CASES: [string, string, Uint8Array, RegExp][] = [
  ['empty .npy', 'e.npy', new Uint8Array(0), /e\.npy: only 0 bytes, too short/],
  ['wrong magic', 'm.npy', enc.encode('PK\u0003\u0004 not numpy at all'), /m\.npy: not a \.npy file \(wrong magic/],
  [
    'unknown version',
    'v.npy',
    Uint8Array.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 9, 0, 0, 0, 0, 0]),
    /v\.npy: unsupported \.npy format version 9/,
  ],
  ['header past the end', 't.npy', good().subarray(0, 40), /t\.npy: .npy header claims \d+ bytes but the file ends/],
  ['data cut short', 'c.npy', good().subarray(0, good().length - 5), /c\.npy: .*(truncated|holds|expected)/],
  ['header not a dict', 'n.npy', npyWithHeader("['descr', '<f4']"), /n\.npy: .npy header is not a dict/],
  ['header not Python', 'p.npy', npyWithHeader('{descr: <f4}'), /p\.npy: /],
  ['no descr', 'd.npy', npyWithHeader("{'fortran_order': False, 'shape': (2,), }"), /d\.npy: .npy header has no 'descr'/],
  [
    'big-endian',
    'b.npy',
    npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", new Uint8Array(8)),
    /b\.npy: big-endian float/,
  ],
  ['complex', 'x.npy', npyWithHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", new Uint8Array(16)), /x\.npy: complex/],
  ['Python objects', 'o.npy', npyWithHeader("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"), /o\.npy: Python object/],
  [
    'Fortran order',
    'f.npy',
    npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", new Uint8Array(16)),
    /f\.npy: .*(Fortran|fortran)/,
  ],
  ['negative dim', 'g.npy', npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"), /g\.npy: /],
  ['huge shape', 'h.npy', npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }"), /h\.npy: /],
  [
    'descr constructor',
    'k.npy',
    npyWithHeader("{'descr': 'constructor', 'fortran_order': False, 'shape': (2,), }"),
    /k\.npy: .*not supported/,
  ],
  ['descr toString', 'k2.npy', npyWithHeader("{'descr': 'toString', 'fortran_order': False, 'shape': (2,), }"), /k2\.npy: .*not supported/],
  [
    'fields only under __proto__',
    'q.npy',
    npyWithHeader("{'__proto__': {'descr': '<f4', 'fortran_order': False, 'shape': (2,)}, }", new Uint8Array(8)),
    /q\.npy: .npy header has no 'descr'/,
  ],
  ['deep nesting', 'z.npy', npyWithHeader(`{'descr': ${'['.repeat(5000)}${']'.repeat(5000)}}`), /z\.npy: /],
  ['short safetensors', 's.safetensors', new Uint8Array(4), /s\.safetensors: only 4 bytes/],
  [
    'header length 2^60',
    'l.safetensors',
    Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0x10, 0x7b, 0x7d]),
    /l\.safetensors: header length .* larger than the format allows/,
  ],
  ['header past the end', 'p.safetensors', safetensorsWith({}).subarray(0, 9), /p\.safetensors: header claims/],
  ['header not JSON', 'j.safetensors', safetensorsWith(null, undefined, '{"a": '), /j\.safetensors: header is not valid UTF-8 JSON/],
  ['header an array', 'a.safetensors', safetensorsWith([1, 2]), /a\.safetensors: header is not a JSON object/],
  ['entry not an object', 'e.safetensors', safetensorsWith({ q: 3 }), /e\.safetensors: tensor 'q': entry is not an object/],
  [
    'no dtype',
    'd.safetensors',
    safetensorsWith({ q: { shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)),
    /d\.safetensors: tensor 'q': missing dtype/,
  ],
  [
    'dtype constructor',
    'c.safetensors',
    safetensorsWith({ q: { dtype: 'constructor', shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)),
    /c\.safetensors: tensor 'q': dtype constructor is not supported/,
  ],
  [
    'dtype __proto__',
    'c2.safetensors',
    safetensorsWith({ q: { dtype: '__proto__', shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)),
    /c2\.safetensors: tensor 'q': dtype __proto__ is not supported/,
  ],
  [
    'U8',
    'u.safetensors',
    safetensorsWith({ q: { dtype: 'U8', shape: [4], data_offsets: [0, 4] } }, new Uint8Array(4)),
    /u\.safetensors: tensor 'q': dtype U8 is not supported/,
  ],
  [
    'shape not a list',
    'h.safetensors',
    safetensorsWith({ q: { dtype: 'F32', shape: 'big', data_offsets: [0, 4] } }, new Uint8Array(4)),
    /h\.safetensors: tensor 'q': bad shape/,
  ],
  [
    'fractional dim',
    'f.safetensors',
    safetensorsWith({ q: { dtype: 'F32', shape: [1.5], data_offsets: [0, 4] } }, new Uint8Array(4)),
    /f\.safetensors: tensor 'q': bad shape/,
  ],
  [
    'offsets reversed',
    'r.safetensors',
    safetensorsWith({ q: { dtype: 'F32', shape: [1], data_offsets: [4, 0] } }, new Uint8Array(4)),
    /r\.safetensors: tensor 'q': bad data_offsets/,
  ],
  [
    'offsets too short',
    'o.safetensors',
    safetensorsWith({ q: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, new Uint8Array(8)),
    /o\.safetensors: tensor 'q': shape \[2\] of F32 needs 8 bytes/,
  ],
  [
    'data past the end',
    'x.safetensors',
    safetensorsWith({ q: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, new Uint8Array(8)),
    /x\.safetensors: tensor 'q': data ends at 16/,
  ],
  [
    'overlapping tensors',
    'v.safetensors',
    safetensorsWith(
      { q: { dtype: 'F32', shape: [4], data_offsets: [0, 16] }, k: { dtype: 'F32', shape: [4], data_offsets: [8, 24] } },
      new Uint8Array(24),
    ),
    /v\.safetensors: tensors 'q' \[0, 16\) and 'k' \[8, 24\) overlap in data_offsets/,
  ],
  ['not a tensor file name', 'weights.pt', good(), /weights\.pt: not a tensor file FlashScope reads/],
];

async function refusal(p: Promise<unknown>): Promise<Error> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e instanceof TensorFileError || e instanceof ImportError, `not our error: ${String(e)}`).toBe(true);
  return e as Error;
}

describe('hostile tensor files: listing', () => {
  it.each(LISTING_CASES)('%s', async (_what, name, bytes, message) => {
    const e = await refusal(listTensors(new BlobSource(blob(bytes), name)));
    expect(e.message).toMatch(message);
  });
});

const choice = (layout: Layout, extra: Partial<TensorChoice> = {}): TensorChoice => ({
  q: { file: 0, tensor: 'q.npy' },
  k: { file: 1, tensor: 'k.npy' },
  v: { file: 2, tensor: 'v.npy' },
  layout,
  batch: 0,
  head: 0,
  ...extra,
});

/** Q, K, V files (and optional extras) through listTensors and importRun; the refusal must match. */
const RUN_CASES: [string, Uint8Array[], Partial<TensorChoice>, RegExp][] = [
  ['integer Q', [encodeNpy([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 1, 4], 'int32'), good(2), good(2)], {}, /Q \(q\.npy\)/],
  ['Q and K head dims differ', [good(8, 4), good(8, 8), good(8, 8)], {}, /Q and K must have the same head dim/],
  ['K and V lengths differ', [good(8), good(8), good(6)], {}, /K and V must have the same sequence length/],
  ['rank 1 Q', [encodeNpy(vals(8), [8]), good(), good()], {}, /q\.npy/],
  ['empty sequence', [encodeNpy(new Float32Array(0), [1, 0, 1, 4]), good(), good()], {}, /Q has an empty dimension/],
  ['batch out of range', [good(), good(), good()], { batch: 3 }, /batch 3 is out of range: the tensors have 1/],
  ['head out of range', [good(), good(), good()], { head: 2 }, /head 2 is out of range: Q has 1 heads/],
  ['negative head', [good(), good(), good()], { head: -1 }, /head -1 is out of range/],
  ['fractional batch', [good(), good(), good()], { batch: 0.5 }, /batch 0.5 is out of range/],
  [
    'NaN in K',
    [
      good(),
      encodeNpy(
        Float32Array.from({ length: 32 }, (_, i) => (i === 5 ? Number.NaN : 1)),
        [1, 8, 1, 4],
      ),
      good(),
    ],
    {},
    /K .*NaN/,
  ],
  [
    'Infinity in V',
    [
      good(),
      good(),
      encodeNpy(
        Float32Array.from({ length: 32 }, (_, i) => (i === 9 ? Number.POSITIVE_INFINITY : 1)),
        [1, 8, 1, 4],
      ),
    ],
    {},
    /V .*(∞|Inf|infinit)/i,
  ],
  [
    'a tensor name that is not in the file',
    [good(), good(), good()],
    { v: { file: 2, tensor: 'constructor' } },
    /V: no tensor 'constructor' in v\.npy/,
  ],
  ['a file index past the list', [good(), good(), good()], { k: { file: 7, tensor: 'k.npy' } }, /K: no tensor 'k\.npy' in file #7/],
  [
    'sinks of the wrong length',
    [good(), good(), good(), encodeNpy([1, 2], [2])],
    { sinks: { file: 3, tensor: 'sinks.npy' } },
    /sinks .*must be 1-D with one value per query head \(1\)/,
  ],
  [
    'NaN sink',
    [good(), good(), good(), encodeNpy([Number.NaN], [1])],
    { sinks: { file: 3, tensor: 'sinks.npy' } },
    /sinks \(sinks\.npy\) holds NaN/,
  ],
];

describe('hostile tensor files: choosing Q, K and V', () => {
  it.each(RUN_CASES)('%s', async (_what, files, extra, message) => {
    const names = ['q.npy', 'k.npy', 'v.npy', 'sinks.npy'].slice(0, files.length);
    const sources = files.map((f, i) => new BlobSource(blob(f), names[i]));
    const e = await refusal(
      (async () => {
        const listings = await Promise.all(sources.map(listTensors));
        return importRun(sources, listings, choice('BNHD', extra), DEFAULT_PROBLEM);
      })(),
    );
    expect(e.message).toMatch(message);
  });
});
