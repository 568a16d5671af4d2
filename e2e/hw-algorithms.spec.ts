import { expect, test } from '@playwright/test';
import { formForAlgorithm } from '../app/defaults/form-defaults.ts';
import { DEFAULT_FORM } from '../app/store/problem-form.ts';
import { counter, engineSession, openApp, watchConsole } from './helpers.ts';

// The hardware-modelling step algorithms in the debugger: each loads, steps, and shows its
// own pseudo-code line and explanation for the event the engine says comes next.

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

for (const algorithm of ['fa3', 'fa4', 'fmha-v2', 'cute-fa2', 'flash-decoding']) {
  test(`${algorithm}: loads, steps, and shows the kernel's pseudo-code line`, async ({ page }) => {
    // The kernel's own configuration (chosen with the algorithm), with a causal mask.
    const form = { ...formForAlgorithm(DEFAULT_FORM, algorithm).form, causal: true };
    const { s } = await engineSession(form);
    const ev = s.events();
    await openApp(page);
    await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Algorithm').selectOption(algorithm);
    await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Causal').check();
    await page.getByRole('button', { name: 'Load problem' }).click();
    await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 20_000 });
    // Walk to the first qk step and check the pane names this algorithm's line.
    const target = ev.findIndex((e) => e.kind === 'qk');
    const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
    for (let i = 0; i < target; i++) await fwd.click();
    await expect(counter(page)).toHaveText(`Step ${target + 1} of ${ev.length}`);
    await expect(page.getByTestId('where')).toContainText(`qk · ${algorithm}.qk`);
    await expect(page.locator('ol.code li.current')).toBeVisible();
    await expect(page.getByLabel('Step explanation')).not.toBeEmpty();
    if (algorithm === 'fa4') await page.screenshot({ path: 'test-results/hw-fa4.png', fullPage: true });
  });
}
