// NVIDIA H100 SXM5 80 GB (SM90, GH100).
import type { GpuSpec } from './spec.ts';

export const H100: GpuSpec = {
  id: 'h100',
  name: 'NVIDIA H100 SXM5 80GB',
  sm: 90,
  // NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs; the 989.4 TFLOPS dense
  // FP16 peak corresponds to 132 × 4096 FLOP/clk × 1.83 GHz.
  smCount: 132,
  clockGHz: 1.83,
  // Whitepaper: 228 KB shared memory per SM, 227 KB usable by one block.
  smemPerCtaBytes: 227 * 1024,
  smemPerSmBytes: 228 * 1024,
  registersPerSm: 65536,
  maxRegistersPerThread: 255,
  maxThreadsPerSm: 2048,
  tmem: null,
  // Whitepaper: 989.4 TFLOPS dense FP16/BF16, 494.7 TF32 (wgmma).
  tensorFlopsPerClk: { fp16: 4096, bf16: 4096, fp32: 2048, fp8: 8192 }, // dense FP8 is twice the 16-bit rate (H100 datasheet: 1979 vs 989 TFLOP/s)
  tensorFlopsPerClkFp16Acc: 4096,
  // Calibrated on the H200 SDPA FLASH (FA2 CUDA kernels) anchors in shared/gpu/README.md
  // (352 TFLOP/s at d = 128): SM80-style code (ldmatrix + mma.sync) reaches a bit under
  // half of the wgmma rate on Hopper.
  mmaSyncFraction: 0.47,
  // FlashAttention-3 paper (Shah et al. 2024), §3: 3.9 TFLOPS of special functions = 16/clk/SM.
  mufuPerClk: 16,
  fmaPerClk: 128,
  smemBytesPerClk: 128,
  // Whitepaper / datasheet: HBM3 3.35 TB/s.
  hbmBytesPerSec: 3.35e12,
  // Model assumption: L2 → SM path ~48 B/clk per SM (~11.6 TB/s chip-wide at 1.83 GHz).
  l2BytesPerClk: 132 * 48,
  smLoadBytesPerClk: 96,
  // Model assumption: ~500 cycles for a TMA tile load hitting L2.
  copyLatencyCycles: 500,
};
