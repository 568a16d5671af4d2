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

import type { AttentionInputs } from '../../core/inputs.ts';
import { DTYPES, isFp8, type AttentionProblem } from '../../core/problem.ts';
import { requireSupported } from '../capabilities.ts';
import { quantizeFp8Inputs, type Fp8Prepared, type Fp8Quantization } from '../fp8-inputs.ts';
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

/** FA3's FP8 inputs: its FP8 path's refusals, then the shared quantization with P cast to e4m3 (flash_fwd_kernel_sm90.h l. 412-416). */
export function prepareFp8(p: AttentionProblem, x: AttentionInputs, f: Fp8Quantization, blockM: number, blockN: number): Fp8Prepared {
  // The WebGPU backend quantizes through here without passing the forward's entry.
  requireSupported('fa3', FA3_SUPPORTS, 'forward', p);
  return quantizeFp8Inputs(p, x, f, blockM, blockN, 'e4m3');
}
