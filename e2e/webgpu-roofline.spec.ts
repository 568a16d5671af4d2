// The WebGPU panel's roofline (SwiftShader here): a decoding run drawn against the table's
// ceilings, labelled with their source; the numbers on hover and on keyboard focus.

import { expect, test } from './fixtures.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

test.describe.configure({ timeout: 120_000 });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

test('a decoding run as a point under the storage and MMA roofs, numbers on hover and focus', async ({ page }) => {
  await openApp(page);
  const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
  await panel.scrollIntoViewIfNeeded();
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('swiftshader', { timeout: 30_000 });
  const set = async (label: string, value: string) => panel.getByLabel(label, { exact: true }).fill(value);
  await set('B', '1');
  await set('Hq', '4');
  await set('Hk', '2');
  await set('Nq', '1');
  await set('Nk', '64');
  await set('d', '64');
  await set('dv', '64');
  await panel.getByLabel('kernel path').selectOption('decode');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();

  const view = panel.getByRole('region', { name: 'roofline' });
  await expect(view).toBeVisible({ timeout: 60_000 });
  await expect(view.getByRole('heading')).toHaveText(/^Roofline: why this run takes \d+\.\d{3} ms$/);
  // the ceilings are the table's, and say where they come from
  await expect(panel.getByTestId('wg-roofline-source')).toContainText(
    'Ceilings from the table, not measured in this browser: H200, npm run bench:webgpu -- --ceiling, 2026-11-28',
  );
  const table = view.getByRole('table', { name: 'time at each ceiling' });
  await expect(table).toContainText('storage (each tensor once) (binds)');
  await expect(table).toContainText('4.15 TB/s');
  // the point sits below the roofs: a software adapter reaches a tiny fraction of the H200's storage ceiling
  const run = view.locator('[data-mark=run]');
  const label = (await run.getAttribute('aria-label')) ?? '';
  const pct = Number(label.match(/; ([\d.]+)% of the binding ceiling \(storage/)?.[1]);
  expect(pct).toBeLessThan(5);

  const detail = view.getByRole('status', { name: 'roofline detail' });
  await expect(detail).toHaveText('Hover or tab to a mark for its numbers.');
  await run.hover();
  await expect(detail).toContainText('this run:');
  await expect(detail).toContainText('FLOP per storage byte');
  await page.mouse.move(0, 0);
  await expect(detail).toHaveText('Hover or tab to a mark for its numbers.');
  // keyboard: each mark is a tab stop, in order storage roof, MMA roof, the run
  await view.locator('[data-mark=mem]').focus();
  await expect(detail).toContainText('storage roof: 4.15 TB/s');
  await page.keyboard.press('Tab');
  await expect(detail).toContainText('MMA roof: 424 TFLOP/s');
  await page.keyboard.press('Tab');
  await expect(detail).toContainText('this run:');
  await shot(page, { path: 'test-results/webgpu-roofline.png', fullPage: false });
});
