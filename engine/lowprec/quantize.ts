// Scaled FP8 quantization of a tensor's rows, the way FA3's FP8 path feeds its inputs:
// one scale per tensor (the baseline) or one per tile of `blockRows` consecutive rows
// (a Br×d tile of Q, a Bc×d tile of K or V). scale = max|x| / max(format), so the tile's
// largest entry lands on the format's largest value; the stored code is round(x / scale).

import { FP8, roundFp8, type Fp8Format } from './fp8.ts';

export interface Fp8Quantized {
  /** Dequantized values code·scale, in the input's layout. */
  values: Float64Array;
  /** One scale per tile (length 1 for per-tensor). */
  scales: Float64Array;
  /** Entries that hit ±max (only the tile's max should). */
  saturated: number;
  /** The same, per tile. */
  tileSaturated: Int32Array;
  /** Non-zero entries that became 0. */
  flushed: number;
}

/** Quantize rows of length `cols`; blockRows = Infinity (or ≥ rows) gives one scale for the tensor. */
export function quantizeFp8Rows(x: ArrayLike<number>, cols: number, blockRows: number, format: Fp8Format): Fp8Quantized {
  const rows = x.length / cols;
  if (!Number.isInteger(rows)) throw new RangeError(`fp8 quantization: ${x.length} values are not whole rows of ${cols}`);
  const br = Math.min(rows, blockRows);
  const tiles = rows === 0 ? 0 : Math.ceil(rows / br);
  const max = FP8[format].max;
  const values = new Float64Array(x.length);
  const scales = new Float64Array(tiles);
  const tileSaturated = new Int32Array(tiles);
  let saturated = 0;
  let flushed = 0;
  for (let t = 0; t < tiles; t++) {
    const a0 = t * br * cols;
    const a1 = Math.min(rows, (t + 1) * br) * cols;
    let amax = 0;
    for (let i = a0; i < a1; i++) amax = Math.max(amax, Math.abs(x[i]));
    const scale = amax > 0 ? amax / max : 1;
    scales[t] = scale;
    for (let i = a0; i < a1; i++) {
      const c = roundFp8(format, x[i] / scale);
      if (Math.abs(c) === max) {
        saturated++;
        tileSaturated[t]++;
      }
      if (c === 0 && x[i] !== 0) flushed++;
      values[i] = c * scale;
    }
  }
  return { values, scales, saturated, tileSaturated, flushed };
}
