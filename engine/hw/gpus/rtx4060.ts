// NVIDIA GeForce RTX 4060 (SM89, AD107): the GPU the fmha_v2 calibration run was recorded on.
import type { GpuSpec } from './spec.ts';

export const RTX4060: GpuSpec = {
  id: 'rtx4060',
  name: 'NVIDIA GeForce RTX 4060',
  sm: 89,
  // The fmha_exe run's output: "#.of.SMs: 24". NVIDIA spec page: boost clock 2460 MHz.
  smCount: 24,
  clockGHz: 2.46,
  // NVIDIA Ada tuning guide: up to 100 KB shared memory per SM, 99 KB per block.
  smemPerCtaBytes: 99 * 1024,
  smemPerSmBytes: 100 * 1024,
  // CUDA Programming Guide, cc 8.9: 64K registers, 1536 threads per SM.
  registersPerSm: 65536,
  maxRegistersPerThread: 255,
  maxThreadsPerSm: 1536,
  tmem: null,
  // NVIDIA Ada Lovelace architecture whitepaper (GeForce): 4th-gen tensor cores, dense FP16
  // with FP32 accumulate at half the FP16-accumulate rate. RTX 4090's 165/330 TFLOPS over
  // 128 SMs × 2.52 GHz gives 512 / 1024 FLOP/clk/SM; the same SM is in AD107.
  tensorFlopsPerClk: { fp16: 512, bf16: 512, fp32: 256, fp8: 1024 }, // Ada FP8 with fp32 accumulation runs at twice fp16 with fp32 accumulation
  tensorFlopsPerClkFp16Acc: 1024,
  mmaSyncFraction: 1,
  // CUDA Programming Guide throughput table (cc 8.9): 16 MUFU, 128 FP32 FMA per clk per SM.
  mufuPerClk: 16,
  fmaPerClk: 128,
  smemBytesPerClk: 128,
  // NVIDIA spec page: 128-bit GDDR6 at 17 Gbps = 272 GB/s.
  hbmBytesPerSec: 272e9,
  // Model assumption: 24 SMs × 64 B/clk L2 read path.
  l2BytesPerClk: 24 * 64,
  smLoadBytesPerClk: 64,
  copyLatencyCycles: 600,
};
