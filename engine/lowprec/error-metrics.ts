// How far an algorithm's output is from the float64 reference, in the three numbers the
// low-precision papers report: max abs error, RMSE (FA3's table) and relative L1
// (Σ|o − ref| / Σ|ref|, SageAttention's). NaN outputs make every figure NaN: never hidden.

export interface OutputError {
  max_abs: number;
  rmse: number;
  rel_l1: number;
  /** Elements compared. */
  count: number;
}

export function outputError(o: ArrayLike<number>, ref: ArrayLike<number>): OutputError {
  if (o.length !== ref.length) throw new RangeError(`error metrics: output has ${o.length} elements, the reference ${ref.length}`);
  let maxAbs = 0;
  let sq = 0;
  let l1 = 0;
  let refL1 = 0;
  for (let i = 0; i < o.length; i++) {
    const e = Math.abs(o[i] - ref[i]);
    if (Number.isNaN(e)) maxAbs = NaN;
    else if (e > maxAbs) maxAbs = e;
    sq += e * e;
    l1 += e;
    refL1 += Math.abs(ref[i]);
  }
  const n = o.length;
  return { max_abs: maxAbs, rmse: n ? Math.sqrt(sq / n) : 0, rel_l1: refL1 > 0 ? l1 / refL1 : l1 === 0 ? 0 : Infinity, count: n };
}
