import { expect, test } from '@playwright/test';
import { counter, openApp, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

test('smoke: compare mode shows two panes and the difference table', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(page.getByTestId('diff-table')).toBeVisible({ timeout: 30_000 });
  await page.screenshot({ path: 'test-results/compare-smoke.png', fullPage: true });
});
