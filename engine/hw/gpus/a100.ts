// NVIDIA A100 SXM4 80 GB (SM80, GA100).
import type { GpuSpec } from './spec.ts';

export const A100: GpuSpec = {
  id: 'a100',
  name: 'NVIDIA A100 SXM4 80GB',
  sm: 80,
  // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: 108 SMs, boost 1410 MHz.
  smCount: 108,
  clockGHz: 1.41,
  // Whitepaper: 164 KB shared memory per SM; CUDA occupancy tables: 163 KB opt-in per block.
  smemPerCtaBytes: 163 * 1024,
  smemPerSmBytes: 164 * 1024,
  // Whitepaper: 64K 32-bit registers per SM, 255 per thread, 2048 threads per SM.
  registersPerSm: 65536,
  maxRegistersPerThread: 255,
  maxThreadsPerSm: 2048,
  tmem: null,
  // Whitepaper: 312 TFLOPS dense FP16/BF16, 156 TFLOPS TF32 = 108 SMs × 1.41 GHz × 2048 / 1024 FLOP/clk.
  tensorFlopsPerClk: { fp16: 2048, bf16: 2048, fp32: 1024 },
  // Same rate with fp16 accumulation on A100 (whitepaper quotes one FP16 figure).
  tensorFlopsPerClkFp16Acc: 2048,
  mmaSyncFraction: 1,
  // CUDA C Programming Guide, arithmetic instruction throughput table (cc 8.0): 16 exp2/clk/SM, 64 FP32 FMA/clk/SM.
  mufuPerClk: 16,
  fmaPerClk: 64,
  // 32 banks × 4 B per clock (CUDA Programming Guide, shared memory).
  smemBytesPerClk: 128,
  // Whitepaper (80 GB SXM4 datasheet): 2,039 GB/s HBM2e.
  hbmBytesPerSec: 2039e9,
  // Whitepaper: L2 read bandwidth 5120 bytes/clk.
  l2BytesPerClk: 5120,
  // Model assumption: one SM alone sustains ~64 B/clk (cp.async 16 B per thread, limited loads in flight).
  smLoadBytesPerClk: 64,
  // Model assumption: ~600 cycles from cp.async issue to data in SMEM for L2 hits.
  copyLatencyCycles: 600,
};
