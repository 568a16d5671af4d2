// Symmetric INT8 quantization, as SageAttention uses for Q and K: one scale per tensor or
// per tile, scale = max|x| / 127, code = round(x / scale) clamped to [-127, 127] (the value
// -128 is left unused so that the range is symmetric and negation never overflows).
// Rounding is to nearest, ties to even (torch.round, and cvt.rni on the GPU).

export const INT8_MAX = 127;

/** Round to the nearest integer, ties to even. */
export function roundHalfEven(x: number): number {
  const fl = Math.floor(x);
  const diff = x - fl;
  return diff > 0.5 || (diff === 0.5 && fl % 2 !== 0) ? fl + 1 : fl;
}

/** The scale that maps max|x| to 127; 1 for an all-zero block (its codes are all 0 anyway). */
export function int8Scale(amax: number): number {
  if (!Number.isFinite(amax)) throw new RangeError(`int8 scale: max |x| must be finite, got ${amax}`);
  return amax > 0 ? amax / INT8_MAX : 1;
}

/** The INT8 code of x under a scale (saturating, as cvt.sat.s8 does). */
export function quantizeInt8(x: number, scale: number): number {
  const q = roundHalfEven(x / scale);
  return q > INT8_MAX ? INT8_MAX : q < -INT8_MAX ? -INT8_MAX : q;
}
