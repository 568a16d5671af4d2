// The shape of a GPU description. One file per GPU beside this one; every figure there
// carries the source it came from, or says plainly that it is a model assumption.

export type GpuId = 'a100' | 'rtx4060' | 'h100' | 'h200' | 'b200';

export interface GpuSpec {
  id: GpuId;
  name: string;
  /** Compute capability as FlashAttention names it: 80, 89, 90, 100. */
  sm: 80 | 89 | 90 | 100;
  smCount: number;
  /** The clock the vendor's peak tensor figures are quoted at (GHz). */
  clockGHz: number;
  /** Shared memory one CTA may opt into (bytes). */
  smemPerCtaBytes: number;
  smemPerSmBytes: number;
  /** 32-bit registers per SM, and the most one thread may hold. */
  registersPerSm: number;
  maxRegistersPerThread: number;
  maxThreadsPerSm: number;
  /** Blackwell tensor memory per SM: lanes × 32-bit columns; null before SM100. */
  tmem: { lanes: number; columns: number } | null;
  /**
   * Dense tensor-core FLOPs per clock per SM with the architecture's native MMA
   * (mma.sync on SM80/89, wgmma on SM90, tcgen05 on SM100), fp32 accumulation.
   * fp32 inputs run as TF32. fp8 (e4m3/e5m2, both the same rate) is absent where the chip
   * has no FP8 MMA.
   */
  tensorFlopsPerClk: { fp16: number; bf16: number; fp32: number; fp8?: number };
  /** fp16 inputs with fp16 accumulation (fmha_v2's HALF_ACCUMULATION build); equal to fp16 where the chip has no faster path. */
  tensorFlopsPerClkFp16Acc: number;
  /**
   * Rate of warp-level mma.sync relative to the native MMA. 1 where mma.sync is the
   * native instruction; below 1 on SM90/SM100, where the SM80-style kernels (FA2, the
   * CuTe FA2 pipeline, split-KV decoding) cannot use wgmma/tcgen05.
   */
  mmaSyncFraction: number;
  /** MUFU (ex2) results per clock per SM: 4 sub-partitions × 4. */
  mufuPerClk: number;
  /** FP32 FMA lanes per clock per SM. */
  fmaPerClk: number;
  /** Shared-memory bandwidth per SM, bytes per clock (ldmatrix / smem reads feeding mma.sync). */
  smemBytesPerClk: number;
  hbmBytesPerSec: number;
  /** L2 → SM bandwidth over the whole chip, bytes per clock. */
  l2BytesPerClk: number;
  /** The most one SM pulls from L2/HBM by itself, bytes per clock (bounded by loads in flight). */
  smLoadBytesPerClk: number;
  /** Latency of one bulk copy from L2, in cycles: TMA on SM90+, cp.async/LDGSTS before. */
  copyLatencyCycles: number;
}
