// Regenerates docs/screenshot.png for the README:
//   PW_PORT=4202 npx playwright test -c playwright.bench.config.ts readme-screenshot
import { expect, test } from '../fixtures.ts';
test('readme screenshot', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of/);
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Causal').check();
  await page.getByLabel('Input distribution').selectOption('outlier-row');
  await page.getByLabel('outlier row').fill('37');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of/);
  await page.getByLabel('Breakpoint kind').selectOption('rescale-row');
  await page.getByLabel('Row r').fill('37');
  await page.getByRole('button', { name: 'Add breakpoint' }).click();
  await page.getByRole('button', { name: 'Run to next breakpoint' }).click();
  await expect(page.getByTestId('breakpoint-hit')).toBeVisible();
  await page.getByRole('button', { name: 'Select row 37' }).click();
  await page.waitForTimeout(500);
  await page.screenshot({ path: 'docs/screenshot.png' });
});
