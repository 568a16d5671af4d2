// NVIDIA H200 SXM 141 GB (SM90): the H100 chip with HBM3e. The GPU of the shared/gpu anchors.
import type { GpuSpec } from './spec.ts';
import { H100 } from './h100.ts';

export const H200: GpuSpec = {
  ...H100,
  id: 'h200',
  name: 'NVIDIA H200 SXM 141GB',
  // NVIDIA H200 datasheet: same 989 TFLOPS dense FP16 as H100 SXM, HBM3e 4.8 TB/s.
  hbmBytesPerSec: 4.8e12,
};
