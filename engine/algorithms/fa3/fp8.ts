// What FA3's FP8 forward does to its inputs before the first tile is touched, and how it
// casts P: the part of the FP8 path that is not the schedule (forward.ts keeps the schedule).
//
// The defaults are the shipped kernel (hopper/ at 0251105a): e4m3 inputs with one descale
// per (batch, KV head) for each of Q, K and V (flash_api.cpp l. 694-696: q_descale is
// (b, h_k), shared by the query heads of a group). The kernel folds q_descale·k_descale into
// the softmax scale (flash_fwd_kernel_sm90.h l. 412-416, where Max_offset = 8 also gives the
// P·2⁸ below) and multiplies O by v_descale when it finalizes (mainloop l. 1241-1242); here
// the inputs are stored as code·scale, which gives the same products up to fp32 rounding.
// Two switches reproduce the experiment of §4.3 / Table 3 of the FA3 paper (arXiv
// 2407.08608), which the shipped kernel does not do, so both are off by default:
// - incoherent: Q and K (per batch and head) multiplied by the same random Hadamard M = D·H
//   along d (block-diagonal when d is not a power of two); QKᵀ is unchanged in exact
//   arithmetic (engine/lowprec/incoherent.ts).
// - blockQuant: one scale per Br×d tile of Q and per Bc×d tile of K and V (scale =
//   max|x| / max(format)).
// e5m2 is a labelled what-if: the kernel takes e4m3 only (flash_api.cpp l. 715); FlashScope
// runs e5m2 through the same path so chapter 12 can show what the wider range costs.
// - P is multiplied by pScale and cast to e4m3 before P·V (the row sum l keeps the fp32 P, as
//   the kernel sums before converting). FA3's kernel uses pScale = 256: it subtracts
//   (m − 8) in log2 units, so P lies in [0, 256] and small values keep more bits; with
//   pScale = 1 every P at or below 2⁻¹⁰ (half of e4m3's smallest subnormal, 2⁻⁹) flushes to zero.
// - reverseKv: K/V blocks last to first, the kernel's order; off, first to last.
//
// The quantized inputs are stored as their dequantized values code·scale, so the schedule's
// fp32 dot products see exactly the numbers the tensor cores multiply (code products are
// exact in fp32; the descale multiplies once per tile in the kernel, once per element here,
// which differs by fp32 rounding only).

import { kOffset, qOffset, vOffset, type AttentionInputs } from '../../core/inputs.ts';
import { DTYPES, isFp8, type AttentionProblem } from '../../core/problem.ts';
import { roundFp8, type Fp8Format } from '../../lowprec/fp8.ts';
import { randomSigns, rotateRows } from '../../lowprec/incoherent.ts';
import { quantizeFp8Rows } from '../../lowprec/quantize.ts';
import { requireSupported } from '../capabilities.ts';
import type { FeatureSpecs } from '../features.ts';
import { FA3_SUPPORTS } from './supports.ts';

const FP8_DTYPES = DTYPES.filter(isFp8);

export const FA3_FP8_FEATURES = {
  blockQuant: {
    default: false,
    panel: true,
    dtypes: FP8_DTYPES,
    doc: "FP8, the FA3 paper's experiment (Table 3): one scale per Br×d tile of Q and Bc×d tile of K and V (off, the shipped kernel: one descale per (batch, KV head))",
  },
  incoherent: {
    default: false,
    panel: true,
    dtypes: FP8_DTYPES,
    doc: "FP8, the FA3 paper's experiment (Table 3): multiply Q and K by the same random Hadamard transform before quantizing (spreads outlier channels; block-diagonal when d is not a power of two); the shipped kernel does not",
  },
  pScale: {
    default: 256,
    panel: true,
    dtypes: FP8_DTYPES,
    check: (v: number) =>
      Number.isInteger(Math.log2(v)) && v >= 1 && v <= 256
        ? undefined
        : `must be a power of two from 1 to 256 (P·pScale must stay within e4m3's 448), got ${v}`,
    doc: 'FP8: static factor applied to P before its e4m3 cast (the kernel uses 256; at 1 every P at or below 2⁻¹⁰ flushes)',
  },
  seed: {
    default: 0,
    label: 'Hadamard seed',
    panel: true,
    dtypes: FP8_DTYPES,
    check: (v: number) => (Number.isInteger(v) && v >= 0 ? undefined : `must be an integer >= 0, got ${v}`),
    doc: 'FP8: seed of the random ±1 diagonal of the Hadamard transform',
  },
} satisfies FeatureSpecs;

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

export function prepareFp8(
  p: AttentionProblem,
  x: AttentionInputs,
  f: { blockQuant: boolean; incoherent: boolean; pScale: number; seed: number },
  blockM: number,
  blockN: number,
): Fp8Prepared {
  // The WebGPU backend quantizes through here without passing the forward's entry.
  requireSupported('fa3', FA3_SUPPORTS, 'forward', p);
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
    castP: (v: number) => roundFp8('e4m3', v * pScale) / pScale,
  };
}
