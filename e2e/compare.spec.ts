// Compare mode: panes on the same problem, synchronised stepping on each axis, the
// difference table and the output difference, all checked against the engine's own
// sessions run here in Node with the same requests the panes send.

import { expect, test, type Page } from './fixtures.ts';
import { totalBytes } from '../engine/core/counters.ts';
import { outputDifference } from '../engine/compare/diff.ts';
import { pointOf, stepFor } from '../engine/compare/sync.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import type { LoadRequest } from '../engine/request.ts';
import { DEFAULT_PANES, type ComparePaneConfig } from '../app/compare/pane-config.ts';
import { paneRequest } from '../app/compare/shared-request.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

/** The debugger's problem panel (other panels, e.g. WebGPU, have fields with the same names). */
const problem = (p: Page) => p.getByRole('region', { name: 'Problem' });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const pane = (page: Page, i: number) => page.locator(`[data-pane="cmp${i}"]`);
const counterOf = (page: Page, i: number) => pane(page, i).getByTestId('step-counter');

async function session(req: LoadRequest): Promise<DebuggerSession> {
  const s = new DebuggerSession();
  await s.load(req);
  return s;
}

async function openCompare(page: Page): Promise<void> {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(counterOf(page, 0)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
  await expect(counterOf(page, 1)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
}

const cell = (page: Page, metric: string, col: number) => page.locator(`tr[data-metric="${metric}"] td`).nth(col);

test('FA1 vs FA2: the difference table and output difference equal the engine runs', async ({ page }) => {
  const base = formToRequest(DEFAULT_FORM);
  const [a, b] = await Promise.all(DEFAULT_PANES.map((c) => session(paneRequest(base, c))));
  const [da, db] = await Promise.all([a.compareData('h100'), b.compareData('h100')]);
  await openCompare(page);
  await expect(page.getByTestId('diff-table')).toBeVisible({ timeout: 20_000 });
  await expect(cell(page, 'HBM bytes read', 0)).toHaveText(totalBytes(da.counters.hbmRead).toLocaleString('en-US'));
  await expect(cell(page, 'HBM bytes read', 1)).toHaveText(totalBytes(db.counters.hbmRead).toLocaleString('en-US'));
  await expect(cell(page, 'HBM bytes written', 0)).toHaveText(totalBytes(da.counters.hbmWritten).toLocaleString('en-US'));
  await expect(cell(page, 'exp count', 1)).toHaveText(db.counters.expCount.toLocaleString('en-US'));
  await expect(cell(page, 'rescale count', 0)).toHaveText(da.counters.rescaleCount.toLocaleString('en-US'));
  await expect(cell(page, 'steps', 0)).toHaveText(String(a.events().length));
  await expect(cell(page, 'max |error| vs float64', 1)).toHaveText(db.error.maxAbs.toExponential(3));
  await expect(cell(page, 'predicted time (µs)', 0)).toHaveText('no hardware model for fa1');
  // FA2 moves fewer bytes than FA1: its cell is marked as the better one.
  await expect(cell(page, 'HBM bytes read', 1)).toHaveClass(/best/);
  const { maxAbs } = outputDifference(da.output, db.output);
  await expect(page.getByTestId('diff-max')).toHaveText(`max |A − B| = ${maxAbs.toExponential(3)}`);
  await expect(page.locator('.diff-heatmap figure canvas').first()).toBeVisible();
});

test('synchronised stepping: K/V block, normalised progress, unlinked; keyboard drives the active pane', async ({ page }) => {
  const base = formToRequest(DEFAULT_FORM);
  const [a, b] = await Promise.all(DEFAULT_PANES.map((c) => session(paneRequest(base, c))));
  const ea = a.events();
  const eb = b.events();
  await openCompare(page);
  const fwd = pane(page, 0).getByRole('button', { name: 'Step forward', exact: true });
  // K/V block (default): pane 2 lands on the step working on pane 1's row and key column.
  for (let k = 1; k <= 9; k++) {
    await fwd.click();
    await expect(counterOf(page, 0)).toHaveText(`Step ${k + 1} of ${ea.length}`);
    const want = stepFor(eb, pointOf(ea, k, null), 'kv', null).step;
    await expect(counterOf(page, 1)).toHaveText(`Step ${want + 1} of ${eb.length}`);
  }
  // Normalised progress: pane 2 leads this time, by keyboard.
  await page.getByRole('combobox', { name: 'Sync axis' }).selectOption('progress');
  await pane(page, 1)
    .getByRole('heading', { name: /^Pane 2/ })
    .click();
  for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowRight');
  const bStep = stepFor(eb, pointOf(ea, 9, null), 'kv', null).step + 5;
  await expect(counterOf(page, 1)).toHaveText(`Step ${bStep + 1} of ${eb.length}`);
  await expect(counterOf(page, 0)).toHaveText(`Step ${Math.round((bStep / (eb.length - 1)) * (ea.length - 1)) + 1} of ${ea.length}`);
  // Unlinked: only the pane moved changes.
  await page.getByRole('combobox', { name: 'Sync axis' }).selectOption('none');
  const before = await counterOf(page, 1).textContent();
  await fwd.click();
  await fwd.click();
  await expect(counterOf(page, 0)).toHaveText(`Step ${Math.round((bStep / (eb.length - 1)) * (ea.length - 1)) + 3} of ${ea.length}`);
  await expect(counterOf(page, 1)).toHaveText(before!);
});

test('FA3 with and without ping-pong: simulated-time sync, predictions on H100, fallback named for panes without a schedule', async ({
  page,
}) => {
  await openApp(page);
  // A Hopper-sized problem in fp16 for the shared problem.
  for (const [label, v] of [
    ['Nq', '128'],
    ['Nk', '256'],
    ['d', '64'],
    ['dv', '64'],
  ] as const)
    await problem(page).getByLabel(label, { exact: true }).fill(v);
  await problem(page).getByLabel('dtype').selectOption('fp16');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/);
  await page.getByRole('tab', { name: 'Compare' }).click();
  for (const i of [0, 1]) {
    await pane(page, i)
      .getByLabel(`Pane ${i + 1} algorithm`)
      .selectOption('fa3');
    await pane(page, i)
      .getByLabel(`Pane ${i + 1} Br`)
      .fill('');
    await pane(page, i)
      .getByLabel(`Pane ${i + 1} Bc`)
      .fill('');
    await pane(page, i)
      .getByLabel(`Pane ${i + 1} Bc`)
      .blur();
  }
  await pane(page, 1).getByLabel('Pane 2 pingpong').uncheck();
  const base: LoadRequest = { ...formToRequest({ ...DEFAULT_FORM, nq: '128', nk: '256', d: '64', dv: '64', dtype: 'fp16' }) };
  const cfgs: ComparePaneConfig[] = [
    { algorithm: 'fa3', blockM: '', blockN: '', features: {}, views: [] },
    { algorithm: 'fa3', blockM: '', blockN: '', features: { pingpong: false }, views: [] },
  ];
  const [a, b] = await Promise.all(cfgs.map((c) => session(paneRequest(base, c))));
  const [da, db] = await Promise.all([a.compareData('h100'), b.compareData('h100')]);
  await expect(counterOf(page, 1)).toHaveText(`Step 1 of ${b.events().length}`, { timeout: 20_000 });
  await expect(cell(page, 'predicted time (µs)', 0)).toHaveText('timeUs' in da.prediction ? da.prediction.timeUs.toFixed(2) : 'missing');
  await expect(cell(page, 'predicted time (µs)', 1)).toHaveText('timeUs' in db.prediction ? db.prediction.timeUs.toFixed(2) : 'missing');
  await expect(page.getByTestId('diff-table').locator('thead')).toContainText('−pingpong');
  // The pane's own run reaches its timeline: pane 2 steps without ping-pong, and so does its schedule.
  await pane(page, 1).getByLabel('Pane 2 view Warp-role timeline').check();
  const timeline = pane(page, 1).getByRole('region', { name: 'Warp-role timeline' });
  await expect(timeline.getByTestId('timeline-canvas')).toHaveAttribute('data-ops', /\d+/, { timeout: 30_000 });
  await expect(timeline.getByLabel('ping-pong')).not.toBeChecked();
  await pane(page, 1).getByLabel('Pane 2 view Warp-role timeline').uncheck();

  await page.getByRole('combobox', { name: 'Sync axis' }).selectOption('time');
  await pane(page, 0).getByRole('button', { name: 'End' }).click();
  await a.seek(a.events().length - 1);
  const pt = await a.syncPoint('h100');
  const { frame } = await b.seekSync(pt, 'time', 'h100');
  await expect(counterOf(page, 1)).toHaveText(`Step ${frame.step + 1} of ${b.events().length}`);
  await expect(pane(page, 0).getByTestId('sim-time')).toHaveText(`t = ${pt.timeUs!.toFixed(3)} µs on H100`);
  const followerPt = await b.syncPoint('h100');
  await expect(pane(page, 1).getByTestId('sim-time')).toHaveText(`t = ${followerPt.timeUs!.toFixed(3)} µs on H100`);
  expect(followerPt.timeUs!).toBeLessThanOrEqual(pt.timeUs!);

  // A pane without a hardware schedule: the UI says so and that pane follows by progress.
  await pane(page, 1).getByLabel('Pane 2 algorithm').selectOption('fa2');
  await expect(page.getByTestId('time-fallback')).toContainText('pane 2: fa2 has no hardware schedule');
  // The reloaded pane joins the leader (at the end): without a schedule it follows by progress, so it is at its end too.
  const fa2 = await session(paneRequest(base, { algorithm: 'fa2', blockM: '', blockN: '', features: {}, views: [] }));
  await expect(counterOf(page, 1)).toHaveText(`Step ${fa2.events().length} of ${fa2.events().length}`);
  await expect(cell(page, 'predicted time (µs)', 1)).toHaveText('no hardware model for fa2');
  await page.getByRole('combobox', { name: 'GPU for predictions' }).selectOption('a100');
  await expect(cell(page, 'predicted time (µs)', 0)).toContainText('SM90');
  await shot(page, { path: 'test-results/compare-fa3.png', fullPage: true });
});

test('up to four panes, each with its own views; a bad tile size is named and the pane keeps its run', async ({ page }) => {
  await openCompare(page);
  const add = page.getByRole('button', { name: 'Add pane' });
  await add.click();
  await add.click();
  await expect(add).toBeDisabled();
  await expect(counterOf(page, 3)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
  await pane(page, 3).getByLabel('Pane 4 view Running statistics').check();
  await expect(pane(page, 3).locator('.export-frame[data-view="stats"]')).toBeVisible();
  await expect(pane(page, 0).locator('.export-frame[data-view="stats"]')).toHaveCount(0);
  const before = await counterOf(page, 2).textContent();
  await pane(page, 2).getByLabel('Pane 3 Br').fill('0');
  await pane(page, 2).getByLabel('Pane 3 Br').press('Enter');
  await expect(pane(page, 2).getByRole('alert')).toContainText('Br: must be at least 1');
  await expect(counterOf(page, 2)).toHaveText(before!);
  await page.getByRole('button', { name: 'Remove pane' }).click();
  await expect(pane(page, 3)).toHaveCount(0);
});
