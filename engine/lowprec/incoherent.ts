// FA3's incoherent processing: Q and K are both multiplied (along the head dim) by M = D·H,
// H the normalized Walsh–Hadamard matrix (block-diagonal when d is not a power of two) and D
// a random ±1 diagonal. M is orthogonal, so
// (QM)(KM)ᵀ = Q M Mᵀ Kᵀ = QKᵀ in exact arithmetic; what changes is the spread of each row:
// an outlier channel is smeared over all d channels, so a row's max |x| drops towards its
// RMS and FP8 quantization (whose step follows max |x|) loses less.

import { mulberry32 } from '../core/random.ts';

/** The ±1 diagonal of length d drawn from a seed. */
export function randomSigns(d: number, seed: number): Int8Array {
  const rnd = mulberry32(seed);
  const s = new Int8Array(d);
  for (let i = 0; i < d; i++) s[i] = rnd() < 0.5 ? -1 : 1;
  return s;
}

/**
 * The Hadamard block size for a head dim: d itself when it is a power of two, else the
 * largest power of two dividing d (d = 96 → 32, d = 80 → 16). A block-diagonal matrix of
 * Hadamards is still orthogonal, so QKᵀ is still unchanged; it only spreads an outlier over
 * its own block instead of the whole row.
 */
export function hadamardBlock(d: number): number {
  return d & -d;
}

/**
 * Rows of length d (row-major, any number of rows) multiplied by D·H, D the ±1 diagonal and
 * H block-diagonal with normalized Walsh–Hadamard blocks of hadamardBlock(d).
 */
export function rotateRows(x: ArrayLike<number>, d: number, signs: Int8Array): Float64Array {
  if (!(Number.isInteger(d) && d > 0)) throw new RangeError(`incoherent processing: head dim must be a positive integer, got ${d}`);
  if (signs.length !== d) throw new RangeError(`incoherent processing: ${signs.length} signs for head dim ${d}`);
  if (x.length % d !== 0) throw new RangeError(`incoherent processing: ${x.length} values are not whole rows of ${d}`);
  const out = new Float64Array(x.length);
  const n = hadamardBlock(d);
  const norm = 1 / Math.sqrt(n);
  for (let r0 = 0; r0 < x.length; r0 += d) {
    // Row vector times D (scales column e by signs[e]) then times H: the fast transform per block.
    for (let e = 0; e < d; e++) out[r0 + e] = x[r0 + e] * signs[e];
    for (let b0 = r0; b0 < r0 + d; b0 += n) {
      for (let h = 1; h < n; h *= 2) {
        for (let i = 0; i < n; i += 2 * h) {
          for (let j = b0 + i; j < b0 + i + h; j++) {
            const a = out[j];
            const b = out[j + h];
            out[j] = a + b;
            out[j + h] = a - b;
          }
        }
      }
    }
    for (let e = 0; e < d; e++) out[r0 + e] *= norm;
  }
  return out;
}
