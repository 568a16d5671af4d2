// Accessibility: axe-core on every page a person reaches — the debugger (forward and
// backward, hardware views open), compare with four panes, the serving page (varlen and
// paged), the WebGPU panel here; the lesson list and every chapter in the chapter walk of
// e2e/lessons.spec.ts — in both themes. No serious or critical violation may remain;
// moderate and minor ones are printed for the report.

import { expect, test, type Page } from './fixtures.ts';
import { bothThemes } from './axe-audit.ts';
import { openApp, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const problem = (page: Page) => page.getByRole('region', { name: 'Problem', exact: true });

test('debugger: FA3 forward and backward with the hardware views, and the WebGPU panel', async ({ page }) => {
  await openApp(page);
  await problem(page).getByLabel('Algorithm').selectOption('fa3');
  await problem(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByRole('region', { name: 'Warp-role timeline' }).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status')).toBeVisible();
  // The panel looks for its adapter once reached: checked with the adapter's report in it.
  const webgpu = page.getByRole('region', { name: 'WebGPU full-size runs' });
  await webgpu.scrollIntoViewIfNeeded();
  await expect(webgpu.getByRole('status', { name: 'adapter' })).toContainText('limits:', { timeout: 30_000 });
  await bothThemes(page, 'debugger forward');
  await problem(page).getByRole('radio', { name: 'Backward' }).click();
  await expect(page.locator('figure[data-matrix="dQ"]')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await bothThemes(page, 'debugger backward');
});

test('compare with four panes, and the serving page (varlen and paged)', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  const add = page.getByRole('button', { name: 'Add pane' });
  await add.click();
  await add.click();
  for (let i = 0; i < 4; i++)
    await expect(page.locator(`[data-pane="cmp${i}"]`).getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await bothThemes(page, 'compare');
  await page.getByRole('tab', { name: 'Serving' }).click();
  await expect(page.getByTestId('serving-step')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await bothThemes(page, 'serving varlen');
  const form = page.getByRole('form', { name: 'Serving problem' });
  await form.getByRole('radio', { name: 'Paged K/V cache (block table)' }).check();
  await form.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('serving-step')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await bothThemes(page, 'serving paged');
});
