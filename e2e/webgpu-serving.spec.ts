// Serving layouts on WebGPU in headless Chromium (SwiftShader): the varlen forward and paged
// flash-decoding against engine/layouts' float64 references (engine/webgpu/serving-checks.ts).
// The paged cases fill every slot no sequence owns with NaN and give the table out-of-range
// entries past each sequence's pages: one read of either shows up as a NaN or an error here.

import { expect, test, type Page } from './fixtures.ts';
import type { CheckMessage } from '../app/webgpu/kernel-check.worker.ts';
import { PAGED_VARIANTS, VARLEN_VARIANTS } from '../engine/webgpu/serving-checks.ts';
import { watchConsole } from './helpers.ts';

// Each test compiles its own kernels, about 5 s each on SwiftShader.
test.describe.configure({ timeout: 240_000 });

async function checks(page: Page, query: string): Promise<Extract<CheckMessage, { ok: true }>> {
  await page.goto(`/webgpu-test.html?${query}`);
  await page.waitForFunction(() => window.__kernelChecks !== undefined, undefined, { timeout: 220_000 });
  const m = (await page.evaluate(() => window.__kernelChecks)) as CheckMessage;
  if (!m.ok) throw new Error(`kernel checks failed to start: ${m.message}`);
  return m;
}

function expectAllClose(m: Extract<CheckMessage, { ok: true }>, names: string[], tol: number): void {
  expect(m.results.map((r) => r.variant)).toEqual(names);
  for (const r of m.results) {
    expect(r.error, r.variant).toBeUndefined();
    expect(r.maxErrO, `${r.variant}: max |ΔO|`).toBeLessThan(tol);
    expect(r.maxErrLse, `${r.variant}: max |ΔLSE|`).toBeLessThan(tol);
  }
}

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

test('paged flash-decoding matches the float64 reference and never reads an unowned slot', async ({ page }) => {
  const m = await checks(page, 'path=decode&kernel=serving');
  const names = PAGED_VARIANTS.map((v) => v.name);
  expectAllClose(m, [...names, ...names.map((n) => `${n} (one page per split)`)], 2e-5);
  // splits are whole pages, and each page's table entry is read once per split
  expect(m.results[0].config).toContain('of 256 keys (16 pages of 16)');
  expect(m.results[0].config).toContain('one block-table read per page');
  expect(m.results[PAGED_VARIANTS.length].config).toContain('of 16 keys (1 pages of 16)');
});

// The row kernel where it fits, then the 4×4-tiled kernel on every variant, on one device:
// the d = 128 variant runs the tiled kernel under both choices and compiles once.
for (const path of ['flash-f32', 'flash-subgroups'] as const) {
  test(`varlen forward on ${path} matches the float64 reference (row kernel where it fits, and the 4×4-tiled kernel)`, async ({ page }) => {
    const m = await checks(page, `path=${path}&kernel=serving,serving-tiled`);
    const names = VARLEN_VARIANTS.map((v) => v.name);
    const row = { ...m, results: m.results.filter((r) => r.kernel === 'serving') };
    expectAllClose(row, names, 2e-5);
    expect(row.results[0].config).toMatch(/^varlen row kernel/);
    // d = 128 has no row configuration on these paths here: the tiled kernel runs it
    expect(row.results[VARLEN_VARIANTS.length - 1].config).toMatch(/^varlen tiled kernel/);
    // lengths 1, 37, 0, 130, 5 at BM = 128: 1 + 1 + 0 + 2 + 1 blocks, no padding blocks
    expect(row.results[0].config).toContain('5 (sequence, query block) tiles per head');

    const tiled = { ...m, results: m.results.filter((r) => r.kernel === 'serving-tiled') };
    expectAllClose(tiled, names, 2e-5);
    for (const r of tiled.results) expect(r.config).toMatch(/^varlen tiled kernel/);
  });
}

for (const path of ['flash-f16', 'flash-matrix'] as const) {
  test(`varlen forward on ${path} where the adapter offers it`, async ({ page }) => {
    const probe = await checks(page, 'probe');
    test.skip(
      !probe.paths.includes(path),
      `this adapter (${probe.adapter}) does not offer ${path}; the GPU benchmark's self-test checks it`,
    );
    const m = await checks(page, `path=${path}&kernel=serving`);
    expectAllClose(
      m,
      VARLEN_VARIANTS.map((v) => v.name),
      4e-3,
    );
  });
}
