// The ceilings a kernel's time is set against: the H200's datasheet figures (NVIDIA H200 SXM
// datasheet; the workgroup-memory and exp figures from the per-SM rates of compute capability
// 9.0 at the 1.98 GHz boost clock, 132 SMs) and what `npm run bench:webgpu -- --ceiling`
// measured through WebGPU on that GPU.

export const H200_DATASHEET = {
  source: 'NVIDIA H200 SXM datasheet; per-SM rates × 132 SMs × 1.98 GHz',
  f16MmaTflops: 989.5,
  int8MmaTops: 1979,
  hbmTBs: 4.8,
  /** 32 banks × 4 B per clock per SM. */
  smemTBs: (128 * 132 * 1.98e9) / 1e12,
  /** 16 special-function results per clock per SM (CUDA C++ Programming Guide, arithmetic instructions). */
  expTps: (16 * 132 * 1.98e9) / 1e12,
} as const;

/** Ceilings in base units per second (FLOP/s, byte/s, exp/s) and seconds per barrier. */
export interface Ceilings {
  /** Where the figures come from: a measurement (command, machine, date) or a table. */
  source: string;
  /** f16→f32 16×16×16 MMA, operands in registers. */
  mmaRegisters: number;
  /** The same with the right operand loaded from workgroup memory before every MMA (Q·Kᵀ's pattern). */
  mmaWorkgroupRight: number;
  /** Both operands from workgroup memory (P·V's pattern). */
  mmaWorkgroupBoth: number;
  /** Workgroup memory, f32 store + load per element, bytes per second. */
  workgroupBytes: number;
  storageBytes: number;
  expPerSecond: number;
  /** i32 atomicAdd to storage, adds per second. */
  atomicsPerSecond: number;
  /** One workgroupBarrier() across the GPU at full occupancy, seconds (the barriers of resident workgroups overlap). */
  barrierSeconds: number;
}

/**
 * `npm run bench:webgpu -- --ceiling` on one H200 (driver 580.159.04, Dawn through Vulkan under
 * Node, the bench's toggles), 2026-11-28: BENCHMARKS.md, "How close to what WebGPU allows".
 * Storage is the CUDA copy of the same run: the WGSL stream kernels measured 1.65 TB/s, below
 * what the decoding kernel itself sustains (3.07 TB/s), so they are not a ceiling.
 */
export const H200_MEASURED: Ceilings = {
  source: 'H200, npm run bench:webgpu -- --ceiling, 2026-11-28 (storage: CUDA copy, same run)',
  mmaRegisters: 611.1e12,
  mmaWorkgroupRight: 559.7e12,
  mmaWorkgroupBoth: 423.7e12,
  workgroupBytes: 31.44e12,
  storageBytes: 4.15e12,
  expPerSecond: 4.17e12,
  atomicsPerSecond: 237.5e9,
  barrierSeconds: 0.269e-9,
};
