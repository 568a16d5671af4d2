// NVIDIA B200 (SM100, Blackwell): the GPU FA4 (arXiv 2603.05451) targets.
import type { GpuSpec } from './spec.ts';

export const B200: GpuSpec = {
  id: 'b200',
  name: 'NVIDIA B200',
  sm: 100,
  // 148 SMs (CUDA deviceQuery on B200); the DGX B200 datasheet's 2.25 PFLOPS dense
  // FP16/BF16 per GPU = 148 SMs × 8192 FLOP/clk (tcgen05, twice Hopper's per SM) × 1.856 GHz.
  smCount: 148,
  clockGHz: 1.856,
  // CUDA Programming Guide, cc 10.0: 228 KB shared memory per SM, 227 KB per block.
  smemPerCtaBytes: 227 * 1024,
  smemPerSmBytes: 228 * 1024,
  registersPerSm: 65536,
  maxRegistersPerThread: 255,
  maxThreadsPerSm: 2048,
  // PTX ISA, tcgen05 "Tensor Memory": 128 lanes × 512 columns of 32-bit cells per CTA/SM.
  tmem: { lanes: 128, columns: 512 },
  tensorFlopsPerClk: { fp16: 8192, bf16: 8192, fp32: 2048, fp8: 16384 }, // dense FP8 is twice the 16-bit rate (B200 datasheet: 4.5 vs 2.25 PFLOP/s)
  tensorFlopsPerClkFp16Acc: 8192,
  mmaSyncFraction: 1 / 3,
  // The MUFU did not grow with the tensor cores: 16 ex2/clk/SM as on Hopper (the reason FA4
  // emulates part of exp2 on the FMA pipes; FA4 paper, arXiv 2603.05451).
  mufuPerClk: 16,
  fmaPerClk: 128,
  smemBytesPerClk: 128,
  // DGX B200 datasheet: 64 TB/s over 8 GPUs = 8 TB/s HBM3e per GPU.
  hbmBytesPerSec: 8e12,
  l2BytesPerClk: 148 * 64,
  smLoadBytesPerClk: 128,
  copyLatencyCycles: 500,
};
