// The H200 as Dawn reports it to the subgroup-matrix kernels (BENCHMARKS.md), cut to what the kernel tests choose tiles from.

import type { chooseMatrixTile } from './flash-matrix-kernel.ts';

/** 48 KiB of workgroup storage, 1024 invocations, 32-lane subgroups and the 16 × 16 × 16 f16 → f32 matrix. */
export const H200_MATRIX_CONTEXT = {
  limits: { maxInvocations: 1024, maxWorkgroupStorage: 49152 },
  matrixConfigs: [{ M: 16, N: 16, K: 16, componentType: 'f16', resultComponentType: 'f32' }],
  subgroupMinSize: 32,
  subgroupMaxSize: 32,
  wgslFeatures: ['subgroup_id', 'subgroup_uniformity'],
} as unknown as Parameters<typeof chooseMatrixTile>[0];
