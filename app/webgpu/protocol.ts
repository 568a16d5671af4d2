// Messages between the WebGPU panel and its worker.

import type { AttentionProblem, WebGpuPath, KernelTime } from '../../engine/api.ts';
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

export type Pass = 'forward' | 'backward';

export interface RunRequest {
  backend: Backend;
  /** backward: the forward, then the f32 backward kernels on a random dO (WebGPU only). */
  pass: Pass;
  path: WebGpuPath;
  problem: AttentionProblem;
  seed: number;
  /** Rows checked against the float64 CPU reference. */
  checkRows: number;
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

export type ToWorker = { type: 'probe'; id: number } | { type: 'run'; id: number; req: RunRequest };

export type FromWorker =
  | { type: 'probe'; id: number; ok: true; adapter: AdapterReport }
  | { type: 'probe'; id: number; ok: false; message: string }
  | { type: 'progress'; id: number; stage: string; fraction: number }
  | { type: 'run'; id: number; ok: true; report: RunReport }
  | { type: 'run'; id: number; ok: false; message: string };
