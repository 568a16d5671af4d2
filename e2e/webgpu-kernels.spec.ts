// WebGPU kernels in headless Chromium (SwiftShader adapter): every path the adapter offers,
// on every variant of the problem spec (engine/webgpu/variants.ts), against the float64
// reference. SwiftShader's subgroups have 4 lanes, so the tiled kernel's row reductions
// span several subgroups (16 threads per row with default tiles) — and, with the small
// tiles, exactly one — while the row kernel's rows span 2 or 4 lanes of one subgroup;
// 'many K/V tiles' and 'decode Nq=1' have 300+ keys, far more than a K/V tile or a
// subgroup, so a kernel that drops keys past either fails here.

import { expect, test, type Page } from './fixtures.ts';
import type { CheckMessage } from '../app/webgpu/kernel-check.worker.ts';
import { KERNEL_VARIANTS, WINDOW_VARIANTS } from '../engine/webgpu/variants.ts';
import { watchConsole } from './helpers.ts';

// Each test compiles its own kernels, about 5 s each on SwiftShader.
test.describe.configure({ timeout: 360_000 });

async function checks(page: Page, query: string): Promise<Extract<CheckMessage, { ok: true }>> {
  await page.goto(`/webgpu-test.html?${query}`);
  await page.waitForFunction(() => window.__kernelChecks !== undefined, undefined, { timeout: 340_000 });
  const m = (await page.evaluate(() => window.__kernelChecks)) as CheckMessage;
  if (!m.ok) throw new Error(`kernel checks failed to start: ${m.message}`);
  return m;
}

type Checks = Extract<CheckMessage, { ok: true }>;

/** The rows of one kernel choice of a request that ran several. */
const ofKernel = (m: Checks, kernel: string | null): Checks => ({ ...m, results: m.results.filter((r) => (r.kernel ?? null) === kernel) });

function expectAllClose(m: Checks, path: string, tol: number, variants = KERNEL_VARIANTS): void {
  const rows = m.results.filter((r) => r.path === path);
  expect(rows.map((r) => r.variant)).toEqual(variants.map((v) => v.name));
  for (const r of rows) {
    expect(r.error, `${path} / ${r.variant}`).toBeUndefined();
    expect(r.maxErrO, `${path} / ${r.variant}: max |ΔO|`).toBeLessThan(tol);
    expect(r.maxErrLse, `${path} / ${r.variant}: max |ΔLSE|`).toBeLessThan(tol);
  }
}

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

/** What each path runs besides the backend's own choice, all on one device (kernels they share compile once). */
const CHOICES = {
  'flash-f32': ['tiled', 'tiled-small', 'windows', 'head-windows'],
  'flash-subgroups': ['tiled', 'tiled-small', 'row-wide', 'windows', 'head-windows'],
  standard: ['windows'],
  decode: ['windows', 'head-windows'],
} as const;

for (const path of ['flash-f32', 'flash-subgroups', 'standard', 'decode'] as const) {
  test(`${path} matches the float64 reference on every variant, under each kernel choice`, async ({ page }) => {
    const m = await checks(page, `path=${path}&kernel=default,${CHOICES[path].join(',')}`);
    // SwiftShader offers these four; if one disappears the test must say so, not pass vacuously.
    expect(m.paths).toContain(path);
    const own = ofKernel(m, null);
    expectAllClose(own, path, 2e-5);
    // Heads up to 64 wide run the row kernel: one lane per row without subgroups, two lanes
    // holding two rows with them (their partial dot products meet through a shuffle).
    if (path === 'flash-f32') expect(own.results[0].config).toContain('row kernel: 1 row per 1 lane');
    if (path === 'flash-subgroups') {
      expect(m.subgroupMinSize).toBe(4);
      expect(own.results[0].config).toContain('row kernel: 2 rows per 2 lanes (subgroup shuffles)');
    }

    if (path === 'flash-f32' || path === 'flash-subgroups') {
      // The 4×4-tiled kernel (wide heads' default) with its own tiles, then with 16×16 tiles:
      // many K/V tiles per row, one subgroup per row.
      const tiled = ofKernel(m, 'tiled');
      expectAllClose(tiled, path, 2e-5);
      expect(tiled.results[0].config).toMatch(/^BM=\d+ BN=\d+/);
      // 16 threads per row on 4-lane subgroups: the row max/sum combine four subgroups through workgroup memory
      if (path === 'flash-subgroups') expect(tiled.results[0].config).toContain('shuffles over 4 lanes');
      const small = ofKernel(m, 'tiled-small');
      expectAllClose(small, path, 2e-5);
      expect(small.results[0].config).toContain('BM=16 BN=16');
    }
    if (path === 'flash-subgroups') {
      const wide = ofKernel(m, 'row-wide');
      expectAllClose(wide, path, 2e-5);
      expect(wide.results[0].config).toContain('1 row per 4 lanes (subgroup shuffles)');
    }

    if (path === 'standard') {
      // Standard attention binds every tensor whole: a problem that needs windows is refused, saying why.
      const w = ofKernel(m, 'windows');
      expect(w.results.length).toBe(WINDOW_VARIANTS.length + 1);
      for (const r of w.results)
        expect(r.error, r.variant).toMatch(/binds every tensor whole.*the flash paths and flash-decoding run it in windows/);
      return;
    }

    // Tensors larger than one binding run in windows: one batch per binding (each problem is
    // three dispatches over slices of the same buffers, with GQA, causal, ALiBi and sinks
    // indexed within each window), then bindings that hold one key head's group of query heads.
    const batches = ofKernel(m, 'windows');
    // …and fillRandom, a binding-sized chunk at a time, writes exactly what it writes in one piece
    expectAllClose(batches, path, 2e-5, [...WINDOW_VARIANTS, { name: 'fill in chunks', problem: WINDOW_VARIANTS[0].problem }]);
    expect(batches.results.find((r) => r.variant === 'fill in chunks')?.maxErrO).toBe(0);
    for (const r of batches.results) expect(r.config).toContain('in 3 windows of 1 batch');
    const heads = ofKernel(m, 'head-windows');
    expectAllClose(heads, path, 2e-5, WINDOW_VARIANTS);
    expect(heads.results[0].config).toContain('in 6 windows of 2 heads (inside one batch)'); // GQA: 2 query heads per key head
    expect(heads.results[1].config).toContain('in 6 windows of 1 head (inside one batch)');
    expect(heads.results[2].config).toContain('in 3 windows of 1 batch'); // its query heads share one key head: a batch is the smallest window
  });
}

for (const path of ['flash-f16', 'flash-matrix'] as const) {
  test(`${path} matches the reference where the adapter offers it`, async ({ page }) => {
    const probe = await checks(page, 'probe');
    test.skip(
      !probe.paths.includes(path),
      `this adapter (${probe.adapter}) does not offer ${path}; it is checked by the GPU benchmark's self-test`,
    );
    const m = await checks(page, `path=${path}`);
    expectAllClose(m, path, 4e-3); // f16 inputs and P: the reference uses the same fp16-rounded inputs
  });
}
