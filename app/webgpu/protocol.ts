// The WebGPU panel's worker API (Comlink, as the debugger's): what the panel asks and what comes back.

import type { AttentionProblem, WebGpuPath, KernelTime, Pass } from '../../engine/api.ts';
import type { Grid } from './downsample.ts';

export type Backend = 'webgpu' | 'cpu';

export interface AdapterReport {
  name: string;
  fallback: boolean;
  features: string[];
  paths: WebGpuPath[];
  /** The adapter lists an f16 × f16 → f32 subgroup-matrix shape (what flash-matrix multiplies with). */
  matrixF16: boolean;
  limits: string;
  /** Bytes one storage binding holds (what standard attention's score matrix must fit). */
  maxStorageBinding: number;
}

export interface RunRequest {
  backend: Backend;
  /** backward: the forward, then the f32 backward kernels on a random dO (WebGPU only). */
  pass: Pass;
  path: WebGpuPath;
  problem: AttentionProblem;
  seed: number;
  /** Rows checked against the float64 CPU reference. */
  checkRows: number;
  /** A mask_mod runs block-sparse: each Q tile walks only its K/V tiles with a visible key. */
  blockSparse?: boolean;
}

export interface RunReport {
  backend: Backend;
  pass: Pass;
  path: WebGpuPath | 'cpu-fa2';
  ms: number;
  clock: string;
  kernels: KernelTime[];
  tflops: number;
  gbs: number;
  config: string;
  /** O of batch 0, head 0, block-mean downsampled. */
  heatmap: Grid;
  /** LSE of batch 0, head 0 (every row; -Infinity for fully masked rows, sent as null). */
  lse: (number | null)[];
  check: { rows: number; maxAbsErrO: number; maxAbsErrLse: number };
  /** Backward: sampled dQ rows against float64 (engine/webgpu/backward-row-check.ts). */
  gradCheck?: { rows: number; maxAbsErrDq: number };
}

/** A run's stage as it goes (fraction of the run in [0, 1]). */
export type RunProgress = (stage: string, fraction: number) => void;

export interface WebGpuApi {
  /** The adapter and what it offers; rejects with why WebGPU is unavailable. */
  probe(): Promise<AdapterReport>;
  /** One run, reporting its stages; rejects with a message the panel shows (a lost device says so). */
  run(req: RunRequest, progress: RunProgress): Promise<RunReport>;
}
