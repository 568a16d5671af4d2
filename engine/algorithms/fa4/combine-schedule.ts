// FA4's split-KV combine launch (flash_attn/cute/flash_fwd_combine.py, launched by
// flash_attn/cute/interface.py's _flash_attn_fwd_combine at 0251105a): 256 threads, a
// tile_m × k_block_size tile of O per CTA, a 4-stage cp.async ring of fp32 O partials. The
// timeline draws it after the SM's split CTAs (engine/hw/split-combine.ts).

import { ceilDiv, unpackShape, type ProblemShape } from '../../hw/model.ts';
import { combineCtas, type CombineLaunch } from '../../hw/split-combine.ts';

const IFACE = 'flash_attn/cute/interface.py@0251105a';
const COMBINE = 'flash_attn/cute/flash_fwd_combine.py@0251105a';
const SCHED = 'flash_attn/cute/tile_scheduler.py@0251105a';

/** FlashAttentionForwardCombine's defaults (num_threads, stages). */
const THREADS = 256;
const STAGES = 4;
/** SharedStorage aligns each buffer to 128 bytes. */
const align = (n: number) => ceilDiv(n, 128) * 128;

/** The combine launch for a problem run with `splits` > 1 splits (the given shape, not packed). */
export function fa4CombineOf(given: ProblemShape, splits: number): CombineLaunch {
  const s = unpackShape(given);
  const { blockM, blockK, kBlocks, rows, ctas, readBytes, writeBytes } = combineCtas(s, splits);
  const logMaxSplits = Math.max(Math.ceil(Math.log2(splits)), 4, blockM === 8 ? 5 : 0);
  const maxSplits = 2 ** logMaxSplits;
  // cu_seqlens_q / seqused_q reach the combine; a paged cache's seqused_k alone leaves its Q dense.
  const varlen = s.varlen?.seqlensQ !== undefined;
  // Varlen: the grid covers total_q · Hq rows plus a tile's slack per sequence; dense: every batch's seqlen_q · Hq rows.
  const mBlocks = varlen ? Math.floor((rows + s.batch * (blockM - 1)) / blockM) : ceilDiv(s.nq * s.hq, blockM) * s.batch;
  const launched = mBlocks * kBlocks;
  const lseBytes = maxSplits * blockM * 4;
  const oOffset = align(align(lseBytes) + blockM * 4);
  return {
    blockM,
    blockK,
    maxSplits,
    threads: THREADS,
    stages: STAGES,
    // The kernel sets no register bound (the compiler picks); the lane shows FA3's combine bound.
    registers: 128,
    ctas,
    lseOffset: 0,
    oOffset,
    smemBytes: oOffset + STAGES * blockM * blockK * 4,
    readBytes,
    writeBytes,
    why: [
      `${IFACE} l. 818-820, 1541-1552: num_splits ${splits} > 1 writes fp32 partials of O and LSE, then launches the combine kernel`,
      `${IFACE} l. 3643-3651: k_block_size ${blockK} (dv ${s.dv}), tile_m ${blockM}, log_max_splits ${logMaxSplits}`,
      `${COMBINE} l. 38-39, 276-285: ${THREADS} threads, ${STAGES} stages of O partials, ${oOffset + STAGES * blockM * blockK * 4} bytes of SMEM`,
      varlen
        ? `${COMBINE} l. 287-322 with ${SCHED} l. 1288-1300: grid ${mBlocks} M blocks (total_q · Hq ${rows}) × ${kBlocks} K blocks (${launched} CTAs${ctas < launched ? `, ${ctas} with rows` : ''})`
        : `${COMBINE} l. 287-322: grid ${ceilDiv(s.nq * s.hq, blockM)} M blocks × ${kBlocks} K blocks × batch ${s.batch} (${launched} CTAs)`,
    ],
  };
}
