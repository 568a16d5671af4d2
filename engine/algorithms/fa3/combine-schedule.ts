// FA3's split-KV combine launch (hopper/flash_fwd_combine_kernel.h, flash_fwd_combine_launch_template.h
// at 0251105a): 256 threads per CTA, a kBlockM × kBlockK tile of O per CTA. The timeline draws it
// after the SM's split CTAs (engine/hw/split-combine.ts); simulate times it from the same bytes.

import { ceilDiv, unpackShape, type ProblemShape } from '../../hw/model.ts';
import { combineCtas, type CombineLaunch } from '../../hw/split-combine.ts';

const LAUNCH = 'hopper/flash_fwd_combine_launch_template.h@0251105a';
const KERNEL = 'hopper/flash_fwd_combine_kernel.h@0251105a';
const API = 'hopper/flash_api.cpp@0251105a';

/** The combine kernel's threads per CTA (kNThreads) and its cp.async ring of O partials (kStages). */
const THREADS = 256;
const STAGES = 4;

/** The combine launch for a problem run with `splits` > 1 splits (the given shape, not packed). */
export function fa3CombineOf(given: ProblemShape, splits: number): CombineLaunch {
  const s = unpackShape(given);
  const { blockM, blockK, kBlocks, ctas, readBytes, writeBytes } = combineCtas(s, splits);
  const logMaxSplits = blockM >= 16 && splits <= 16 ? 4 : Math.max(5, Math.ceil(Math.log2(splits)));
  const maxSplits = 2 ** logMaxSplits;
  // The grid is sized by max_seqlen_q for every batch; a varlen sequence's CTAs past its rows exit at once.
  const launched = ceilDiv(s.nq * s.hq, blockM) * kBlocks * s.batch;
  const lseBytes = (maxSplits * blockM + blockM) * 4;
  return {
    blockM,
    blockK,
    maxSplits,
    threads: THREADS,
    stages: STAGES,
    // MinBlocksPerMultiprocessor 2 with 256 threads caps the compiler at 128 registers.
    registers: 128,
    ctas,
    lseOffset: 0,
    oOffset: maxSplits * blockM * 4,
    smemBytes: lseBytes + STAGES * blockM * blockK * 4,
    readBytes,
    writeBytes,
    why: [
      `${API} l. 387-408, 1170-1185: num_splits ${splits} > 1 launches the combine kernel with kBlockK ${blockK} (dv ${s.dv})`,
      `${LAUNCH} l. 66-86: kBlockM ${blockM}, kLogMaxSplits ${logMaxSplits}, ${THREADS} threads`,
      `${KERNEL} l. 228-232: grid ${ceilDiv(s.nq * s.hq, blockM)} M blocks × ${kBlocks} K blocks × batch ${s.batch} (${launched} CTAs${ctas < launched ? `, ${ctas} with rows` : ''})`,
    ],
  };
}
