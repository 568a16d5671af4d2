import { describe, expect, it } from 'vitest';
import type { MatrixConfig } from './device.ts';
import {
  chooseDecodeMatrix,
  DECODE_MATRIX_WORKGROUPS,
  DECODE_RESCALE_LOG,
  decodeMatrixKernelWgsl,
  decodeMatrixLayout,
  preferDecodeMatrix,
} from './decode-matrix-kernel.ts';
import { decodeSplits } from './decode-group-kernel.ts';
import { halfBits, halfToFloat } from './half.ts';

const plain = { masked: false, softcap: false, alibi: false };
// The f16 configs Dawn reports on the H100 and H200 (BENCHMARKS.md).
const nvidia = [
  { M: 16, N: 16, K: 16, componentType: 'f16', resultComponentType: 'f32' },
  { M: 16, N: 8, K: 16, componentType: 'f16', resultComponentType: 'f32' },
  { M: 16, N: 8, K: 8, componentType: 'f16', resultComponentType: 'f32' },
] as unknown as MatrixConfig[];
const shape = (hq: number, hk: number, nk = 8192, d = 128, nq = 1) => ({ d, dv: d, hq, hk, nq, nk });

describe('subgroup-matrix decoding: configuration', () => {
  it("packs a key head's query rows into one 16-row tile of 16×16×16 matrices, one subgroup per workgroup", () => {
    for (const [hq, hk, rows] of [
      [64, 8, 8],
      [32, 8, 4],
      [128, 8, 16],
    ]) {
      const c = chooseDecodeMatrix(shape(hq, hk), plain, nvidia, 32, 32)!;
      expect([c.rows, c.m, c.n, c.sg]).toEqual([rows, 16, 16, 32]);
    }
    // d = 128: S 16 × 20 f32, P 16 × 24 f16, the K/V block 16 × 136 f16 and a flag, 6404 B: seven workgroups in 48 KiB
    const c = chooseDecodeMatrix(shape(64, 8), plain, nvidia, 32, 32)!;
    expect(decodeMatrixLayout(c).bytes).toBe(6404);
  });

  it('leaves to the group kernel what it cannot take', () => {
    expect(chooseDecodeMatrix(shape(64 * 3, 8), plain, nvidia, 32, 32)).toBeUndefined(); // 24 rows > 16
    expect(chooseDecodeMatrix(shape(64, 8, 15), plain, nvidia, 32, 32)).toBeUndefined(); // fewer keys than a block
    expect(chooseDecodeMatrix(shape(64, 8, 8192, 72), plain, nvidia, 32, 32)).toBeUndefined(); // d not whole matrices
    expect(chooseDecodeMatrix(shape(64, 8), plain, nvidia, 16, 64)).toBeUndefined(); // subgroup size not fixed
    expect(chooseDecodeMatrix(shape(64, 8), plain, [], 32, 32)).toBeUndefined(); // no f16 matrices
  });

  it('is the default only past the rows the group kernel keeps in one workgroup, on 896 workgroups', () => {
    expect([1, 2, 4].map(preferDecodeMatrix)).toEqual([false, false, false]);
    expect([6, 8, 16].map(preferDecodeMatrix)).toEqual([true, true, true]);
    expect(decodeSplits(32768, 32, DECODE_MATRIX_WORKGROUPS)).toBe(28); // Hq 64 / Hk 8, B = 4: 28 splits of 1172 keys
  });
});

describe('subgroup-matrix decoding: WGSL', () => {
  const c = chooseDecodeMatrix(shape(64, 8), plain, nvidia, 32, 32)!;
  const staged = decodeMatrixKernelWgsl(c);

  it('binds what the group kernel binds, so the same dispatch and LSE combine serve it', () => {
    for (const b of [0, 1, 2, 3, 4, 5, 6]) expect(staged).toContain(`@group(0) @binding(${b})`);
    expect(staged).toContain('var<storage, read> kw: array<vec4<u32>>'); // 16-byte K loads
  });

  it('gives every workgroup-memory matrix load and store a run-time offset (the barrier trap)', () => {
    const ops = staged.match(/subgroupMatrix(Load<[^>]+>+, \w+>|Store<\w+>)\(&(ss|ps|kv), [^,]+,/g) ?? [];
    expect(ops.length).toBeGreaterThan(10);
    for (const op of ops) expect(op).toMatch(/, z( \+ \d+u)?,$/);
  });

  it('reads K and V a block ahead into registers (one 16-byte word per lane per 32 in the block)', () => {
    expect(staged.match(/kp\d+ = kw\[/g)?.length).toBe(2 * ((16 * 128) / 8 / 32)); // before the loop and in it
    expect(staged.match(/vp\d+ = vw\[/g)?.length).toBe(2 * ((16 * 128) / 8 / 32));
  });
});

/**
 * The kernel's scheme on the host in float64, except where the kernel rounds: P to f16. Splits
 * of the key range, blocks of BN keys whose last one starts BN keys before the head's end (the
 * repeated keys masked), a row max that moves only past m + DECODE_RESCALE_LOG (O and l then
 * rescaled), and the LSE combine of the splits' partials.
 */
function schemeDecode(q: number[], k: number[][], v: number[][], splitLen: number, bn: number) {
  const nk = k.length;
  const dv = v[0].length;
  const f16 = (x: number) => halfToFloat(halfBits(x));
  const cover = new Array<number>(nk).fill(0);
  const parts: { o: number[]; lse: number }[] = [];
  let rescales = 0;
  for (let lo = 0; lo < nk; lo += splitLen) {
    const hi = Math.min(nk, lo + splitLen);
    let m = -Infinity;
    let l = 0;
    const o = new Array<number>(dv).fill(0);
    for (let j0 = lo; j0 < hi; j0 += bn) {
      const b = Math.min(j0, nk - bn);
      const s: number[] = [];
      for (let j = b; j < b + bn; j++) s.push(j >= j0 && j < hi ? q.reduce((a, x, i) => a + x * k[j][i], 0) : -Infinity);
      const bmax = Math.max(...s);
      const grow = m > -Infinity && bmax > m + DECODE_RESCALE_LOG;
      const mnew = m === -Infinity || grow ? bmax : m;
      if (grow) {
        rescales++;
        const a = Math.exp(m - mnew);
        l *= a;
        for (let c = 0; c < dv; c++) o[c] *= a;
      }
      m = mnew;
      s.forEach((x, t) => {
        if (x === -Infinity) return;
        cover[b + t]++;
        const p = f16(Math.exp(x - m));
        l += p;
        for (let c = 0; c < dv; c++) o[c] += p * v[b + t][c];
      });
    }
    parts.push({ o: o.map((x) => x / l), lse: m + Math.log(l) });
  }
  const mx = Math.max(...parts.map((p) => p.lse));
  const w = parts.map((p) => Math.exp(p.lse - mx));
  const sw = w.reduce((a, x) => a + x, 0);
  const o = new Array<number>(dv).fill(0).map((_, c) => parts.reduce((a, p, i) => a + p.o[c] * w[i], 0) / sw);
  return { o, lse: mx + Math.log(sw), cover, rescales };
}

function exact(q: number[], k: number[][], v: number[][]) {
  const s = k.map((kr) => q.reduce((a, x, i) => a + x * kr[i], 0));
  const m = Math.max(...s);
  const e = s.map((x) => Math.exp(x - m));
  const l = e.reduce((a, x) => a + x, 0);
  return { o: v[0].map((_, c) => e.reduce((a, x, j) => a + x * v[j][c], 0) / l), lse: m + Math.log(l) };
}

describe('subgroup-matrix decoding: the scheme against float64', () => {
  // a seeded normal generator, so the test is the same on every run
  let seed = 12345;
  const uniform = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return (seed + 0.5) / 2147483648;
  };
  const normal = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  const matrix = (rows: number, cols: number, scale = 1) =>
    Array.from({ length: rows }, () => Array.from({ length: cols }, () => normal() * scale));

  it('covers every key once (ragged splits and a shifted last block) and stays within f16 P rounding', () => {
    const d = 32;
    for (const [nk, splitLen] of [
      [77, 24],
      [300, 128],
      [16, 16],
      [33, 1000],
    ]) {
      const q = matrix(1, d, 1 / Math.sqrt(d))[0];
      const k = matrix(nk, d);
      const v = matrix(nk, d);
      const got = schemeDecode(q, k, v, splitLen, 16);
      expect(got.cover).toEqual(new Array(nk).fill(1));
      const ref = exact(q, k, v);
      const err = Math.max(...got.o.map((x, c) => Math.abs(x - ref.o[c])), Math.abs(got.lse - ref.lse));
      expect(err).toBeLessThan(2e-3); // P's f16 rounding: 2^-11 relative per weight
    }
  });

  it('rescales O when a row max climbs past m + 8 and still matches (logits ×12)', () => {
    const d = 32;
    const q = matrix(1, d, 12 / Math.sqrt(d))[0];
    const k = matrix(500, d);
    const v = matrix(500, d);
    const got = schemeDecode(q, k, v, 250, 16);
    expect(got.rescales).toBeGreaterThan(0);
    const ref = exact(q, k, v);
    expect(Math.max(...got.o.map((x, c) => Math.abs(x - ref.o[c])))).toBeLessThan(3e-3);
    expect(Math.abs(got.lse - ref.lse) / Math.abs(ref.lse)).toBeLessThan(1e-6);
  });
});
