// FP8 inputs as an FP8 attention kernel's caller hands them over, and P as its P·V reads it:
// Q, K and V quantized with one scale per (batch, KV head) (or per tile, the FA3 paper's block
// quantization), optionally rotated by a random Hadamard transform first, and stored as their
// dequantized values code·scale, so the schedule's fp32 dot products see exactly the numbers the
// tensor cores multiply; P multiplied by a power of two and cast to an FP8 format before P·V.
// FA3 (./fa3/fp8.ts) and FA4 (./fa4/fp8.ts) quantize through here.

import { kOffset, qOffset, vOffset, type AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { roundFp8, type Fp8Format } from '../lowprec/fp8.ts';
import { randomSigns, rotateRows } from '../lowprec/incoherent.ts';
import { quantizeFp8Rows } from '../lowprec/quantize.ts';

/** How the inputs are quantized: per tile or per (batch, KV head), rotated or not, and P's static factor. */
export interface Fp8Quantization {
  blockQuant: boolean;
  incoherent: boolean;
  pScale: number;
  seed: number;
}

export interface Fp8Prepared {
  format: Fp8Format;
  /** Dequantized (and for incoherent, rotated) Q/K/V in the problem's layout. */
  x: AttentionInputs;
  /** One scale per (batch, head, tile) of Q; per (batch, kv head, tile) of K and V. */
  qScale: (b: number, h: number, row: number) => number;
  kScale: (b: number, hk: number, key: number) => number;
  vScale: (b: number, hk: number, key: number) => number;
  /** Saturated entries (at ±max of the format) of each loaded tile. */
  qSaturated: (b: number, h: number, row: number) => number;
  kSaturated: (b: number, hk: number, key: number) => number;
  vSaturated: (b: number, hk: number, key: number) => number;
  /** All saturated entries of Q, K and V. */
  saturated: number;
  pScale: number;
  /** P as P·V reads it: cast(P·pScale)/pScale, exact since pScale is a power of two. */
  castP: (p: number) => number;
}

export function fp8Format(p: AttentionProblem): Fp8Format {
  return p.dtype === 'fp8e5m2' ? 'e5m2' : 'e4m3';
}

interface Tiles {
  scales: Float64Array[];
  saturated: Int32Array[];
  rows: number;
}

export function quantizeFp8Inputs(
  p: AttentionProblem,
  x: AttentionInputs,
  f: Fp8Quantization,
  blockM: number,
  blockN: number,
  pFormat: Fp8Format,
): Fp8Prepared {
  const format = fp8Format(p);
  const signs = f.incoherent ? randomSigns(p.d, f.seed) : undefined;
  const out: AttentionInputs = { q: new Float32Array(x.q.length), k: new Float32Array(x.k.length), v: new Float32Array(x.v.length) };
  let saturated = 0;
  // One quantization per (batch, head) slice of a tensor: rows × cols starting at `base`.
  const quantize = (
    src: Float32Array,
    dst: Float32Array,
    base: number,
    rows: number,
    cols: number,
    tileRows: number,
    rotate: boolean,
    tiles: Tiles,
  ) => {
    let slice: ArrayLike<number> = src.subarray(base, base + rows * cols);
    if (rotate && signs) slice = rotateRows(slice, cols, signs);
    const qd = quantizeFp8Rows(slice, cols, f.blockQuant ? tileRows : Infinity, format);
    dst.set(qd.values, base);
    tiles.scales.push(qd.scales);
    tiles.saturated.push(qd.tileSaturated);
    tiles.rows = Math.min(rows, f.blockQuant ? tileRows : Infinity);
    saturated += qd.saturated;
  };
  const tq: Tiles = { scales: [], saturated: [], rows: 1 };
  const tk: Tiles = { scales: [], saturated: [], rows: 1 };
  const tv: Tiles = { scales: [], saturated: [], rows: 1 };
  const group = p.hq / p.hk;
  for (let b = 0; b < p.batch; b++) {
    // The kernel's q_descale is per (batch, KV head): the query heads of a group (contiguous
    // in memory) share one scale. The paper's block quantization scales each Br×d tile.
    if (f.blockQuant) for (let h = 0; h < p.hq; h++) quantize(x.q, out.q, qOffset(p, b, h, 0), p.nq, p.d, blockM, true, tq);
    else for (let hk = 0; hk < p.hk; hk++) quantize(x.q, out.q, qOffset(p, b, hk * group, 0), group * p.nq, p.d, Infinity, true, tq);
    for (let h = 0; h < p.hk; h++) {
      quantize(x.k, out.k, kOffset(p, b, h, 0), p.nk, p.d, blockN, true, tk);
      quantize(x.v, out.v, vOffset(p, b, h, 0), p.nk, p.dv, blockN, false, tv);
    }
  }
  const at = (t: Tiles, heads: number) => (b: number, h: number, row: number) => t.scales[b * heads + h][Math.floor(row / t.rows)];
  const satAt = (t: Tiles, heads: number) => (b: number, h: number, row: number) => t.saturated[b * heads + h][Math.floor(row / t.rows)];
  // Per (batch, KV head) Q scales: query head h reads its group's one scale.
  const qAt = f.blockQuant ? at(tq, p.hq) : (b: number, h: number) => tq.scales[b * p.hk + Math.floor(h / group)][0];
  const qSatAt = f.blockQuant ? satAt(tq, p.hq) : (b: number, h: number) => tq.saturated[b * p.hk + Math.floor(h / group)][0];
  const pScale = f.pScale;
  return {
    format,
    x: out,
    qScale: qAt,
    kScale: at(tk, p.hk),
    vScale: at(tv, p.hk),
    qSaturated: qSatAt,
    kSaturated: satAt(tk, p.hk),
    vSaturated: satAt(tv, p.hk),
    saturated,
    pScale,
    castP: (v: number) => roundFp8(pFormat, v * pScale) / pScale,
  };
}
