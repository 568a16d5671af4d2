// Tensor files made by the tests: valid ones written with the engine's own npy and
// safetensors writers, and malformed ones made by cutting or editing valid bytes.

import { encodeNpy } from '../engine/io/npy.ts';
import { encodeSafetensors } from '../engine/io/safetensors-encode.ts';

export interface TestFile {
  name: string;
  mimeType: string;
  buffer: Buffer;
}

export const file = (name: string, bytes: Uint8Array): TestFile => ({
  name,
  mimeType: 'application/octet-stream',
  buffer: Buffer.from(bytes),
});

export const values = (n: number, s: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * s) * 2);

export const npy = (name: string, shape: number[], s = 0.3, dtype: 'float16' | 'float32' = 'float32') =>
  file(
    name,
    encodeNpy(
      values(
        shape.reduce((a, b) => a * b, 1),
        s,
      ),
      shape,
      dtype,
    ),
  );

/** A .npy whose header dict is `dict` (numpy's v1.0 framing, padded to 64 bytes). */
export function npyWithHeader(name: string, dict: string, dataBytes: number, version = 1): TestFile {
  let header = dict;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const out = new Uint8Array(10 + header.length + dataBytes);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0], 0);
  out[8] = header.length & 0xff;
  out[9] = header.length >> 8;
  for (let i = 0; i < header.length; i++) out[10 + i] = header.charCodeAt(i);
  return file(name, out);
}

/** A safetensors file with a raw header text and `dataBytes` of zeros. */
export function safetensorsWithHeader(name: string, header: string, dataBytes: number, claimedLength?: number): TestFile {
  const out = new Uint8Array(8 + header.length + dataBytes);
  const view = new DataView(out.buffer);
  view.setUint32(0, claimedLength ?? header.length, true);
  view.setUint32(4, 0, true);
  for (let i = 0; i < header.length; i++) out[8 + i] = header.charCodeAt(i);
  return file(name, out);
}

export const qkvSafetensors = (name: string, shapes: { q: number[]; k: number[]; v: number[] }, names = ['q', 'k', 'v']) =>
  file(
    name,
    encodeSafetensors([
      {
        name: names[0],
        shape: shapes.q,
        values: values(
          shapes.q.reduce((a, b) => a * b, 1),
          0.3,
        ),
      },
      {
        name: names[1],
        shape: shapes.k,
        values: values(
          shapes.k.reduce((a, b) => a * b, 1),
          0.7,
        ),
      },
      {
        name: names[2],
        shape: shapes.v,
        values: values(
          shapes.v.reduce((a, b) => a * b, 1),
          1.1,
        ),
      },
    ]),
  );
