// The WebGPU kernel checks in the browser (webgpu-test.html, engine/webgpu/kernel-checks.ts) on
// the f16 paths, which SwiftShader does not offer: on an adapter that has them (a GPU machine),
// the forward and the varlen forward against the float64 reference. Every path SwiftShader
// offers is checked under Node by engine/webgpu/kernel-checks.test.ts; the browser's own WebGPU
// runs are checked by e2e/webgpu-panel.spec.ts.

import type { CheckMessage } from '../engine/webgpu/kernel-checks.ts';
import { KERNEL_VARIANTS } from '../engine/webgpu/variants.ts';
import { VARLEN_VARIANTS } from '../engine/webgpu/serving-checks.ts';
import { expect, test, type Page } from './fixtures.ts';
import { watchConsole } from './helpers.ts';

// Each request compiles its own kernels.
test.describe.configure({ timeout: 360_000 });

type Checks = Extract<CheckMessage, { ok: true }>;

async function checks(page: Page, query: string): Promise<Checks> {
  await page.goto(`/webgpu-test.html?${query}`);
  await page.waitForFunction(() => window.__kernelChecks !== undefined, undefined, { timeout: 340_000 });
  const m = (await page.evaluate(() => window.__kernelChecks)) as CheckMessage;
  if (!m.ok) throw new Error(`kernel checks failed to start: ${m.message}`);
  return m;
}

function expectAllClose(m: Checks, names: string[], tol: number): void {
  expect(m.results.map((r) => r.variant)).toEqual(names);
  for (const r of m.results) {
    expect(r.error, `${r.path} / ${r.variant}`).toBeUndefined();
    expect(r.maxErrO, `${r.path} / ${r.variant}: max |ΔO|`).toBeLessThan(tol);
    expect(r.maxErrLse, `${r.path} / ${r.variant}: max |ΔLSE|`).toBeLessThan(tol);
  }
}

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

for (const path of ['flash-f16', 'flash-matrix'] as const) {
  test(`${path} and its varlen forward match the reference where the adapter offers it`, async ({ page }) => {
    const probe = await checks(page, 'probe');
    test.skip(
      !probe.paths.includes(path),
      `this adapter (${probe.adapter}) does not offer ${path}; the GPU benchmark's self-test checks it`,
    );
    // f16 inputs and P: the reference uses the same fp16-rounded inputs
    expectAllClose(
      await checks(page, `path=${path}`),
      KERNEL_VARIANTS.map((v) => v.name),
      4e-3,
    );
    expectAllClose(
      await checks(page, `path=${path}&kernel=serving`),
      VARLEN_VARIANTS.map((v) => v.name),
      4e-3,
    );
  });
}
