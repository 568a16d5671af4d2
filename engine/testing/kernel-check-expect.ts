// What the kernel-check tests (engine/webgpu/kernel-checks-*.test.ts) assert of a check run:
// every row against the float64 reference, and the window runs' layout.

import { expect } from 'vitest';
import { type CheckMessage, type KernelChoice, runKernelChecks } from '../webgpu/kernel-checks.ts';
import { openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { WINDOW_VARIANTS } from '../webgpu/variants.ts';

export type Checks = Extract<CheckMessage, { ok: true }>;

/** Each check compiles its kernels, seconds each on SwiftShader (the process keeps one device, so a kernel compiled once is reused). */
export const LONG = 600_000;

export const checks = async (path: string, kernels: (KernelChoice | null)[]): Promise<Checks> =>
  runKernelChecks(await openNodeWebGpu(), { path, kernels });

/** The rows of one kernel choice of a request that ran several. */
export const ofKernel = (m: Checks, kernel: KernelChoice | null): Checks => ({
  ...m,
  results: m.results.filter((r) => (r.kernel ?? null) === kernel),
});

export const names = (variants: { name: string }[]) => variants.map((v) => v.name);

export function expectAllClose(m: Checks, variantNames: string[], tol: number): void {
  expect(m.results.map((r) => r.variant)).toEqual(variantNames);
  for (const r of m.results) {
    expect(r.error, `${r.path} / ${r.variant}`).toBeUndefined();
    expect(r.maxErrO, `${r.path} / ${r.variant}: max |ΔO|`).toBeLessThan(tol);
    expect(r.maxErrLse, `${r.path} / ${r.variant}: max |ΔLSE|`).toBeLessThan(tol);
  }
}

/**
 * Tensors larger than one binding run in windows: one batch per binding (each problem is three
 * dispatches over slices of the same buffers, with GQA, causal, ALiBi and sinks indexed within
 * each window), then bindings that hold one key head's group of query heads.
 */
export function expectWindowRuns(m: Checks): void {
  const batches = ofKernel(m, 'windows');
  // …and fillRandom, a binding-sized chunk at a time, writes exactly what it writes in one piece
  expectAllClose(batches, [...names(WINDOW_VARIANTS), 'fill in chunks'], 2e-5);
  expect(batches.results.find((r) => r.variant === 'fill in chunks')?.maxErrO).toBe(0);
  for (const r of batches.results) expect(r.config).toContain('in 3 windows of 1 batch');
  const heads = ofKernel(m, 'head-windows');
  expectAllClose(heads, names(WINDOW_VARIANTS), 2e-5);
  expect(heads.results[0].config).toContain('in 6 windows of 2 heads (inside one batch)'); // GQA: 2 query heads per key head
  expect(heads.results[1].config).toContain('in 6 windows of 1 head (inside one batch)');
  expect(heads.results[2].config).toContain('in 3 windows of 1 batch'); // its query heads share one key head: a batch is the smallest window
}
