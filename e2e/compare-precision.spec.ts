// Compare mode on low precision: the "FP8 study" preset (FA3 fp16 | FP8 per tensor | FP8
// block + incoherent | SageAttention 2 on the FA3 paper's outlier inputs), its error rows checked against the
// engine's own sessions run here in Node with the requests the panes send, a pane refused
// for its dtype with the fixes, keyboard only where it matters, and the layout looked at.

import { expect, test, type Page } from './fixtures.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import type { CompareData } from '../engine/debugger/protocol.ts';
import { FP8_STUDY } from '../app/compare/presets.ts';
import { ratioNotes } from '../engine/compare/diff.ts';
import { pointOf, stepFor } from '../engine/compare/sync.ts';
import type { TraceEvent } from '../engine/trace/events.ts';
import { paneRequest } from '../app/compare/shared-request.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const pane = (page: Page, i: number) => page.locator(`[data-pane="cmp${i}"]`);
const counterOf = (page: Page, i: number) => pane(page, i).getByTestId('step-counter');
const cells = (page: Page, metric: string) => page.locator(`tr[data-metric="${metric}"] td`);

/** The preset's panes as the engine runs them. */
async function engineRuns(): Promise<{ data: CompareData[]; steps: number[]; events: TraceEvent[][] }> {
  const base = formToRequest({ ...DEFAULT_FORM, ...FP8_STUDY.form });
  const out = { data: [] as CompareData[], steps: [] as number[], events: [] as TraceEvent[][] };
  for (const cfg of FP8_STUDY.panes) {
    const s = new DebuggerSession();
    await s.load(paneRequest(base, cfg));
    out.data.push(await s.compareData('h100'));
    out.steps.push(s.events().length);
    out.events.push(s.events() as TraceEvent[]);
  }
  return out;
}

/** Presses Tab until `target` has the focus (at most `max` times); fails when it never does. */
async function tabTo(page: Page, target: ReturnType<Page['locator']>, max = 40): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  await expect(target).toBeFocused();
}

/** No element of the compare page sticks out of the viewport or of its pane. */
async function checkNoOverflow(page: Page): Promise<void> {
  const bad = await page.evaluate(() => {
    const out: string[] = [];
    const vw = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > vw + 1) out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${vw}`);
    for (const p of document.querySelectorAll<HTMLElement>('.compare-pane, .diff-panel .view')) {
      const r = p.getBoundingClientRect();
      for (const el of p.querySelectorAll<HTMLElement>('header *, .banner, .banner *, .diff-table')) {
        const e = el.getBoundingClientRect();
        if (e.width > 0 && (e.right > r.right + 1 || e.left < r.left - 1))
          out.push(
            `${el.tagName}.${el.className} "${(el.textContent ?? '').slice(0, 30)}" leaves its box (${Math.round(e.left)}–${Math.round(e.right)} in ${Math.round(r.left)}–${Math.round(r.right)})`,
          );
      }
    }
    return out;
  });
  expect(bad).toEqual([]);
}

test('FP8 study: error rows equal the engine runs, block + incoherent below per tensor, a refused pane with working fixes, keyboard reachable, layout checked; at a narrow width the table and a refusal stay inside their boxes, sink inputs reload every pane, and sage refuses FP8 with a fix', async ({
  page,
}) => {
  test.setTimeout(240_000);
  const engine = await engineRuns();
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(counterOf(page, 1)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });

  // Keyboard: Tab from the shared-inputs picker reaches the preset button; Enter applies it.
  const preset = page.getByRole('button', { name: 'Preset: FP8 study' });
  await page.getByRole('combobox', { name: 'Shared input distribution' }).focus();
  await tabTo(page, preset);
  await page.keyboard.press('Enter');

  const n = FP8_STUDY.panes.length;
  expect(n).toBe(4);
  for (let i = 0; i < n; i++) await expect(counterOf(page, i)).toHaveText(`Step 1 of ${engine.steps[i]}`, { timeout: 60_000 });
  await expect(page.getByRole('combobox', { name: 'Shared input distribution' })).toHaveValue('fa3-outliers');
  await expect(page.getByTestId('shared-problem')).toContainText('Nq=128 Nk=512 d=128 dv=128 fp16');
  await expect(pane(page, 1).getByLabel('Pane 2 dtype')).toHaveValue('fp8e4m3');
  await expect(pane(page, 1).getByLabel('Pane 2 blockQuant')).not.toBeChecked();
  await expect(pane(page, 2).getByLabel('Pane 3 incoherent')).toBeChecked();
  // The fp16 pane has no FP8 switches.
  await expect(pane(page, 0).getByLabel('Pane 1 blockQuant')).toHaveCount(0);
  // The Sage pane: its own switches, version 2.
  await expect(pane(page, 3).getByLabel('Pane 4 algorithm')).toHaveValue('sage');
  await expect(pane(page, 3).getByLabel('Pane 4 version')).toHaveValue('2');
  await expect(pane(page, 3).getByLabel('Pane 4 smoothK')).toBeChecked();

  const table = page.getByTestId('diff-table');
  await expect(table).toBeVisible({ timeout: 30_000 });
  const fmt = (n: number) => (n === 0 ? '0' : n.toExponential(3));
  for (const [metric, key] of [
    ['max |error| vs float64', 'maxAbs'],
    ['RMSE vs float64', 'rmse'],
    ['rel-L1 vs float64', 'relL1'],
  ] as const) {
    await expect(cells(page, metric)).toHaveCount(n);
    for (let i = 0; i < n; i++) {
      await expect(cells(page, metric).nth(i)).toHaveText(fmt(engine.data[i].error[key]));
      const shown = Number(await cells(page, metric).nth(i).textContent());
      expect(Number.isFinite(shown) && shown > 0, `${metric} pane ${i + 1}`).toBe(true);
    }
  }
  const rmse = await Promise.all([0, 1, 2, 3].map(async (i) => Number(await cells(page, 'RMSE vs float64').nth(i).textContent())));
  expect(rmse[2]).toBeLessThan(rmse[1]);
  expect(rmse[0]).toBeLessThan(rmse[2]);
  // The fp16 pane is the best; the ratios read against it.
  await expect(cells(page, 'RMSE vs float64').nth(0)).toHaveClass(/best/);
  const ratio = cells(page, 'RMSE against the others');
  const notes = ratioNotes(
    engine.data.map((d) => d.error.rmse),
    ['pane 1', 'pane 2', 'pane 3', 'pane 4'],
  );
  for (let i = 0; i < n; i++) await expect(ratio.nth(i)).toHaveText(notes[i]);
  await expect(ratio.nth(0)).toContainText('lowest;');
  // Block + incoherent against per tensor: 1.71× at this seed.
  expect(engine.data[1].error.rmse / engine.data[2].error.rmse).toBeGreaterThan(1.5);
  await expect(page.getByTestId('diff-table').locator('thead')).toContainText('−blockQuant −incoherent');

  await shot(page, { path: 'test-results/compare-precision-1440.png', fullPage: true });
  await shot(page.locator('.compare-bar'), { path: 'test-results/compare-precision-1440-bar.png' });
  await shot(page.locator('.diff-panel'), { path: 'test-results/compare-precision-1440-table.png' });
  await checkNoOverflow(page);

  // Step pane 1; pane 3 follows. Their positions must survive what happens to pane 2.
  await pane(page, 0).getByRole('button', { name: 'Step forward', exact: true }).click();
  await pane(page, 0).getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counterOf(page, 0)).toHaveText(`Step 3 of ${engine.steps[0]}`);
  // Where panes 3 and 4 follow to (the engine's sync, synced by K/V block), waited for: reading
  // their counters right after pane 1's step raced the follow.
  const followed = (i: number) =>
    `Step ${stepFor(engine.events[i], pointOf(engine.events[0], 2, null), 'kv', null).step + 1} of ${engine.steps[i]}`;
  const third = followed(2);
  const fourth = followed(3);
  await expect(counterOf(page, 2)).toHaveText(third);
  await expect(counterOf(page, 3)).toHaveText(fourth);

  // Pane 2 (FP8) switched to fa2: refused with the reason and the fixes; the others keep working.
  await pane(page, 1).getByLabel('Pane 2 algorithm').selectOption('fa2');
  const refusal = pane(page, 1).getByTestId('dtype-refusal');
  await expect(refusal).toContainText('fa2 has no FP8 path; fp8e4m3 runs only on fa3');
  await expect(refusal).toContainText('the other panes are unaffected');
  await expect(pane(page, 1).getByTestId('step-counter')).toHaveCount(0);
  await expect(counterOf(page, 0)).toHaveText(`Step 3 of ${engine.steps[0]}`);
  await expect(counterOf(page, 2)).toHaveText(third);
  await expect(counterOf(page, 3)).toHaveText(fourth);
  await expect(cells(page, 'RMSE vs float64')).toHaveCount(n - 1);
  await expect(page.getByTestId('diff-not-run')).toContainText('pane 2');
  await expect(page.getByRole('region', { name: 'Output difference' })).toContainText('Not run: pane 2 (fa2): dtype: fa2 has no FP8 path');
  await pane(page, 0).getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counterOf(page, 0)).toHaveText(`Step 4 of ${engine.steps[0]}`);
  await shot(page, { path: 'test-results/compare-precision-refused.png', fullPage: true });
  await checkNoOverflow(page);

  // The fix, by keyboard: from the pane's Bc field, Tab reaches "Run this pane in fp16".
  const fix = refusal.getByRole('button', { name: 'Run this pane in fp16' });
  await expect(refusal.getByRole('button', { name: 'Switch this pane to fa3 (keeps fp8e4m3)' })).toBeVisible();
  await pane(page, 1).getByLabel('Pane 2 Bc').focus();
  await tabTo(page, fix, 5);
  await page.keyboard.press('Enter');
  await expect(refusal).toHaveCount(0);
  await expect(pane(page, 1).getByLabel('Pane 2 dtype')).toHaveValue('');
  await expect(counterOf(page, 1)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  await expect(cells(page, 'RMSE vs float64')).toHaveCount(n, { timeout: 30_000 });
  await expect(cells(page, 'RMSE vs float64').nth(1)).toHaveText(/^\d\.\d{3}e-\d+$/);

  // The other fix: FP8 again on fa2, then "Switch this pane to fa3" keeps fp8e4m3 and runs.
  await pane(page, 1).getByLabel('Pane 2 dtype').selectOption('fp8e4m3');
  await refusal.getByRole('button', { name: 'Switch this pane to fa3 (keeps fp8e4m3)' }).click();
  await expect(refusal).toHaveCount(0);
  await expect(pane(page, 1).getByLabel('Pane 2 algorithm')).toHaveValue('fa3');
  await expect(pane(page, 1).getByLabel('Pane 2 dtype')).toHaveValue('fp8e4m3');
  await expect(counterOf(page, 1)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  // Pane 3 still the same run and position as before any of this.
  await expect(cells(page, 'RMSE vs float64').nth(2)).toHaveText(fmt(engine.data[2].error.rmse), { timeout: 30_000 });

  // At a narrow width the panes stack: the table and a refused pane stay inside their boxes.
  await page.setViewportSize({ width: 700, height: 900 });
  await pane(page, 1).getByLabel('Pane 2 algorithm').selectOption('fa2');
  await expect(pane(page, 1).getByTestId('dtype-refusal')).toBeVisible();
  await shot(page, { path: 'test-results/compare-precision-narrow.png', fullPage: true });
  await shot(page.locator('.diff-panel'), { path: 'test-results/compare-precision-narrow-table.png' });
  await shot(pane(page, 1), { path: 'test-results/compare-precision-narrow-refused.png' });
  await checkNoOverflow(page);

  // The shared inputs switched to the attention-sink pattern: every running pane reloads on the new draws.
  const base = formToRequest({ ...DEFAULT_FORM, ...FP8_STUDY.form, distribution: 'sink' });
  const s = new DebuggerSession();
  await s.load(paneRequest(base, FP8_STUDY.panes[2]));
  const sink = await s.compareData('h100');
  await page.getByRole('combobox', { name: 'Shared input distribution' }).selectOption('sink');
  await expect(page.getByTestId('shared-problem')).toContainText('(sink)');
  await expect(page.locator('tr[data-metric="RMSE vs float64"] td').nth(1)).toHaveText(sink.error.rmse.toExponential(3), {
    timeout: 60_000,
  });
  await expect(pane(page, 1).getByTestId('dtype-refusal')).toBeVisible();

  // Sage picks its own precisions: FP8 tensors are refused with what it does instead, and the fix restores fp16.
  await pane(page, 3).getByLabel('Pane 4 dtype').selectOption('fp8e4m3');
  const sageRefusal = pane(page, 3).getByTestId('dtype-refusal');
  await expect(sageRefusal).toContainText('sage quantizes its own inputs');
  await sageRefusal.getByRole('button', { name: 'Run this pane in fp16' }).click();
  await expect(sageRefusal).toHaveCount(0);
  await expect(counterOf(page, 3)).toHaveText(/^Step \d+ of \d+$/, { timeout: 60_000 });
});

test('an FP8 pane on a shared problem with ALiBi or d ≠ dv (sinks: pane-dtype.test.ts): the reason and one-click fixes, shared and per pane', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await openApp(page);
  const problem = page.getByRole('region', { name: 'Problem' });
  // A small fp16 problem with ALiBi, loaded in the Debugger tab: it is compare mode's shared problem.
  for (const [label, v] of [
    ['Nq', '64'],
    ['Nk', '128'],
    ['d', '64'],
    ['dv', '64'],
  ] as const)
    await problem.getByLabel(label, { exact: true }).fill(v);
  await problem.getByLabel('dtype').selectOption('fp16');
  await problem.getByLabel('ALiBi').check();
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await pane(page, 1).getByLabel('Pane 2 algorithm').selectOption('fa3');
  await expect(counterOf(page, 1)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await pane(page, 1).getByLabel('Pane 2 dtype').selectOption('fp8e4m3');
  const refusal = pane(page, 1).getByTestId('dtype-refusal');
  await expect(refusal).toContainText('FA3 has no ALiBi');
  await expect(refusal.getByRole('button', { name: 'Run this pane in fp16' })).toBeVisible();
  await expect(pane(page, 0).getByTestId('dtype-refusal')).toHaveCount(0);
  await expect(counterOf(page, 0)).toHaveText(/^Step \d+ of \d+$/);
  await shot(pane(page, 1), { path: 'test-results/compare-fp8-alibi-refused.png' });
  await checkNoOverflow(page);

  // The shared fix, by keyboard: ALiBi off in the shared problem; it and every pane reload, the FP8 pane runs.
  const off = refusal.getByRole('button', { name: 'Turn ALiBi off in the shared problem' });
  await off.focus();
  await page.keyboard.press('Enter');
  await expect(refusal).toHaveCount(0, { timeout: 30_000 });
  await expect(page.getByTestId('shared-problem')).not.toContainText('ALiBi');
  await expect(counterOf(page, 1)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await expect(pane(page, 1).getByLabel('Pane 2 dtype')).toHaveValue('fp8e4m3');
  // The Debugger tab's form agrees.
  await page.getByRole('tab', { name: 'Single' }).click();
  await expect(problem.getByLabel('ALiBi')).not.toBeChecked();

  // d ≠ dv: the same reason-and-fixes pattern with the dv fix; then the per-pane fix instead.
  await problem.getByLabel('dv', { exact: true }).fill('32');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(refusal).toContainText('d = dv and d 192 with dv 128 only', { timeout: 30_000 });
  await expect(refusal.getByRole('button', { name: 'Set the shared dv to d (64)' })).toBeVisible();
  await refusal.getByRole('button', { name: 'Run this pane in fp16' }).click();
  await expect(refusal).toHaveCount(0);
  await expect(pane(page, 1).getByLabel('Pane 2 dtype')).toHaveValue('');
  await expect(counterOf(page, 1)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
});

test('FP8 study synced by K/V block: the bar says FA3 panes walk K/V blocks backwards; a followed sage pane is on the leader’s key block', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await page.getByRole('button', { name: 'Preset: FP8 study' }).click();
  for (let i = 0; i < FP8_STUDY.panes.length; i++) await expect(counterOf(page, i)).toHaveText(/^Step 1 of \d+$/, { timeout: 60_000 });
  await expect(page.getByRole('combobox', { name: 'Sync axis' })).toHaveValue('kv');
  const note = page.getByTestId('kv-order-note');
  await expect(note).toContainText('Panes 1, 2 and 3 visit K/V blocks last to first');
  // Pane 1 (FA3) steps to its first score tile, on its last K/V block; sage follows to its step on that block (the engine's own answer).
  const base = formToRequest({ ...DEFAULT_FORM, ...FP8_STUDY.form });
  const fa3 = new DebuggerSession();
  await fa3.load(paneRequest(base, FP8_STUDY.panes[0]));
  const sage = new DebuggerSession();
  await sage.load(paneRequest(base, FP8_STUDY.panes[3]));
  const lead = fa3.events().findIndex((e) => e.kind === 'qk');
  const { pointOf, stepFor } = await import('../engine/compare/sync.ts');
  const want = stepFor(sage.events(), pointOf(fa3.events(), lead, null), 'kv', null).step;
  expect(sage.events()[want].tile.cols[0]).toBe(fa3.events()[lead].tile.cols[0]);
  for (let i = 0; i < lead; i++) await pane(page, 0).getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counterOf(page, 0)).toHaveText(`Step ${lead + 1} of ${fa3.events().length}`);
  await expect(counterOf(page, 3)).toHaveText(`Step ${want + 1} of ${sage.events().length}`, { timeout: 30_000 });
  await shot(page.locator('.compare-bar'), { path: 'test-results/compare-kv-order-bar.png' });
  await shot(page, { path: 'test-results/compare-kv-order.png' });
  await checkNoOverflow(page);
  await page.getByRole('combobox', { name: 'Sync axis' }).selectOption('progress');
  await expect(note).toHaveCount(0);
});
