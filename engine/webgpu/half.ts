// float32 → IEEE binary16 bit patterns for uploading f16 tensors (round to nearest even).
// The values were already rounded to the problem's dtype on the CPU when it is fp16, so
// for those this conversion is exact.

const f = new Float32Array(1);
const u = new Uint32Array(f.buffer);

export function halfBits(x: number): number {
  f[0] = x;
  const bits = u[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / nan
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow
  if (e <= 0) {
    if (e < -10) return sign; // underflow to zero
    mant |= 0x800000; // subnormal half: shift the implicit bit in
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half += 1; // may carry into the exponent: still correct
  return sign | half;
}

/** Packs float32 values as f16 into a buffer padded to a multiple of 4 bytes. */
export function toHalfArray(a: Float32Array): Uint16Array {
  const out = new Uint16Array(a.length + (a.length % 2));
  for (let i = 0; i < a.length; i++) out[i] = halfBits(a[i]);
  return out;
}

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
