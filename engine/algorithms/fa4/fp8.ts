// FA4's FP8 forward (flash_attn/cute at 0251105a): what it does to its inputs and to P, the part
// of the FP8 path that is not the schedule (forward.ts keeps the schedule).
//
// - Inputs: Q, K and V are e4m3 or e5m2, all one dtype (interface.py l. 637-643), with one
//   descale per (batch, KV head) for each (l. 748-756; identity when not given, flash_fwd_sm100.py
//   l. 2003-2019); q_descale·k_descale folds into the softmax scale (l. 2179-2188), v_descale
//   multiplies O in the correction epilogue (l. 2746). Stored here as code·scale, as FA3's path does.
// - P: scaled by 2^max_offset = 2^8 and cast to the input dtype before P·V (l. 85-90, 2182); the row
//   sum is taken in the same scaled units, so O / l and the LSE (l. 2839) lose the factor again.
// - No lazy rescale: rescale_threshold is 0 for 8-bit inputs (l. 2190), since P·2^8 with a stale
//   max would pass e4m3's 448; a given threshold must keep 8 + threshold below log2 of the
//   format's max (the assertion of l. 2192-2195).
// - O is written in bf16 (interface.py l. 700).

import type { AttentionInputs } from '../../core/inputs.ts';
import { ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { FP8 } from '../../lowprec/fp8.ts';
import { fp8Format, quantizeFp8Inputs, type Fp8Prepared } from '../fp8-inputs.ts';

/** max_offset for 8-bit inputs (flash_fwd_sm100.py l. 2182). */
export const FA4_FP8_MAX_OFFSET = 8;

/** The inputs as the kernel's tensor cores read them, and P's cast to the input format. */
export function prepareFa4Fp8(p: AttentionProblem, x: AttentionInputs, blockM: number, blockN: number): Fp8Prepared {
  const format = fp8Format(p);
  return quantizeFp8Inputs(
    p,
    x,
    { blockQuant: false, incoherent: false, pScale: 2 ** FA4_FP8_MAX_OFFSET, seed: 0 },
    blockM,
    blockN,
    format,
  );
}

/** The lazy-rescale threshold of an FP8 run: 0 unless given, and a given one must keep P·2^8 within the format. */
export function fa4Fp8RescaleThreshold(p: AttentionProblem, given: number | undefined): number {
  if (given === undefined) return 0;
  const format = fp8Format(p);
  const log2Max = Math.log2(FP8[format].max);
  if (FA4_FP8_MAX_OFFSET + given >= log2Max)
    throw new ProblemError(
      'features.rescaleThreshold',
      `max_offset (${FA4_FP8_MAX_OFFSET}) + rescale_threshold (${given}) must stay below log2(max ${format} value) = ${log2Max.toFixed(3)} to avoid saturating P (flash_attn/cute/flash_fwd_sm100.py@0251105a l. 2192-2195)`,
    );
  return given;
}
