import { expect, test, type Page } from './fixtures.ts';
import { formForAlgorithm } from '../app/defaults/form-defaults.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { texNum } from '../content/tex.ts';
import type { TraceEvent } from '../engine/trace/events.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';
import { num } from '../app/views/tile-info.ts';
import { SAGE_P_SCALE } from '../engine/algorithms/sage/forward.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import { paneRequest } from '../app/compare/shared-request.ts';
import type { ComparePaneConfig } from '../app/compare/pane-config.ts';

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
  await expect(panel(page).getByLabel('Br', { exact: true })).toHaveValue('');
  await panel(page).getByRole('button', { name: 'Load problem' }).click();
  const { s } = await engineSession(formForAlgorithm(DEFAULT_FORM, 'sage').form);
  const evs = s.events();
  await expect(counter(page)).toHaveText(`Step 1 of ${evs.length}`, { timeout: 30_000 });
  await expect(panel(page).getByTestId('run-tile')).toContainText('Br × Bc = 128 × 64');
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
  await shot(page, { path: 'test-results/sage-qk.png' });
});

/** Steps of sage in a compare pane over the default shared problem, at Br 64 and Bc 16, as the engine runs it. */
async function compareSageSteps(features: Record<string, unknown>): Promise<number> {
  const s = new DebuggerSession();
  await s.load(
    paneRequest(formToRequest(DEFAULT_FORM), { algorithm: 'sage', blockM: '64', blockN: '16', features, views: [] } as ComparePaneConfig),
  );
  return s.events().length;
}

test('a compare pane running sage offers version and smoothK, qPerWarp with version 2, and version 2 reloads', async ({ page }) => {
  // Version 2 steps each 32-row warp slice of a Q tile on its own: at Br 64 that is two slices,
  // so its run has more steps than version 1's (at Br 16 the counts coincide, and a counter
  // that did not change would say nothing).
  const v1 = await compareSageSteps({});
  const v2 = await compareSageSteps({ version: 2, qPerWarp: true });
  expect(v2).toBeGreaterThan(v1);
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  const pane2 = page.locator('[data-pane="cmp1"]');
  await pane2.getByLabel('Pane 2 algorithm').selectOption('sage');
  await expect(pane2.getByLabel('Pane 2 smoothK')).toBeChecked();
  // qPerWarp is a version-2 switch: not offered on version 1 (the engine would refuse it).
  await expect(pane2.getByLabel('Pane 2 qPerWarp')).toHaveCount(0);
  for (const [field, value] of [
    ['Br', '64'],
    ['Bc', '16'],
  ]) {
    await pane2.getByLabel(`Pane 2 ${field}`).fill(value);
    await pane2.getByLabel(`Pane 2 ${field}`).blur();
  }
  const steps = pane2.getByTestId('step-counter');
  await expect(steps).toHaveText(`Step 1 of ${v1}`, { timeout: 30_000 });
  const version = pane2.getByLabel('Pane 2 version');
  await expect(version).toHaveValue('1');
  await version.fill('2');
  await version.blur();
  await expect(pane2.getByLabel('Pane 2 qPerWarp')).toBeChecked();
  await expect(steps).toHaveText(`Step 1 of ${v2}`, { timeout: 30_000 });
  await expect(page.locator('.error:visible')).toHaveCount(0);
  await shot(page, { path: 'test-results/sage-compare.png' });
});

test('the problem panel offers sage’s own switches; version 2, chosen by keyboard, loads the FP8 P·V run; picking fa3 after sage version 2 drops sage’s switches and loads', async ({
  page,
}) => {
  await openApp(page);
  const p = panel(page);
  // fa2 has no panel switches; sage brings its own group, at the kernel's defaults.
  await expect(p.getByRole('group', { name: /switches$/ })).toHaveCount(0);
  await p.getByLabel('Algorithm').selectOption('sage');
  const group = p.getByRole('group', { name: 'SageAttention switches' });
  await expect(group).toBeVisible();
  await expect(group.getByLabel('version', { exact: true })).toHaveValue('1');
  await expect(group.getByLabel('smoothK', { exact: true })).toBeChecked();
  // qPerWarp is a version-2 switch: hidden on version 1, with a note saying so.
  await expect(group.getByLabel('qPerWarp', { exact: true })).toHaveCount(0);
  await expect(group).toContainText('qPerWarp applies to version 2 only.');
  await expect(p.getByLabel('pScale', { exact: true })).toHaveCount(0);

  // Load version 1 first: the Precision view opens by itself (an INT8 run) with its figures.
  const sageForm = formForAlgorithm(DEFAULT_FORM, 'sage').form;
  const v1 = await engineSession(sageForm);
  const v2 = await engineSession({ ...sageForm, switches: { version: '2' } });
  const r1 = await v1.s.precision(0, 0);
  const r2 = await v2.s.precision(0, 0);
  if (!r1.ok || !r2.ok) throw new Error('no precision result');
  expect(num(r2.run.total.rmse)).not.toBe(num(r1.run.total.rmse));
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${v1.s.events().length}`, { timeout: 30_000 });
  const view = page.getByRole('region', { name: 'Precision', exact: true });
  const rmse = view.getByTestId('precision-total-run').locator('[data-metric="rmse"]');
  await expect(rmse).toHaveText(num(r1.run.total.rmse), { timeout: 30_000 });
  // A base-2 trace: the heatmaps say S is in log2 units and P = 2^(S − m).
  const heatmaps = page.getByRole('region', { name: 'Tile heatmaps' });
  await expect(heatmaps.getByRole('img', { name: /^S = τ·log₂e·QKᵀ \(log₂ units\) heatmap/ })).toBeVisible();
  await expect(heatmaps.getByRole('img', { name: /^P = 2\^\(S − m\) heatmap/ })).toBeVisible();
  await expect(heatmaps.getByRole('img', { name: /exp\(S − m\)/ })).toHaveCount(0);

  // Keyboard only: Tab from the algorithm select to the version select, arrow to 2.
  await p.getByLabel('Algorithm').focus();
  const version = group.getByLabel('version', { exact: true });
  for (let i = 0; i < 40 && !(await version.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('Tab');
  await expect(version).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(version).toHaveValue('2');
  // Version 2 brings qPerWarp, on by default, and it is the next stop after smoothK.
  const qPerWarp = group.getByLabel('qPerWarp', { exact: true });
  await expect(qPerWarp).toBeChecked();
  await expect(group).not.toContainText('applies to version 2 only');
  await page.keyboard.press('Tab');
  await expect(group.getByLabel('smoothK', { exact: true })).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(qPerWarp).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(p.getByRole('button', { name: 'Load problem' })).toBeFocused();
  await shot(p, { path: 'test-results/sage-panel-switches.png' });
  await page.keyboard.press('Enter');

  // The version-2 run: its own step count, its RMSE, and the exp steps' P scale of 2^8.807 ≈ 447.9.
  const evs = v2.s.events();
  expect(evs.length).not.toBe(v1.s.events().length);
  await expect(counter(page)).toHaveText(`Step 1 of ${evs.length}`, { timeout: 30_000 });
  await expect(rmse).toHaveText(num(r2.run.total.rmse), { timeout: 30_000 });
  const exp = evs.find((e) => e.kind === 'exp');
  expect(exp?.kind === 'exp' && exp.pScale).toBeCloseTo(447.9, 1);
  expect(SAGE_P_SCALE).toBeCloseTo(447.9, 1);
  const t = r2.head.tiles[0];
  await view.locator('.prec-tile[data-tile="0,0"]').hover();
  await expect(view.getByTestId('tile-detail')).toContainText(`pScale${t.pScale}`);
  expect(t.pScale).toBeCloseTo(447.9, 1);
  await expect(page.locator('.error:visible, [role="alert"]:visible')).toHaveCount(0);
  await shot(page, { path: 'test-results/sage-v2-panel-loaded.png', fullPage: true });

  // The switches travel in a share link: the URL now carries version 2, and reopening it restores the group.
  await page.waitForFunction(() => location.hash.startsWith('#s='));
  await page.reload();
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await expect(panel(page).getByRole('group', { name: 'SageAttention switches' }).getByLabel('version', { exact: true })).toHaveValue('2');

  // fa3 after sage version 2 (smoothK off): sage's switches go, FA3's come, and it loads.
  const p2 = panel(page);
  await expect(p2.getByLabel('version', { exact: true })).toHaveValue('2');
  await p2.getByLabel('smoothK', { exact: true }).uncheck();
  await p2.getByLabel('Algorithm').selectOption('fa3');
  await expect(p2.getByRole('group', { name: 'FA3 switches' })).toBeVisible();
  await expect(p2.getByLabel('version', { exact: true })).toHaveCount(0);
  await p2.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await expect(page.locator('.error:visible, [role="alert"]:visible')).toHaveCount(0);
  // Back to sage: the kernel's defaults again, not the switches set before.
  await p2.getByLabel('Algorithm').selectOption('sage');
  await expect(p2.getByLabel('version', { exact: true })).toHaveValue('1');
  await expect(p2.getByLabel('smoothK', { exact: true })).toBeChecked();
});

test('FA4, fmha_v2 and Flash-Decoding bring their own switch groups, and each loads at its defaults', async ({ page }) => {
  await openApp(page);
  const p = panel(page);
  for (const [id, title, label] of [
    ['fa4', 'FA4 switches', 'lazyRescale'],
    ['fmha-v2', 'fmha_v2 switches', 'fp16Accumulation'],
    ['flash-decoding', 'Flash-Decoding switches', 'splits'],
  ]) {
    await p.getByLabel('Algorithm').selectOption(id);
    const group = p.getByRole('group', { name: title });
    await expect(group).toBeVisible();
    // fmha_v2's fp16 accumulation applies to fp16 runs only: shown on fp16, a note otherwise.
    if (id === 'fmha-v2' && (await p.getByLabel('dtype').inputValue()) !== 'fp16')
      await expect(group).toContainText('fp16Accumulation needs dtype fp16');
    else await expect(group.getByLabel(label, { exact: true })).toBeVisible();
    await p.getByRole('button', { name: 'Load problem' }).click();
    await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
    await expect(page.locator('.error:visible, [role="alert"]:visible')).toHaveCount(0);
    await shot(group, { path: `test-results/panel-switches-${id}.png` });
  }
});
