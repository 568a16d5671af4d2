// FA3's P cast emulated in WGSL, which has no 8-bit float type: P·pScale rounded to the
// nearest e4m3 value (ties to even, saturating at 448) and divided back, in f32. The f32
// kernels call it between the row sum (which keeps the f32 P, as FA3 sums before converting)
// and P·V, so a WebGPU run shows which P values FP8 flushes at full size. Inputs are
// quantized on the host (engine/algorithms/fa3/fp8.ts) before upload.
//
// Exactness: the quantum of e4m3 at exponent e is 2^(max(e, −6) − 3); it and its inverse are
// built from their bits (exp2 in WGSL is not exact), the product by a power of two is exact,
// and WGSL's round() is round-half-to-even.

/** WGSL for `fn cast_p(p: f32) -> f32` (p ≥ 0) with the static factor pScale baked in. */
export function castPWgsl(pScale: number): string {
  if (!(Number.isInteger(Math.log2(pScale)) && pScale >= 1 && pScale <= 256))
    throw new RangeError(`pScale must be a power of two from 1 to 256, got ${pScale}`);
  return /* wgsl */ `
const P_SCALE = ${pScale.toFixed(1)};
fn pow2(e: i32) -> f32 { return bitcast<f32>(u32(e + 127) << 23u); }
fn cast_p(p: f32) -> f32 {
  let x = p * P_SCALE;
  if (x <= 0.0) { return 0.0; }
  // Binary exponent of x (f32 subnormals read as very negative: they round to 0 here).
  let e = max(i32((bitcast<u32>(x) >> 23u) & 0xffu) - 127, -6);
  let r = min(round(x * pow2(3 - e)) * pow2(e - 3), 448.0);
  return r * (1.0 / P_SCALE);
}`;
}
