// The two OCP 8-bit float formats that Hopper and Blackwell tensor cores read, encoded and
// rounded exactly. JS numbers are float64, so a value "stored in fp8" here is the float64 that
// the 8-bit code decodes to; encodeFp8/decodeFp8 go between that value and the code itself.
//
// E4M3 (OCP "E4M3FN"): 1 sign, 4 exponent (bias 7), 3 mantissa bits. It gives up infinities
//   to gain range: only S.1111.111 is NaN, so S.1111.110 = ±448 is the largest finite value.
//   Subnormals go down to 2^-9.
// E5M2: IEEE-754 style (bias 15): exponent 11111 with mantissa 0 is ±inf, other mantissas
//   NaN; largest finite 57344 = 1.75·2^15; subnormals down to 2^-16.
//
// Rounding is round-to-nearest, ties to even, in both modes. What happens past the largest
// finite value is the mode:
// - 'satfinite' (default): clamp to ±max, and ±inf also becomes ±max. This is what the FP8
//   attention kernels get: on SM89/SM90 the f32 → f8x2 conversion is `cvt.rn.satfinite`
//   (PTX requires the .satfinite qualifier for the e4m3x2/e5m2x2 destinations), so a score,
//   a P value or a quantized input never turns into inf/NaN on its way into a wgmma.
// - 'overflow': the OCP non-saturating conversion: E5M2 overflows to ±inf as IEEE does;
//   E4M3, having no inf, overflows to NaN.
// NaN stays NaN in both modes (E4M3's NaN code keeps the sign; we return 0x7F / 0xFF).

export type Fp8Format = 'e4m3' | 'e5m2';
export type Fp8Overflow = 'satfinite' | 'overflow';

export interface Fp8Spec {
  expBits: number;
  manBits: number;
  bias: number;
  /** Largest finite magnitude. */
  max: number;
  /** Smallest normal magnitude 2^(1-bias). */
  minNormal: number;
  /** Smallest subnormal magnitude (the quantum of the lowest binade). */
  minSubnormal: number;
  hasInf: boolean;
}

export const FP8: Record<Fp8Format, Fp8Spec> = {
  e4m3: { expBits: 4, manBits: 3, bias: 7, max: 448, minNormal: 2 ** -6, minSubnormal: 2 ** -9, hasInf: false },
  e5m2: { expBits: 5, manBits: 2, bias: 15, max: 57344, minNormal: 2 ** -14, minSubnormal: 2 ** -16, hasInf: true },
};

// The binary exponent of a float64, read from its bits (exact; floor(log2) is not always).
const f64 = new Float64Array(1);
const words = new Uint32Array(f64.buffer);
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
function exponentOf(a: number): number {
  f64[0] = a;
  const biased = (words[HI] >>> 20) & 0x7ff;
  // float64 subnormals are far below any fp8 quantum; treat them as the lowest binade.
  return biased === 0 ? -1023 : biased - 1023;
}

/** x rounded to the nearest multiple of 2^k, ties to the even multiple (exact in float64). */
function roundToQuantum(a: number, k: number): number {
  const q = 2 ** k;
  const r = a / q; // exact: q is a power of two
  const fl = Math.floor(r);
  const diff = r - fl;
  const n = diff > 0.5 || (diff === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  return n * q;
}

/** Round x to the format; returns the value the 8-bit code decodes to. */
export function roundFp8(format: Fp8Format, x: number, mode: Fp8Overflow = 'satfinite'): number {
  const s = FP8[format];
  if (Number.isNaN(x)) return NaN;
  if (x === 0) return x; // keeps -0
  const neg = x < 0;
  const a = Math.abs(x);
  let r: number;
  if (a === Infinity) r = Infinity;
  else {
    const e = Math.max(exponentOf(a), 1 - s.bias);
    r = roundToQuantum(a, e - s.manBits);
  }
  if (r > s.max) {
    if (mode === 'satfinite') r = s.max;
    else r = s.hasInf ? Infinity : NaN;
  }
  if (Number.isNaN(r)) return NaN;
  return neg ? -r : r;
}

export const roundE4m3 = (x: number): number => roundFp8('e4m3', x);
export const roundE5m2 = (x: number): number => roundFp8('e5m2', x);

/** The value of an 8-bit code (0..255). */
export function decodeFp8(format: Fp8Format, code: number): number {
  if (!Number.isInteger(code) || code < 0 || code > 255) throw new RangeError(`fp8 code must be an integer in 0..255, got ${code}`);
  const s = FP8[format];
  const sign = code & 0x80 ? -1 : 1;
  const e = (code >>> s.manBits) & ((1 << s.expBits) - 1);
  const m = code & ((1 << s.manBits) - 1);
  const eMax = (1 << s.expBits) - 1;
  if (format === 'e4m3' && e === eMax && m === (1 << s.manBits) - 1) return NaN;
  if (s.hasInf && e === eMax) return m === 0 ? sign * Infinity : NaN;
  if (e === 0) return sign * m * s.minSubnormal;
  return sign * 2 ** (e - s.bias) * (1 + m / (1 << s.manBits));
}

/** The 8-bit code of x after rounding (roundFp8 with the same mode); every NaN gives 0x7F. */
export function encodeFp8(format: Fp8Format, x: number, mode: Fp8Overflow = 'satfinite'): number {
  const s = FP8[format];
  const r = roundFp8(format, x, mode);
  if (Number.isNaN(r)) return 0x7f;
  const sign = r < 0 || Object.is(r, -0) ? 0x80 : 0;
  const a = Math.abs(r);
  if (a === Infinity) return sign | (((1 << s.expBits) - 1) << s.manBits);
  if (a < s.minNormal) return sign | (a / s.minSubnormal); // subnormal (or zero): mantissa counts quanta
  const e = exponentOf(a);
  const m = (a / 2 ** e - 1) * (1 << s.manBits);
  return sign | ((e + s.bias) << s.manBits) | m;
}
