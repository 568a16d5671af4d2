import { expect, test, type Page } from '@playwright/test';
import { formForAlgorithm } from '../app/defaults/form-defaults.ts';
import { DEFAULT_FORM } from '../app/store/problem-form.ts';
import { texNum } from '../content/formulas.ts';
import type { TraceEvent } from '../engine/trace/events.ts';
import { counter, engineSession, openApp, watchConsole } from './helpers.ts';

// SageAttention from the default page: its defaults load (fp16, the kernels' 128×64 tile, no
// hardware model), stepping reaches a qk step whose formula shows the two INT8 scales the
// integer scores were multiplied by, and a compare pane offers its switches.

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const panel = (page: Page) => page.getByRole('region', { name: 'Problem', exact: true });

test('sage loads with its defaults and its qk step shows δ_Q and δ_K', async ({ page }) => {
  await openApp(page);
  await panel(page).getByLabel('Algorithm').selectOption('sage');
  await expect(panel(page).getByLabel('dtype')).toHaveValue('fp16');
  await expect(panel(page).getByLabel('Br', { exact: true })).toHaveValue('128');
  await expect(panel(page).getByLabel('Bc', { exact: true })).toHaveValue('64');
  await panel(page).getByRole('button', { name: 'Load problem' }).click();
  const { s } = await engineSession(formForAlgorithm(DEFAULT_FORM, 'sage').form);
  const evs = s.events();
  await expect(counter(page)).toHaveText(`Step 1 of ${evs.length}`, { timeout: 30_000 });
  const k = evs.findIndex((e) => e.kind === 'qk');
  const qk = evs[k] as Extract<TraceEvent, { kind: 'qk' }>;
  expect(qk.qScale).toBeGreaterThan(0);
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < k; i++) await fwd.click();
  await expect(counter(page)).toHaveText(`Step ${k + 1} of ${evs.length}`);
  const formula = page.getByRole('region', { name: 'Formula' });
  await expect(formula.locator('.katex').first()).toBeVisible();
  await expect(formula.getByLabel('Update', { exact: true })).toHaveAttribute('data-tex', /\\hat\{Q\}_i \\hat\{K\}_j\^\{\\top\}/);
  const live = formula.getByLabel('Update with live numbers');
  await expect(live).toHaveAttribute('data-tex', new RegExp(`\\\\delta_Q = ${texNum(qk.qScale).replace(/[.\\^{}]/g, (c) => `\\${c}`)}`));
  await expect(live).toHaveAttribute('data-tex', new RegExp(`\\\\delta_K = ${texNum(qk.kScale).replace(/[.\\^{}]/g, (c) => `\\${c}`)}`));
  await expect(formula).toContainText('δ');
  await expect(page.locator('.error:visible, [role="alert"]:visible')).toHaveCount(0);
  // No hardware model: the hardware views stay away instead of showing an error.
  await expect(page.getByRole('region', { name: 'Warp-role timeline' })).toHaveCount(0);
  await page.screenshot({ path: 'test-results/sage-qk.png' });
});

test('a compare pane running sage offers version, smoothK and qPerWarp, and version 2 reloads', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  const pane2 = page.locator('[data-pane="cmp1"]');
  await pane2.getByLabel('Pane 2 algorithm').selectOption('sage');
  await expect(pane2.getByLabel('Pane 2 smoothK')).toBeChecked();
  await expect(pane2.getByLabel('Pane 2 qPerWarp')).toBeChecked();
  const steps = pane2.getByTestId('step-counter');
  await expect(steps).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  const v1 = await steps.textContent();
  const version = pane2.getByLabel('Pane 2 version');
  await expect(version).toHaveValue('1');
  await version.fill('2');
  await version.blur();
  // Version 2 steps each 32-row warp slice of the Q tile on its own: more steps than version 1.
  await expect(steps).not.toHaveText(v1!, { timeout: 30_000 });
  await expect(steps).toHaveText(/^Step 1 of \d+$/);
  await expect(page.locator('.error:visible')).toHaveCount(0);
  await page.screenshot({ path: 'test-results/sage-compare.png' });
});
