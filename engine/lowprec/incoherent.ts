// FA3's incoherent processing: Q and K are both multiplied (along the head dim) by M = H·D,
// H the normalized Walsh–Hadamard matrix and D a random ±1 diagonal. M is orthogonal, so
// (QM)(KM)ᵀ = Q M Mᵀ Kᵀ = QKᵀ in exact arithmetic; what changes is the spread of each row:
// an outlier channel is smeared over all d channels, so a row's max |x| drops towards its
// RMS and FP8 quantization (whose step follows max |x|) loses less.

import { mulberry32 } from '../random.ts';

/** The ±1 diagonal of length d drawn from a seed. */
export function randomSigns(d: number, seed: number): Int8Array {
  const rnd = mulberry32(seed);
  const s = new Int8Array(d);
  for (let i = 0; i < d; i++) s[i] = rnd() < 0.5 ? -1 : 1;
  return s;
}

/**
 * Rows of length d (row-major, any number of rows) multiplied by H·D, with H normalized by
 * 1/sqrt(d). d must be a power of two (the Hadamard transform exists only there).
 */
export function rotateRows(x: ArrayLike<number>, d: number, signs: Int8Array): Float64Array {
  if (!(d > 0 && (d & (d - 1)) === 0)) throw new RangeError(`incoherent processing needs a power-of-two head dim, got d = ${d}`);
  if (signs.length !== d) throw new RangeError(`incoherent processing: ${signs.length} signs for head dim ${d}`);
  if (x.length % d !== 0) throw new RangeError(`incoherent processing: ${x.length} values are not whole rows of ${d}`);
  const out = new Float64Array(x.length);
  const norm = 1 / Math.sqrt(d);
  for (let r0 = 0; r0 < x.length; r0 += d) {
    // Row vector times D (scales column e by signs[e]) then times H: the fast transform.
    for (let e = 0; e < d; e++) out[r0 + e] = x[r0 + e] * signs[e];
    for (let h = 1; h < d; h *= 2) {
      for (let i = 0; i < d; i += 2 * h) {
        for (let j = i; j < i + h; j++) {
          const a = out[r0 + j];
          const b = out[r0 + j + h];
          out[r0 + j] = a + b;
          out[r0 + j + h] = a - b;
        }
      }
    }
    for (let e = 0; e < d; e++) out[r0 + e] *= norm;
  }
  return out;
}
