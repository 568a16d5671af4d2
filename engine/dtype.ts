// Rounding of float values to the storage precisions real kernels use. JS numbers are
// float64; we round explicitly at every point a GPU kernel would store a narrower type.

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

/** Round to IEEE binary16 (round-to-nearest-even, overflow to ±Infinity, subnormals kept). */
export function roundFp16(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  if (a >= 65520) return x > 0 ? Infinity : -Infinity; // above max half (65504) after rounding
  // Quantum: 2^(e-10) for normal numbers, 2^-24 for subnormals.
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1; // log2 can round up just below a power of two
  e = Math.max(e, -14);
  const q = 2 ** (e - 10);
  let r = a / q;
  const fl = Math.floor(r);
  const diff = r - fl;
  r = diff > 0.5 || (diff === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  return Math.sign(x) * r * q;
}

export function roundTo(dtype: 'fp32' | 'fp16' | 'bf16', x: number): number {
  if (dtype === 'fp16') return roundFp16(x);
  if (dtype === 'bf16') return roundBf16(x);
  return Math.fround(x);
}

/** Rounds an array in place to the dtype and returns it. */
export function roundArray<T extends Float32Array | Float64Array>(dtype: 'fp32' | 'fp16' | 'bf16', a: T): T {
  if (dtype === 'fp32') {
    if (a instanceof Float64Array) for (let i = 0; i < a.length; i++) a[i] = Math.fround(a[i]);
    return a;
  }
  const r = dtype === 'fp16' ? roundFp16 : roundBf16;
  for (let i = 0; i < a.length; i++) a[i] = r(a[i]);
  return a;
}
