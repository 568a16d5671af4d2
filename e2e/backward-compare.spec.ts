// Compare mode on the backward pass: FA1 and FA2 backward side by side on the shared
// problem, synchronised by K/V block, the difference table (atomic adds included) and the
// dQ difference, all equal to the engine's own sessions run here in Node.

import { expect, test, type Page } from './fixtures.ts';
import { totalBytes } from '../engine/core/counters.ts';
import { outputDifference } from '../engine/compare/diff.ts';
import { pointOf, stepFor } from '../engine/compare/sync.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import type { LoadRequest } from '../engine/request.ts';
import { DEFAULT_PANES } from '../app/compare/pane-config.ts';
import { paneRequest } from '../app/compare/shared-request.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { defaultsFor } from '../engine/defaults/algorithm-defaults.ts';
import { formForPass } from '../app/defaults/form-defaults.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const pane = (page: Page, i: number) => page.locator(`[data-pane="cmp${i}"]`);
const counterOf = (page: Page, i: number) => pane(page, i).getByTestId('step-counter');
const cell = (page: Page, metric: string, col: number) => page.locator(`tr[data-metric="${metric}"] td`).nth(col);

async function session(req: LoadRequest): Promise<DebuggerSession> {
  const s = new DebuggerSession();
  await s.load(req);
  return s;
}

test('FA1 vs FA2 backward: stepped together, counters and dQ differenced as the engine computes them', async ({ page }) => {
  const base = formToRequest(formForPass(DEFAULT_FORM, 'backward'));
  expect(DEFAULT_PANES.map((c) => c.algorithm)).toEqual(['fa1', 'fa2']);
  const [a, b] = await Promise.all(DEFAULT_PANES.map((c) => session(paneRequest(base, c))));
  const [da, db] = await Promise.all([a.compareData('h100'), b.compareData('h100')]);
  const ea = a.events();
  const eb = b.events();

  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  const radios = page.getByRole('radiogroup', { name: 'Pass of every pane' });
  await radios.getByRole('radio', { name: 'Backward' }).click();
  await expect(page.getByTestId('shared-problem')).toContainText('backward pass');
  await expect(counterOf(page, 0)).toHaveText(`Step 1 of ${ea.length}`, { timeout: 30_000 });
  await expect(counterOf(page, 1)).toHaveText(`Step 1 of ${eb.length}`, { timeout: 30_000 });
  await expect(pane(page, 0).locator('figure[data-matrix="dS"]')).toBeVisible();

  await expect(page.getByTestId('diff-table')).toBeVisible({ timeout: 30_000 });
  for (const [i, d] of [da, db].entries()) {
    await expect(cell(page, 'HBM bytes read', i)).toHaveText(totalBytes(d.counters.hbmRead).toLocaleString('en-US'));
    await expect(cell(page, 'HBM bytes written', i)).toHaveText(totalBytes(d.counters.hbmWritten).toLocaleString('en-US'));
    await expect(cell(page, 'atomic adds', i)).toHaveText(d.counters.atomicAdds.toLocaleString('en-US'));
    await expect(cell(page, 'max |error| vs float64', i)).toHaveText(d.error.maxAbs.toExponential(3));
  }
  // FA1 reads and writes dQ in HBM at every inner step; FA2 adds atomically instead.
  expect(da.counters.atomicAdds).toBe(0);
  expect(db.counters.atomicAdds).toBeGreaterThan(0);
  await expect(cell(page, 'atomic adds', 0)).toHaveClass(/best/);
  const { maxAbs } = outputDifference(da.output, db.output);
  await expect(page.getByTestId('diff-max')).toHaveText(
    `max |A − B| = ${maxAbs === 0 ? '0 (identical outputs)' : maxAbs.toExponential(3)}`,
  );
  await expect(page.locator('.diff-heatmap')).toContainText('Output difference A − B (dQ of the backward)');

  // K/V-block sync: both are K/V-outer, so pane 2 follows pane 1 onto the same tile.
  const fwd = pane(page, 0).getByRole('button', { name: 'Step forward', exact: true });
  for (let k = 1; k <= 8; k++) {
    await fwd.click();
    await expect(counterOf(page, 0)).toHaveText(`Step ${k + 1} of ${ea.length}`);
    const want = stepFor(eb, pointOf(ea, k, null), 'kv', null).step;
    await expect(counterOf(page, 1)).toHaveText(`Step ${want + 1} of ${eb.length}`);
  }
  await shot(page, { path: 'test-results/backward/compare.png', fullPage: true });

  // Back to the forward pass for every pane.
  await radios.getByRole('radio', { name: 'Forward' }).click();
  const fa = await session(paneRequest(formToRequest(DEFAULT_FORM), DEFAULT_PANES[0]));
  await expect(counterOf(page, 0)).toHaveText(`Step 1 of ${fa.events().length}`, { timeout: 30_000 });
});

test('FA3 backward panes offer the deterministic switch, and a forward-only algorithm is not offered', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await page.getByRole('radiogroup', { name: 'Pass of every pane' }).getByRole('radio', { name: 'Backward' }).click();
  await expect(page.getByTestId('shared-problem')).toContainText('backward pass');
  const algo = page.getByRole('combobox', { name: 'Pane 2 algorithm' });
  await expect(algo.locator('option[value="fmha-v2"]')).toBeDisabled();
  await algo.selectOption('fa3');
  // Choosing FA3 runs its kernel's own tile (the fields stay empty) and a dtype its tensor cores take;
  // a 16 × 16 tile typed here gives every row block several column blocks' adds to order.
  const form = formToRequest(formForPass(DEFAULT_FORM, 'backward'));
  const { config } = defaultsFor('fa3', { ...form.problem, blockM: 16, blockN: 16 }, ['batch', 'hq', 'hk', 'nq', 'nk', 'd', 'dv']);
  const base = { ...form, problem: { ...form.problem, dtype: config.dtype } };
  const own = (await session(paneRequest(base, { ...DEFAULT_PANES[1], algorithm: 'fa3', blockM: '', blockN: '' }))).summary!.blocks;
  await expect(pane(page, 1).getByRole('textbox', { name: 'Pane 2 Br' })).toHaveValue('');
  await expect(pane(page, 1).getByTestId('run-tile')).toContainText(`Br × Bc = ${own.blockM} × ${own.blockN}`, { timeout: 30_000 });
  for (const t of ['Br', 'Bc']) {
    await pane(page, 1)
      .getByRole('textbox', { name: `Pane 2 ${t}` })
      .fill('16');
    await pane(page, 1)
      .getByRole('textbox', { name: `Pane 2 ${t}` })
      .blur();
  }
  await pane(page, 1).getByRole('checkbox', { name: 'Pane 2 deterministic' }).check();
  const s = await session({
    ...paneRequest(base, { ...DEFAULT_PANES[1], algorithm: 'fa3', blockM: '16', blockN: '16' }),
    features: { deterministic: true },
  });
  await expect(counterOf(page, 1)).toHaveText(`Step 1 of ${s.events().length}`, { timeout: 30_000 });
  // Find an add with a turn in the deterministic order and show it in the dQ accumulation view.
  const k = s.events().findIndex((e) => e.kind === 'dq' && e.turn !== undefined && e.turn > 0);
  expect(k).toBeGreaterThan(0);
  await pane(page, 1).getByRole('checkbox', { name: 'Pane 2 view dQ accumulation' }).check();
  await page.getByRole('combobox', { name: 'Sync axis' }).selectOption('none');
  const e = s.events()[k] as Extract<ReturnType<DebuggerSession['events']>[number], { kind: 'dq' }>;
  const fwd = pane(page, 1).getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < k; i++) await fwd.click();
  await expect(counterOf(page, 1)).toHaveText(`Step ${k + 1} of ${s.events().length}`);
  await expect(pane(page, 1).getByTestId('dq-now')).toContainText(
    `Deterministic mode: this is add number ${e.turn! + 1} in the fixed order of row block ${e.tile.qBlock}.`,
  );
});
