// Conversions between stored number formats (binary16, bfloat16, binary32, binary64, and
// the int32/int64 of offset and index tensors such as cu_seqlens and block tables,
// little-endian) and JS numbers. Decoding works on one contiguous slice of bytes.

import { roundFp16 } from '../core/dtype.ts';

export type StoredFloat = 'float16' | 'bfloat16' | 'float32' | 'float64' | 'int32' | 'int64';

/** Integer storage: read exactly (into float64), meant for offsets and indices, not for Q/K/V values. */
export function isIntegerStorage(t: StoredFloat): boolean {
  return t === 'int32' || t === 'int64';
}

/**
 * Why an integer tensor cannot be attention values: one sentence for the CLI and the Load
 * tensors dialog, which both accept integer files only as offsets, block tables and lengths.
 */
export function integerValuesMessage(what: string, t: StoredFloat): string {
  return `${what}: holds ${t} values (signed integer); attention tensors must be float16, bfloat16, float32 or float64 (integer files are for cu_seqlens, block tables and cache lengths)`;
}

export function storedBytes(t: StoredFloat): number {
  return t === 'float64' || t === 'int64' ? 8 : t === 'float32' || t === 'int32' ? 4 : 2;
}

/** binary16 bits -> number (exact). */
export function halfBitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** number -> binary16 bits, rounding to nearest even. */
export function numberToHalfBits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const r = roundFp16(x);
  const sign = r < 0 || Object.is(r, -0) ? 0x8000 : 0;
  const a = Math.abs(r);
  if (a === Infinity) return sign | 0x7c00;
  if (a === 0) return sign;
  if (a < 2 ** -14) return sign | Math.round(a / 2 ** -24); // subnormal: exact after roundFp16
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  if (2 ** (e + 1) <= a) e += 1;
  const frac = Math.round((a / 2 ** e - 1) * 1024);
  return sign | ((e + 15) << 10) | frac;
}

/**
 * Decodes little-endian values; float64 and the integers become Float64Array (exact; an
 * int64 beyond 2^53 is refused rather than rounded), everything else Float32Array (exact).
 */
export function decodeFloats(bytes: Uint8Array, t: StoredFloat): Float32Array | Float64Array {
  const n = bytes.length / storedBytes(t);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (t === 'float64' || t === 'int32' || t === 'int64') {
    const out = new Float64Array(n);
    if (t === 'float64') for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
    else if (t === 'int32') for (let i = 0; i < n; i++) out[i] = view.getInt32(i * 4, true);
    else
      for (let i = 0; i < n; i++) {
        const v = view.getBigInt64(i * 8, true);
        if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
          throw new RangeError(`int64 element ${i} (${v}) is beyond 2^53 and cannot be read exactly`);
        }
        out[i] = Number(v);
      }
    return out;
  }
  const out = new Float32Array(n);
  if (t === 'float32') for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
  else if (t === 'float16') for (let i = 0; i < n; i++) out[i] = halfBitsToNumber(view.getUint16(i * 2, true));
  else {
    const u = new Uint32Array(1);
    const f = new Float32Array(u.buffer);
    for (let i = 0; i < n; i++) {
      u[0] = view.getUint16(i * 2, true) << 16;
      out[i] = f[0];
    }
  }
  return out;
}

/** Encodes numbers little-endian as float16, float32, float64 or int32 (integers only). */
export function encodeFloats(values: ArrayLike<number>, t: 'float16' | 'float32' | 'float64' | 'int32'): Uint8Array {
  const size = storedBytes(t);
  const bytes = new Uint8Array(values.length * size);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) {
    if (t === 'int32') {
      if (!Number.isInteger(values[i]) || Math.abs(values[i]) > 2 ** 31)
        throw new RangeError(`int32 encode: element ${i} is ${values[i]}, not an int32`);
      view.setInt32(i * 4, values[i], true);
    } else if (t === 'float64') view.setFloat64(i * 8, values[i], true);
    else if (t === 'float32') view.setFloat32(i * 4, values[i], true);
    else view.setUint16(i * 2, numberToHalfBits(values[i]), true);
  }
  return bytes;
}
