import { describe, expect, it } from 'vitest';
import { mulberry32, normalSource } from '../core/random.ts';
import { hadamardBlock, randomSigns, rotateRows } from './incoherent.ts';
import { quantizeFp8Rows } from './quantize.ts';
import { roundFp8 } from './fp8.ts';

function outlierRows(n: number, d: number, seed: number): Float64Array {
  const rnd = mulberry32(seed);
  const normal = normalSource(rnd);
  const x = new Float64Array(n * d);
  for (let i = 0; i < x.length; i++) x[i] = normal() + (rnd() < 0.001 ? 10 * normal() : 0);
  x[5] = 40; // make sure one outlier exists
  return x;
}
const rmse = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s / a.length);
};

/** Rotates n outlier rows of Q and K with one diagonal and checks every dot product against float64. */
function expectSameScores(n: number, d: number, seed: number, signSeed: number) {
  const q = outlierRows(n, d, seed);
  const k = outlierRows(n, d, seed + 1);
  const s = randomSigns(d, signSeed);
  const qr = rotateRows(q, d, s);
  const kr = rotateRows(k, d, s);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      let a = 0;
      let b = 0;
      for (let e = 0; e < d; e++) {
        a += q[i * d + e] * k[j * d + e];
        b += qr[i * d + e] * kr[j * d + e];
      }
      expect(b).toBeCloseTo(a, 10);
    }
  return { q, k, qr };
}

describe('incoherent processing', () => {
  it('leaves QKᵀ unchanged (float64 reference) and preserves row norms', () => {
    const d = 64;
    const { q, k, qr } = expectSameScores(8, d, 1, 7);
    // A different diagonal for K breaks the identity: the transform must be shared.
    const kOther = rotateRows(k, d, randomSigns(d, 8));
    let diff = 0;
    for (let e = 0; e < d; e++) diff += qr[e] * kOther[e] - q[e] * k[e];
    expect(Math.abs(diff)).toBeGreaterThan(1e-3);
  });
  it('rotates head dims that are not powers of two with Hadamard blocks of the largest power of two dividing d', () => {
    expect([hadamardBlock(128), hadamardBlock(96), hadamardBlock(80), hadamardBlock(3)]).toEqual([128, 32, 16, 1]);
    const d = 96;
    const { qr } = expectSameScores(4, d, 4, 2);
    // The outlier at column 5 spreads over its block of 32 (columns 0-31) and stays out of the others.
    expect(Math.abs(qr[5])).toBeLessThan(40 / 4);
    let outside = 0;
    for (let e = 32; e < d; e++) outside = Math.max(outside, Math.abs(qr[e]));
    expect(outside).toBeLessThan(6);
  });
  it('spreads an outlier over the row: its max |x| falls towards the row RMS, the norm stays', () => {
    const d = 128;
    const x = outlierRows(1, d, 3); // x[5] = 40, the rest ~N(0,1)
    const xr = rotateRows(x, d, randomSigns(d, 11));
    const maxAbs = (a: ArrayLike<number>) => Math.max(...Array.from(a, Math.abs));
    const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((t, v) => t + v * v, 0));
    expect(norm(xr)).toBeCloseTo(norm(x), 10);
    expect(maxAbs(x)).toBe(40);
    expect(maxAbs(xr)).toBeLessThan(maxAbs(x) / 4);
  });
});

describe('fp8 tile quantization', () => {
  it('gives one scale per tile, the tile max landing on 448', () => {
    const cols = 4;
    const x = Float64Array.from({ length: 3 * 2 * cols }, (_, i) => Math.sin(i) * (i < 8 ? 100 : 1));
    const qz = quantizeFp8Rows(x, cols, 2, 'e4m3');
    expect(qz.scales.length).toBe(3);
    for (let t = 0; t < 3; t++) {
      const tile = Array.from(x.subarray(t * 8, t * 8 + 8));
      const amax = Math.max(...tile.map(Math.abs));
      expect(qz.scales[t]).toBe(amax / 448);
      for (let i = 0; i < 8; i++) expect(qz.values[t * 8 + i]).toBe(roundFp8('e4m3', tile[i] / qz.scales[t]) * qz.scales[t]);
    }
    expect(quantizeFp8Rows(x, cols, Infinity, 'e4m3').scales.length).toBe(1);
    // Per-block scales follow the small tiles: less error than one scale set by the large one.
    const perTensor = rmse(quantizeFp8Rows(x, cols, Infinity, 'e4m3').values.subarray(8), x.subarray(8));
    const perBlock = rmse(qz.values.subarray(8), x.subarray(8));
    expect(perBlock).toBeLessThan(perTensor);
  });
});
