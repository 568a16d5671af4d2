// FA3's forward configuration for one problem, as the shipped SM90 kernel picks it. The
// stepper, the hardware schedule and `describe` all read this one function.
//
// Sources (Dao-AILab/flash-attention @ 0251105a):
//   the compiled (d, dv) instance, tiles, P·V operand source, intra-warpgroup overlap:
//     fa3Instance and tileSizeFwdSm90 in ./dispatch.ts (flash_api.cpp l. 258-360, tile_size.h l. 10-54)
//   K/V stages = 2: hopper/flash_fwd_launch_template.h l. 47
//   consumer warpgroups = kBlockM / 64 (AtomLayoutQK): hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp l. 89, 124
//   register split: hopper/flash_fwd_kernel_sm90.h l. 82-83
//   UseSchedulerBarrier, RescaleOBeforeGemm: hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp l. 352-356
//   V transposed in SMEM for FP8 (Transpose_V): same file l. 55

import { isFp8, type DType } from '../../core/problem.ts';
import { fa3Instance, tileSizeFwdSm90 } from './dispatch.ts';

export interface Fa3TileInput {
  d: number;
  dv: number;
  dtype: DType;
  causal: boolean;
  /** Sliding window (is_local). */
  local?: boolean;
  softcap?: boolean;
  /** Paged KV loaded by cp.async instead of TMA (flash_api.cpp get_pagedkv_tma). */
  pagedKvNonTma?: boolean;
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

/** The shipped kernel's configuration for this problem: the compiled instance (d, dv) runs on, V row-major. */
export function fa3Config(t: Fa3TileInput): Fa3Config {
  const fp8 = isFp8(t.dtype);
  const inst = fa3Instance(t.d, t.dv, t.dtype);
  const paged = t.pagedKvNonTma === true;
  const [blockM, blockN, rs, overlap] = tileSizeFwdSm90(
    inst.d,
    inst.dv,
    t.causal,
    t.local === true,
    fp8 ? 1 : 2,
    false,
    paged,
    t.softcap === true,
  );
  const consumers = blockM / FA3_ROWS_PER_CONSUMER;
  const largeDv = inst.dv > 256;
  const schedulerBarrier = (overlap ? consumers >= 2 && (fp8 ? inst.d >= 128 : inst.d <= 128) : consumers === 2) && !largeDv;
  return {
    blockM,
    blockN,
    mmaPvIsRs: rs,
    intraWgOverlap: overlap,
    consumers,
    producerRegisters: consumers === 1 ? 56 : consumers === 2 ? (paged ? 40 : 24) : 32,
    consumerRegisters: consumers === 1 ? 256 : consumers === 2 ? (paged ? 232 : 240) : 160,
    schedulerBarrier,
    rescaleOBeforeGemm: inst.d > 128 && !fp8 && overlap,
    transposeV: fp8,
    stages: FA3_KV_STAGES,
  };
}
