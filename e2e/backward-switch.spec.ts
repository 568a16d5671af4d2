// FA2's backward, then FA1's (which has no hardware schedule): the hardware views step aside
// without a console error (the fit fix guards the backward as well as the forward).

import { expect, test } from './fixtures.ts';
import { counter, openApp, watchConsole } from './helpers.ts';

test('FA2 → FA1 on the backward pass logs no console error', async ({ page }) => {
  const checkConsole = watchConsole(page);
  await openApp(page);
  const problem = page.getByRole('region', { name: 'Problem', exact: true });
  await problem.getByLabel('Algorithm').selectOption('fa2');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await problem.getByRole('radiogroup', { name: 'Pass' }).getByRole('radio', { name: 'Backward' }).click();
  await expect(problem.getByRole('radio', { name: 'Backward' })).toHaveAttribute('aria-checked', 'true');
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
  const fa2Steps = await counter(page).textContent();
  await problem.getByLabel('Algorithm').selectOption('fa1');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).not.toHaveText(fa2Steps!, { timeout: 20_000 });
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  await expect(problem.getByRole('radio', { name: 'Backward' })).toHaveAttribute('aria-checked', 'true');
  checkConsole();
});
