import { expect, test, type Page } from './fixtures.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import { DEFAULT_FORM, formToRequest, type ProblemForm } from '../app/store/problem-form.ts';
import { num } from '../app/views/tile-info.ts';
import { counter, openApp, shot, watchConsole } from './helpers.ts';
import { decodeState, defaultSharedState, encodeState } from '../app/share/url-state.ts';
import { DEFAULT_VIEWS } from '../app/views/registry.ts';

// The precision views: FP8 on FA3 from the problem panel, measured against float64 in the
// Precision view, with the numbers checked against the engine's own session run in Node.

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const panel = (page: Page) => page.getByRole('region', { name: 'Problem', exact: true });
const precision = (page: Page) => page.getByRole('region', { name: 'Precision', exact: true });

/** The form as the panel holds it now (the fields this spec sets), for the engine's run in Node. */
async function formOf(page: Page, extra: Partial<ProblemForm>): Promise<ProblemForm> {
  const p = panel(page);
  const v = (label: string) => p.getByLabel(label, { exact: true }).inputValue();
  return {
    ...DEFAULT_FORM,
    algorithm: 'fa3',
    blockMode: 'explicit',
    nq: await v('Nq'),
    nk: await v('Nk'),
    d: await v('d'),
    dv: await v('dv'),
    blockM: await v('Br'),
    blockN: await v('Bc'),
    ...extra,
  };
}

async function engine(form: ProblemForm) {
  const s = new DebuggerSession();
  await s.load(formToRequest(form));
  const r = await s.precision(0, 0);
  if (!r.ok) throw new Error(r.reason);
  return { s, r };
}

async function load(page: Page, steps: number) {
  await panel(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${steps}`, { timeout: 30_000 });
}

const rmseCell = (page: Page) => precision(page).getByTestId('precision-total-run').locator('[data-metric="rmse"]');

async function setUpFp8(page: Page) {
  await openApp(page);
  const p = panel(page);
  await p.getByLabel('Algorithm').selectOption('fa3');
  await p.getByLabel('dtype').selectOption('fp8e4m3');
  await p.getByLabel('Input distribution').selectOption({ label: 'FA3 outliers' });
  for (const [label, v] of [
    ['Nq', '256'],
    ['Nk', '256'],
    ['d', '64'],
    ['dv', '64'],
  ])
    await p.getByLabel(label, { exact: true }).fill(v);
  await expect(p.getByTestId('precision-hint')).toHaveCount(0);
}

test('FA3 FP8 on outlier inputs: totals against float64, tile scales on hover, incoherent processing lowers the RMSE', async ({ page }) => {
  await setUpFp8(page);
  await shot(panel(page), { path: 'test-results/precision-panel-fa3-fp8.png' });
  const form = await formOf(page, { dtype: 'fp8e4m3', distribution: 'fa3-outliers' });
  const on = await engine(form);
  await load(page, on.s.events().length);

  // The view opens by itself for a low-precision run; the totals are the engine's, finite.
  const view = precision(page);
  await expect(view.getByRole('button', { name: 'Hide precision against float64' })).toHaveAttribute('aria-expanded', 'true');
  await expect(rmseCell(page)).toHaveText(num(on.r.run.total.rmse), { timeout: 30_000 });
  for (const m of ['max_abs', 'rmse', 'rel_l1']) {
    const t = await view.getByTestId('precision-total-run').locator(`[data-metric="${m}"]`).textContent();
    expect(Number.isFinite(Number(t))).toBe(true);
    expect(Number(t)).toBeGreaterThan(0);
  }
  await expect(view.getByTestId('precision-total-run').locator('[data-metric="max_abs"]')).toHaveText(num(on.r.run.total.max_abs));
  await expect(view.getByTestId('precision-total-run').locator('[data-metric="rel_l1"]')).toHaveText(num(on.r.run.total.rel_l1));
  await expect(view.getByRole('img', { name: /\|O − O64\|.* heatmap/ })).toBeVisible();
  await expect(view.locator('.legend').first()).toBeVisible();

  // Hover a tile: its Q, K and V scales and pScale, as the trace has them.
  const t = on.r.head.tiles.find((x) => x.qBlock === 1 && x.kvBlock === 0)!;
  await view.locator('.prec-tile[data-tile="1,0"]').hover();
  const detail = view.getByTestId('tile-detail');
  await expect(detail).toContainText(`Q scale${num(t.qScale, 4)}`);
  await expect(detail).toContainText(`K scale${num(t.kScale, 4)}`);
  await expect(detail).toContainText(`V scale${num(t.vScale, 4)}`);
  await expect(detail).toContainText('pScale256');
  // A tap keeps its tile: the detail stays when the pointer then leaves the grid.
  await view.locator('.prec-tile[data-tile="1,0"]').click();
  await view.getByRole('heading', { name: 'Tiles: scales and error' }).hover();
  await expect(detail).toContainText(`Q scale${num(t.qScale, 4)}`);
  // Keyboard: the tiles are buttons in tab order, and focus shows the same detail.
  await view.locator('.prec-tile[data-tile="0,0"]').focus();
  await page.keyboard.press('Tab');
  await expect(view.locator('.prec-tile[data-tile="0,1"]')).toBeFocused();
  await expect(detail).toContainText('(0, 1)');
  // The heatmap tooltip of a tile also names its scales.
  const pMap = view.getByRole('img', { name: /\|P − P64\| so far heatmap/ });
  await pMap.hover({ position: { x: 200, y: 5 } });
  await expect(view.getByRole('tooltip')).toContainText('Q scale');
  await shot(page, { path: 'test-results/precision-tooltip.png' });
  await shot(page, { path: 'test-results/precision-fa3-fp8-outliers.png', fullPage: true });
  await shot(view, { path: 'test-results/precision-view.png' });

  // Stepping to the first exp: the current step's tile errors are shown.
  const firstExp = on.s.events().findIndex((e) => e.kind === 'exp');
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < firstExp; i++) await fwd.click();
  await expect(view.getByTestId('precision-step')).toContainText('max |P − P64|');
  await shot(view, { path: 'test-results/precision-step-exp.png' });

  // The default is the shipped kernel (no rotation). Incoherent processing on (the FA3 paper's
  // experiment): the RMSE the view shows falls to the engine's figure.
  await expect(panel(page).getByLabel('incoherent', { exact: true })).not.toBeChecked();
  const rot = await engine({ ...form, switches: { incoherent: true } });
  expect(rot.r.run.total.rmse).toBeLessThan(on.r.run.total.rmse);
  await panel(page).getByLabel('incoherent', { exact: true }).check();
  await panel(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(rmseCell(page)).toHaveText(num(rot.r.run.total.rmse), { timeout: 30_000 });
  expect(Number(await rmseCell(page).textContent())).toBeLessThan(Number(num(on.r.run.total.rmse)));
});

test('attention sink with K/V first to last: pScale 1 flushes P values that pScale 256 keeps, marked in the P heatmap', async ({
  page,
}) => {
  await setUpFp8(page);
  const p = panel(page);
  await p.getByLabel('Input distribution').selectOption({ label: 'attention sink' });
  await p.getByLabel('reverseKv', { exact: true }).uncheck();
  await p.getByLabel('pScale', { exact: true }).fill('1');
  const form = await formOf(page, { dtype: 'fp8e4m3', distribution: 'sink', switches: { reverseKv: false, pScale: '1' } });
  const one = await engine(form);
  const big = await engine({ ...form, switches: { reverseKv: false, pScale: '256' } });
  expect(one.r.run.flushedTotal).toBeGreaterThan(10 * Math.max(1, big.r.run.flushedTotal));
  await load(page, one.s.events().length);
  const view = precision(page);
  await expect(view.getByTestId('flushed-total')).toHaveText(String(one.r.run.flushedTotal), { timeout: 30_000 });
  // Go to the end: every flushed value of the head is marked in the debugger's P heatmap.
  await page.getByRole('button', { name: 'End', exact: true }).click();
  await expect(view.getByTestId('flushed-head')).toHaveText(String(one.r.head.flushed));
  await expect(page.getByRole('region', { name: 'Tile heatmaps' }).getByTestId('legend-marks')).toHaveText('flushed to 0 by the P cast');
  await shot(page.getByRole('region', { name: 'Tile heatmaps' }), { path: 'test-results/precision-heatmaps-flushed.png' });
  // The tile numbers of a P tile mark the same values as the engine's flush record.
  const heat = page.getByRole('region', { name: 'Tile heatmaps' });
  const pCanvas = heat.getByRole('img', { name: /^P = exp\(S − m\) heatmap/ });
  const box = (await pCanvas.boundingBox())!;
  await pCanvas.click({ position: { x: box.width * (240 / 256), y: box.height * (10 / 256) } });
  const zoom = page.getByRole('region', { name: 'Tile numbers' });
  await expect(zoom.getByRole('heading')).toHaveText('P tile (0, 1)');
  // The zoom shows the cells its size cap allows (the kernel's FP8 tile at d = 64 is 192×160):
  // count the engine's flushed marks over exactly the rows and key columns on screen.
  const shownCols = (await zoom.locator('thead th').allTextContents()).filter((t) => t !== '').map(Number);
  const shownRows = (await zoom.locator('tbody th').allTextContents()).map(Number);
  let inTile = 0;
  for (const r of shownRows) for (const c of shownCols) if (one.r.head.flushedAt[r * 256 + c] >= 0) inTile++;
  expect(inTile).toBeGreaterThan(0);
  await expect(zoom.locator('td.flushed')).toHaveCount(inTile);
  await shot(zoom, { path: 'test-results/precision-zoom-flushed.png' });
  await shot(view, { path: 'test-results/precision-sink-pscale1.png' });

  await p.getByLabel('pScale', { exact: true }).fill('256');
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(view.getByTestId('flushed-total')).toHaveText(String(big.r.run.flushedTotal), { timeout: 30_000 });
  expect(big.r.run.flushedTotal).not.toBe(one.r.run.flushedTotal);
});

test('FP8 where it cannot run ends in a one-click fix, not an error', async ({ page }) => {
  await openApp(page);
  const p = panel(page);
  await p.getByLabel('dtype').selectOption('fp8e4m3');
  // The default algorithm (fa2) has no FP8 path: the hint says so and offers FA3 or bf16.
  const hint = p.getByTestId('precision-hint');
  await expect(hint).toContainText('fa2 has no FP8 path');
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(p.getByRole('alert')).toContainText('pick one of the fixes under the dtype');
  await expect(p.getByRole('alert')).toContainText('Not loaded: fa2 cannot run this fp8e4m3 problem');
  await shot(p, { path: 'test-results/precision-fix-fa2.png' });
  const fix = hint.getByRole('button', { name: 'Run it on fa3' });
  await fix.focus();
  await page.keyboard.press('Enter');
  await expect(p.getByLabel('Algorithm')).toHaveValue('fa3');
  await expect(p.getByLabel('dtype')).toHaveValue('fp8e4m3');
  await expect(hint).toHaveCount(0);
  // Small enough to load quickly; the run loads and the Precision view measures it.
  await p.getByLabel('Nq', { exact: true }).fill('64');
  await p.getByLabel('Nk', { exact: true }).fill('64');
  await p.getByLabel('d', { exact: true }).fill('64');
  await p.getByLabel('dv', { exact: true }).fill('64');
  const form = await formOf(page, { dtype: 'fp8e4m3' });
  const { s } = await engine(form);
  await load(page, s.events().length);
  await expect(rmseCell(page)).toHaveText(/^\d/, { timeout: 30_000 });

  // FA3's backward has no FP8 path: stepping the forward is the fix, or bf16.
  await p.getByRole('radio', { name: /Backward/ }).click();
  await expect(hint).toContainText('backward');
  await expect(hint.getByRole('button', { name: /Step the forward pass/ })).toBeVisible();
  await expect(p.getByRole('alert')).toContainText('pick one of the fixes under the dtype');
  await hint.getByRole('button', { name: 'Use bf16' }).click();
  await expect(p.getByLabel('dtype')).toHaveValue('bf16');
  await expect(hint).toHaveCount(0);
});

test('a share link carries the FP8 dtype, the distribution and the FA3 switches', async ({ page }) => {
  await setUpFp8(page);
  await panel(page).getByLabel('pScale', { exact: true }).fill('16');
  // blockQuant is off by default (the shipped kernel): turning the paper's block scales on is what the link must carry.
  await panel(page).getByLabel('blockQuant', { exact: true }).check();
  // The address bar always holds the link (app/share/url-sync.ts).
  const linked = async () => decodeState(await page.evaluate(() => location.hash), DEFAULT_VIEWS).state.form;
  await expect.poll(async () => (await linked()).switches).toMatchObject({ pScale: '16', blockQuant: true });
  expect(await linked()).toMatchObject({ dtype: 'fp8e4m3', distribution: 'fa3-outliers' });
  const url = page.url();
  await page.goto('about:blank');
  await page.goto(url);
  const p = panel(page);
  await expect(p.getByLabel('dtype')).toHaveValue('fp8e4m3', { timeout: 20_000 });
  await expect(p.getByLabel('Input distribution')).toHaveValue('fa3-outliers');
  await expect(p.getByLabel('pScale', { exact: true })).toHaveValue('16');
  await expect(p.getByLabel('blockQuant', { exact: true })).toBeChecked();
});

test('a link with FP8 on fa2 opens with the fixes instead of a failed load', async ({ page }) => {
  const s = defaultSharedState(DEFAULT_VIEWS);
  s.form = { ...DEFAULT_FORM, dtype: 'fp8e4m3', distribution: 'fa3-outliers' };
  await page.goto(`/${encodeState(s)}`);
  const p = panel(page);
  await expect(p.getByRole('alert')).toContainText('Not loaded: fa2 cannot run this fp8e4m3 problem', { timeout: 20_000 });
  await p.getByTestId('precision-hint').getByRole('button', { name: 'Use bf16' }).click();
  await expect(p.getByRole('alert')).toHaveCount(0);
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  // A 16-bit run: the Precision view starts folded and measures on request.
  const view = precision(page);
  await view.getByRole('button', { name: 'Measure against float64' }).click();
  await expect(rmseCell(page)).toHaveText(/^\d/, { timeout: 30_000 });
  await expect(view.getByTestId('flushed-none')).toBeVisible();
  await shot(view, { path: 'test-results/precision-bf16.png' });
});
