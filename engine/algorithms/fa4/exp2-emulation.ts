// FA4's software exp2 (flash_attn/cute/utils.py@0251105a, ex2_emulation_2, called from
// softmax.py's apply_exp2_convert; which elements take it: tiles.ts): part of
// the exponentials run on the FMA pipe instead of the MUFU unit, so the two units share
// the softmax load. Computed here for real on a float32 path (Math.fround after each op),
// so its error is the kernel's error, not a stand-in.
//
//   1. clamp x to ≥ −127 (2^−127 is below every useful P; keeps the exponent field valid);
//   2. Cody–Waite style range reduction: add 1.5·2^23 rounding *down* — at that magnitude
//      the float32 spacing is 1, so the sum holds ⌊x⌋ in its low mantissa bits; subtract the
//      constant back (exact) to get ⌊x⌋, and f = x − ⌊x⌋ ∈ [0, 1) (exact);
//   3. 2^f by a degree-3 polynomial in Horner form, one fused multiply-add per step;
//   4. 2^⌊x⌋ · 2^f by integer arithmetic on the bits: shifting the rounded sum's bits left by
//      23 moves ⌊x⌋ (two's complement) into the exponent field, and adding that to the bits
//      of 2^f ∈ [1, 2) adds ⌊x⌋ to its exponent. No multiply, no MUFU.
//
// The polynomial coefficients are the kernel's (a minimax-style fit of 2^f on [0, 1)).

const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

export const EXP2_POLY = [1.0, 0.6951461434364319, 0.22756439447402954, 0.07711908966302872].map(Math.fround);

const ROUND_INT = 2 ** 23 + 2 ** 22;

/** One fused multiply-add rounded once to float32 (the product of two float32 values is exact in float64). */
function fmaF32(a: number, b: number, c: number): number {
  return Math.fround(a * b + c);
}

export function exp2Emulated(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const xc = Math.fround(Math.max(x, -127));
  // add.rm.f32: x + 1.5·2^23 rounded toward −∞; in [2^23, 2^24) float32 holds integers exactly.
  const rounded = Math.floor(xc + ROUND_INT);
  const back = rounded - ROUND_INT; // exact: ⌊x⌋
  const frac = Math.fround(xc - back); // exact for |x| < 2^23
  const [c0, c1, c2, c3] = EXP2_POLY;
  let poly = fmaF32(c3, frac, c2);
  poly = fmaF32(poly, frac, c1);
  poly = fmaF32(poly, frac, c0);
  f32[0] = rounded;
  const roundedBits = i32[0];
  f32[0] = poly;
  i32[0] = (roundedBits << 23) + i32[0];
  return f32[0];
}

/** The MUFU path (ex2.approx), modelled as exact 2^x rounded to float32. */
export function exp2Hardware(x: number): number {
  return Math.fround(2 ** x);
}
