// What a tensor file says about one tensor, independent of the container (npy or
// safetensors): enough to read the whole tensor or any contiguous slice of it later.

import { TensorFileError, type ByteSource } from './byte-source.ts';
import { decodeFloats, storedBytes, type StoredFloat } from './float-codec.ts';

export interface TensorInfo {
  name: string;
  dtype: StoredFloat;
  shape: number[];
  /** Byte offset of element 0 in the source. */
  dataOffset: number;
  /** Bytes of data (product of shape × element size). */
  byteLength: number;
}

export interface Tensor {
  info: TensorInfo;
  data: Float32Array | Float64Array;
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Reads `count` elements starting at element `start` (C order) — the slice a view needs, not the whole file. */
export async function readElements(src: ByteSource, info: TensorInfo, start = 0, count?: number): Promise<Float32Array | Float64Array> {
  const total = elementCount(info.shape);
  const n = count ?? total - start;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(n) || start < 0 || n < 0 || start + n > total) {
    throw new TensorFileError(`${info.name}: elements [${start}, ${start + n}) are outside the tensor's ${total} elements`);
  }
  const size = storedBytes(info.dtype);
  return decodeFloats(await src.read(info.dataOffset + start * size, n * size), info.dtype);
}
