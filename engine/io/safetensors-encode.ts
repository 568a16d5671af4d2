// Writes safetensors files the way safetensors.torch.save_file lays them out: an 8-byte
// little-endian header length, a JSON header (padded with spaces to a multiple of 8),
// then the tensors' data back to back. Used to make test files and by exports.

import { encodeFloats } from './float-codec.ts';
import { elementCount } from './tensor-info.ts';

export interface TensorToWrite {
  name: string;
  shape: number[];
  values: ArrayLike<number>;
  dtype?: 'float16' | 'float32' | 'float64';
}

const TAG = { float16: 'F16', float32: 'F32', float64: 'F64' } as const;

export function encodeSafetensors(tensors: TensorToWrite[], metadata?: Record<string, string>): Uint8Array<ArrayBuffer> {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  const blobs: Uint8Array[] = [];
  let at = 0;
  for (const t of tensors) {
    if (elementCount(t.shape) !== t.values.length)
      throw new Error(`safetensors write: ${t.name} has shape [${t.shape.join(', ')}] but ${t.values.length} values`);
    const dtype = t.dtype ?? 'float32';
    const data = encodeFloats(t.values, dtype);
    header[t.name] = { dtype: TAG[dtype], shape: t.shape, data_offsets: [at, at + data.length] };
    blobs.push(data);
    at += data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const out = new Uint8Array(8 + json.length + at);
  new DataView(out.buffer).setUint32(0, json.length, true);
  for (let i = 0; i < json.length; i++) out[8 + i] = json.charCodeAt(i);
  let p = 8 + json.length;
  for (const b of blobs) {
    out.set(b, p);
    p += b.length;
  }
  return out;
}
