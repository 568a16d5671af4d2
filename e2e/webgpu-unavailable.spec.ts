// Without an adapter (Chromium started without --enable-unsafe-webgpu: headless Chromium
// then offers no adapter), the WebGPU panel says so, WebGPU cannot be chosen, and the CPU
// engine still runs the same problem. The debugger above is untouched.

import { expect, test } from './fixtures.ts';
import { CHROMIUM_ARGS_NO_WEBGPU } from '../playwright.config.ts';
import { counter, openApp, watchConsole } from './helpers.ts';

test.use({
  launchOptions: {
    executablePath: process.env.FLASHSCOPE_CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS_NO_WEBGPU,
  },
});

test('no WebGPU adapter: a clear message, and the CPU path stays usable', async ({ page }) => {
  const checkConsole = watchConsole(page);
  await openApp(page);
  const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
  await panel.scrollIntoViewIfNeeded();
  await expect(panel).toContainText('WebGPU is unavailable', { timeout: 30_000 });
  await expect(panel).toContainText('The CPU engine below still works.');
  await expect(panel.getByRole('radio', { name: 'WebGPU' })).toBeDisabled();
  await expect(panel.getByRole('radio', { name: 'CPU (FA2 step engine)' })).toBeChecked();

  const set = async (label: string, value: string) => panel.getByLabel(label, { exact: true }).fill(value);
  await set('B', '1');
  await set('Hq', '1');
  await set('Hk', '1');
  await set('Nq', '96');
  await set('Nk', '96');
  await set('d', '32');
  await set('dv', '32');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  await expect(panel.getByLabel('result')).toContainText('CPU (FA2 step engine)', { timeout: 60_000 });
  const check = panel.getByTestId('wg-check');
  const err = Number((await check.textContent())!.match(/max \|ΔO\| = ([0-9.e+-]+)/)![1]);
  expect(err).toBeLessThan(1e-5);

  // The step debugger above still steps.
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
  await page.getByRole('button', { name: 'Step forward' }).first().click();
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  checkConsole();
});
