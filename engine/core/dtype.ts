// Rounding of float values to the storage precisions real kernels use. JS numbers are
// float64; we round explicitly at every point a GPU kernel would store a narrower type.

import type { DType } from './problem.ts';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Round to bfloat16 (round-to-nearest-even on the float32 bit pattern), returned as a number. */
export function roundBf16(x: number): number {
  if (!Number.isFinite(x)) return x;
  f32[0] = x;
  const bits = u32[0];
  const lsb = (bits >>> 16) & 1;
  u32[0] = ((bits + 0x7fff + lsb) >>> 16) << 16;
  return f32[0];
}

// The binary exponent of a float64 read from its bits: exact, unlike floor(log2(x)), and
// much cheaper (roundFp16 runs once per stored P element in every 16-bit algorithm).
const f64 = new Float64Array(1);
const hiWord = new Uint32Array(f64.buffer);
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0; // little-endian: high word second
/** 2^k for k in [-24, 5]: the fp16 quanta. */
const QUANTUM = Array.from({ length: 30 }, (_, i) => 2 ** (i - 24));

/** Round to IEEE binary16 (round-to-nearest-even, overflow to ±Infinity, subnormals kept). */
export function roundFp16(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  if (a >= 65520) return x > 0 ? Infinity : -Infinity; // above max half (65504) after rounding
  // Quantum: 2^(e-10) for normal numbers, 2^-24 for subnormals (e clamped to -14).
  f64[0] = a;
  let e = ((hiWord[HI] >>> 20) & 0x7ff) - 1023;
  if (e < -14) e = -14;
  const q = QUANTUM[e - 10 + 24];
  let r = a / q; // exact: q is a power of two
  const fl = Math.floor(r);
  const diff = r - fl;
  r = diff > 0.5 || (diff === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  return (x < 0 ? -r : r) * q;
}

// The FP8 dtypes store their inputs as fp32 (the FP8 path quantizes with its own scales), so
// every rounding helper below treats them as fp32.
type Rounded = DType;

export function roundTo(dtype: Rounded, x: number): number {
  if (dtype === 'fp16') return roundFp16(x);
  if (dtype === 'bf16') return roundBf16(x);
  return Math.fround(x);
}

/** The 16-bit rounding of a dtype, or undefined for fp32 (whose values are stored as they are). */
export function sixteenBitRounder(dtype: Rounded): ((x: number) => number) | undefined {
  return dtype === 'fp16' ? roundFp16 : dtype === 'bf16' ? roundBf16 : undefined;
}

/** Rounds an array in place to the dtype and returns it. */
export function roundArray<T extends Float32Array | Float64Array>(dtype: Rounded, a: T): T {
  if (dtype !== 'fp16' && dtype !== 'bf16') {
    if (a instanceof Float64Array) for (let i = 0; i < a.length; i++) a[i] = Math.fround(a[i]);
    return a;
  }
  const r = dtype === 'fp16' ? roundFp16 : roundBf16;
  for (let i = 0; i < a.length; i++) a[i] = r(a[i]);
  return a;
}
