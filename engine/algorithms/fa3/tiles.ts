// FA3's forward configuration for one problem, as the shipped SM90 kernel picks it. The
// stepper, the hardware schedule and `describe` all read this one function.
//
// Sources (Dao-AILab/flash-attention @ 0251105a):
//   tiles, P·V operand source, intra-warpgroup overlap: hopper/tile_size.h, tile_size_fwd_sm90 (l. 10-52)
//   K/V stages = 2: hopper/flash_fwd_launch_template.h l. 47
//   consumer warpgroups = kBlockM / 64 (AtomLayoutQK): hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp l. 89, 124
//   register split: hopper/flash_fwd_kernel_sm90.h l. 82-83
//   UseSchedulerBarrier, RescaleOBeforeGemm: hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp l. 352-356
//   V transposed in SMEM for FP8 (Transpose_V): same file l. 55

import { isFp8, type DType } from '../../core/problem.ts';

export interface Fa3TileInput {
  d: number;
  dv: number;
  dtype: DType;
  causal: boolean;
  /** Sliding window (is_local). */
  local?: boolean;
  softcap?: boolean;
}

export interface Fa3Config {
  blockM: number;
  blockN: number;
  /** P·V reads P from registers (wgmma RS); false: P is written to shared memory first (SS). */
  mmaPvIsRs: boolean;
  /** The kernel issues S_next = Q·K before O += P·V and overlaps the softmax with it. */
  intraWgOverlap: boolean;
  /** Consumer (MMA) warpgroups, 64 Q rows each. */
  consumers: number;
  /** setmaxnreg targets of the producer warpgroup and of each consumer warpgroup. */
  producerRegisters: number;
  consumerRegisters: number;
  /** Named-barrier ping-pong between consumer warpgroups on the tensor cores. */
  schedulerBarrier: boolean;
  /** O is rescaled before the P·V GEMM is issued (d > 128) instead of after its wait. */
  rescaleOBeforeGemm: boolean;
  /** FP8: V lands by TMA in sVt and the producer transposes it into sV, which wgmma reads. */
  transposeV: boolean;
  stages: number;
}

export const FA3_ROWS_PER_CONSUMER = 64;
export const FA3_KV_STAGES = 2;

function tileFor(t: Fa3TileInput): { blockM: number; blockN: number; rs: boolean; overlap: boolean } {
  const local = t.local === true;
  const softcap = t.softcap === true;
  if (!isFp8(t.dtype)) {
    if (t.d <= 64) {
      if (t.dv === 512) return { blockM: 64, blockN: 64, rs: false, overlap: false };
      if (t.dv === 256) return { blockM: 128, blockN: 96, rs: true, overlap: false };
      const n128 = t.causal || local;
      return { blockM: 192, blockN: n128 ? 128 : 192, rs: n128, overlap: true };
    }
    if (t.d <= 96) return { blockM: 192, blockN: local ? 128 : 144, rs: false, overlap: true };
    if (t.d <= 128) return { blockM: 128, blockN: t.causal || local ? 128 : 176, rs: true, overlap: true };
    if (t.d <= 192) return { blockM: 128, blockN: local ? 96 : t.dv <= 128 ? 128 : 112, rs: true, overlap: true };
    return { blockM: 128, blockN: local ? 64 : 80, rs: true, overlap: true };
  }
  if (t.d <= 64) return { blockM: 192, blockN: 160, rs: true, overlap: true };
  if (t.d <= 96) return { blockM: 192, blockN: 128, rs: true, overlap: true };
  if (t.d <= 128) return { blockM: 128, blockN: softcap && local ? 192 : 224, rs: true, overlap: true };
  if (t.d <= 192) return { blockM: 128, blockN: softcap && local ? 128 : 160, rs: true, overlap: true };
  return { blockM: 128, blockN: local ? 64 : 128, rs: true, overlap: true };
}

/** The shipped kernel's configuration for this problem (TMA K/V, no paging, V row-major). */
export function fa3Config(t: Fa3TileInput): Fa3Config {
  const { blockM, blockN, rs, overlap } = tileFor(t);
  const fp8 = isFp8(t.dtype);
  const consumers = blockM / FA3_ROWS_PER_CONSUMER;
  const largeDv = t.dv > 256;
  const schedulerBarrier = (overlap ? consumers >= 2 && (fp8 ? t.d >= 128 : t.d <= 128) : consumers === 2) && !largeDv;
  return {
    blockM,
    blockN,
    mmaPvIsRs: rs,
    intraWgOverlap: overlap,
    consumers,
    producerRegisters: consumers === 1 ? 56 : consumers === 2 ? 24 : 32,
    consumerRegisters: consumers === 1 ? 256 : consumers === 2 ? 240 : 160,
    schedulerBarrier,
    rescaleOBeforeGemm: t.d > 128 && !fp8 && overlap,
    transposeV: fp8,
    stages: FA3_KV_STAGES,
  };
}
