// The WebGPU panel on an adapter that lacks features: each missing feature is named with what
// it costs and how Chromium gets it, the kernel list starts on the fastest path left, and a
// run on that path passes its float64 check. Features are hidden from the panel's worker by
// wrapping its script: the adapter it gets lists fewer features and refuses to grant them.

import { expect, test, type Page } from './fixtures.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

test.describe.configure({ timeout: 180_000 });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

/** Start the panel's worker behind a module that hides `hidden` from every adapter it requests. */
async function hideFeatures(page: Page, hidden: string[]) {
  await page.addInitScript((hidden: string[]) => {
    const hook = (names: string[]) => {
      const gone = new Set(names);
      const request = GPU.prototype.requestAdapter;
      GPU.prototype.requestAdapter = async function (this: GPU, options?: GPURequestAdapterOptions) {
        const adapter = await request.call(this, options);
        if (!adapter) return adapter;
        const kept = new Set([...adapter.features].filter((f) => !gone.has(f)));
        const device = adapter.requestDevice.bind(adapter);
        Object.defineProperty(adapter, 'features', { value: kept });
        Object.defineProperty(adapter, 'requestDevice', {
          value: (d?: GPUDeviceDescriptor) => {
            const refused = [...(d?.requiredFeatures ?? [])].filter((f) => gone.has(f));
            return refused.length ? Promise.reject(new TypeError(`hidden by the test: ${refused.join(', ')}`)) : device(d);
          },
        });
        return adapter;
      };
    };
    const Original = window.Worker;
    window.Worker = class extends Original {
      constructor(url: string | URL, options?: WorkerOptions) {
        if (!/webgpu\.worker/.test(String(url))) {
          super(url, options);
          return;
        }
        const blob = (text: string) => URL.createObjectURL(new Blob([text], { type: 'text/javascript' }));
        const first = blob(`(${hook.toString()})(${JSON.stringify(hidden)});`);
        const real = new URL(url, location.href).href;
        super(blob(`import ${JSON.stringify(first)};\nimport ${JSON.stringify(real)};`), { ...options, type: 'module' });
      }
    };
  }, hidden);
}

const panelOf = (page: Page) => page.getByRole('region', { name: 'WebGPU full-size runs' });

test('without subgroups and timestamps: both named, flash-f32 chosen, the run passes on the wall clock', async ({ page }) => {
  await hideFeatures(page, ['subgroups', 'timestamp-query']);
  await openApp(page);
  const panel = panelOf(page);
  await panel.scrollIntoViewIfNeeded();
  const adapter = panel.getByRole('status', { name: 'adapter' });
  await expect(adapter).toContainText('swiftshader', { timeout: 30_000 });
  // the feature list no longer names them (other features only share a prefix)
  await expect(adapter).not.toContainText(/[:,] subgroups(,|limits)/);
  await expect(adapter).not.toContainText(/[:,] timestamp-query(,|limits)/);

  const missing = panel.getByRole('list', { name: 'missing adapter features' }).getByRole('listitem');
  await expect(missing).toHaveCount(4);
  await expect(missing.nth(0)).toHaveText(
    'chromium-experimental-subgroup-matrix: no “flash, f16 subgroup matrices (tensor cores)” kernel, the fastest one. Enable with --enable-unsafe-webgpu (chrome://flags/#enable-unsafe-webgpu, "Enable Unsafe WebGPU"), which turns on Chromium\'s experimental WebGPU features; it also needs a GPU and driver that offer subgroup matrices.',
  );
  await expect(missing.nth(1)).toContainText(
    'shader-f16: no “flash, f16 storage (shader-f16)” or “flash, f16 subgroup matrices (tensor cores)” kernel. Needs a GPU and driver with 16-bit float shader arithmetic; Chromium 120 and later',
  );
  await expect(missing.nth(2)).toHaveText(
    'subgroups: no “flash, f32 + subgroup row reductions” kernel. Needs a GPU and driver with subgroup operations; Chromium 134 and later exposes it without a flag wherever the hardware has it.',
  );
  await expect(missing.nth(3)).toContainText('timestamp-query: no per-kernel GPU times: timings fall back to the wall clock');

  // The fastest path left is the plain f32 one; the subgroup kernel is not offered.
  const kernel = panel.getByLabel('kernel path');
  await expect(kernel).toHaveValue('flash-f32');
  await expect(kernel.locator('option')).toHaveText([
    'flash, f32',
    'standard attention (S and P materialized)',
    'flash-decoding (split K/V + LSE combine)',
  ]);
  await shot(panel, { path: 'test-results/webgpu-fallback.png' });

  const set = async (label: string, value: string) => panel.getByLabel(label, { exact: true }).fill(value);
  await set('B', '1');
  await set('Hq', '2');
  await set('Hk', '2');
  await set('Nq', '96');
  await set('Nk', '96');
  await set('d', '32');
  await set('dv', '32');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  const check = panel.getByTestId('wg-check');
  await expect(check).toContainText('sampled rows vs float64 CPU reference', { timeout: 120_000 });
  const err = Number((await check.textContent())!.match(/max \|ΔO\| = ([0-9.e+-]+)/)![1]);
  expect(err).toBeLessThan(1e-5);
  await expect(panel.getByLabel('result')).toContainText('flash, f32');
  await expect(panel.getByTestId('wg-time')).toContainText('wall clock');
  await shot(panel, { path: 'test-results/webgpu-fallback-run.png' });
});

test('SwiftShader as it is: only f16 and subgroup matrices named, the subgroup kernel chosen, timestamps not flagged', async ({ page }) => {
  await openApp(page);
  const panel = panelOf(page);
  await panel.scrollIntoViewIfNeeded();
  const adapter = panel.getByRole('status', { name: 'adapter' });
  await expect(adapter).toContainText('swiftshader', { timeout: 30_000 });
  await expect(adapter).toContainText(/[:,] subgroups(,|limits)/);
  await expect(adapter).toContainText(/[:,] timestamp-query(,|limits)/);
  const missing = panel.getByRole('list', { name: 'missing adapter features' }).getByRole('listitem');
  await expect(missing).toHaveCount(2);
  await expect(missing.nth(0)).toContainText('chromium-experimental-subgroup-matrix: ');
  await expect(missing.nth(1)).toContainText('shader-f16: ');
  await expect(panel.getByLabel('kernel path')).toHaveValue('flash-subgroups');

  // The keyboard picks another kernel, and a pick survives a cancel (the worker restarts and probes again).
  const kernel = panel.getByLabel('kernel path');
  await kernel.focus();
  await page.keyboard.press('ArrowUp');
  await expect(kernel).toHaveValue('flash-f32');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  await panel.getByRole('button', { name: 'Cancel' }).click();
  await expect(panel.getByRole('alert')).toContainText('Run cancelled');
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('swiftshader', { timeout: 30_000 });
  await expect(kernel).toHaveValue('flash-f32');
});
