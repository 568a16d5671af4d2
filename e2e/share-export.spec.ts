// Share links and exports: the URL carries the whole state and restores it on reload;
// malformed links open the defaults with a notice per ignored part; bad problem settings
// are named; every export downloads what the view or run holds.

import { readFileSync, writeFileSync } from 'node:fs';
import { expect, test, type Page } from './fixtures.ts';
import { countersCsv } from '../engine/compare/diff.ts';
import { toJsonLine } from '../engine/trace/jsonl.ts';
import { decodeState, encodeState, defaultSharedState, SHARE_VERSION } from '../app/share/url-state.ts';
import { DEFAULT_VIEWS } from '../app/views/registry.ts';
import { DEFAULT_PANES } from '../app/compare/pane-config.ts';
import { paneRequest } from '../app/compare/shared-request.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

/** The debugger's problem panel (other panels, e.g. WebGPU, have fields with the same names). */
const problem = (p: Page) => p.getByRole('region', { name: 'Problem' });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const frag = (obj: unknown) => `#s=${Buffer.from(JSON.stringify(obj)).toString('base64url')}`;
const pane = (page: Page, i: number) => page.locator(`[data-pane="cmp${i}"]`);

test('the URL carries the state: reloading it restores problem, step, views, compare panes and sync axis', async ({ page }) => {
  const { s } = await engineSession({ algorithm: 'fa1', nq: '48', causal: true, seed: '7' });
  await openApp(page);
  await problem(page).getByLabel('Algorithm').selectOption('fa1');
  await problem(page).getByLabel('Nq', { exact: true }).fill('48');
  await problem(page).getByLabel('Causal').check();
  await problem(page).getByLabel('seed').fill('7');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${s.events().length}`);
  for (let i = 0; i < 6; i++) await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counter(page)).toHaveText(`Step 7 of ${s.events().length}`);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await page.getByRole('combobox', { name: 'Sync axis' }).selectOption('progress');
  await pane(page, 1).getByLabel('Pane 2 algorithm').selectOption('standard');
  await pane(page, 1).getByLabel('Pane 2 view Formula').check();
  // The panes' runs, from the engine: pane 1 is FA1 16×16, pane 2 standard attention, on the shared problem.
  const base = formToRequest({ ...DEFAULT_FORM, algorithm: 'fa1', nq: '48', causal: true, seed: '7' });
  const n0 = (await engineSession({ algorithm: 'fa1', nq: '48', causal: true, seed: '7' })).s.events().length;
  const std = new DebuggerSession();
  await std.load(paneRequest(base, { ...DEFAULT_PANES[1], algorithm: 'standard' }));
  const n1 = std.events().length;
  await expect(pane(page, 1).getByTestId('step-counter')).toHaveText(`Step 1 of ${n1}`, { timeout: 20_000 });
  await pane(page, 0).getByRole('button', { name: 'Step forward', exact: true }).click();
  await pane(page, 0).getByRole('button', { name: 'Step forward', exact: true }).click();
  const c0 = `Step 3 of ${n0}`;
  const c1 = `Step ${Math.round((2 / (n0 - 1)) * (n1 - 1)) + 1} of ${n1}`;
  await expect(pane(page, 0).getByTestId('step-counter')).toHaveText(c0);
  await expect(pane(page, 1).getByTestId('step-counter')).toHaveText(c1);

  await page.getByRole('button', { name: 'Share link' }).click();
  const link = await page.getByLabel('Link to this view').inputValue();
  expect(link).toMatch(/#s=[A-Za-z0-9_-]+$/);
  const fresh = await page.context().newPage();
  const check2 = watchConsole(fresh);
  await fresh.goto(link);
  await expect(fresh.getByRole('tab', { name: 'Compare' })).toHaveAttribute('aria-selected', 'true');
  await expect(fresh.getByRole('combobox', { name: 'Sync axis' })).toHaveValue('progress');
  await expect(pane(fresh, 1).getByLabel('Pane 2 algorithm')).toHaveValue('standard');
  await expect(pane(fresh, 1).getByLabel('Pane 2 view Formula')).toBeChecked();
  await expect(pane(fresh, 0).getByTestId('step-counter')).toHaveText(c0, { timeout: 20_000 });
  await expect(pane(fresh, 1).getByTestId('step-counter')).toHaveText(c1);
  await fresh.getByRole('tab', { name: 'Single' }).click();
  await expect(problem(fresh).getByLabel('Algorithm')).toHaveValue('fa1');
  await expect(problem(fresh).getByLabel('Nq', { exact: true })).toHaveValue('48');
  await expect(problem(fresh).getByLabel('Causal')).toBeChecked();
  await expect(counter(fresh)).toHaveText(`Step 7 of ${s.events().length}`);
  await expect(fresh.getByTestId('share-notice')).toHaveCount(0);
  // The address bar follows every change (here: back to the debugger), and reloading it restores that.
  await expect.poll(() => decodeState(new URL(fresh.url()).hash, DEFAULT_VIEWS).state.mode).toBe('debugger');
  await fresh.reload();
  await expect(counter(fresh)).toHaveText(`Step 7 of ${s.events().length}`, { timeout: 20_000 });
  await shot(fresh, { path: 'test-results/share-restored.png' });
  check2();
});

/** Links that are malformed or outdated: [case, fragment, notice]. */
const BAD_LINKS: [string, string, RegExp][] = [
  ['not a state', '#view=heatmaps', /fragment "view=heatmaps" is not a FlashScope state/],
  ['broken base64', '#s=***', /state could not be read/],
  ['newer version', frag({ v: SHARE_VERSION + 1, m: 'compare' }), /made by a newer FlashScope \(state version 2; this one reads 1\)/],
  ['unknown algorithm', frag({ v: 1, f: { algorithm: 'fa9' } }), /problem\.algorithm: "fa9" is not one of/],
  ['Nq not a number', frag({ v: 1, f: { nq: 'abc' } }), /problem\.nq: nq: must be a whole number, got "abc"; using "64"/],
  ['unknown view', frag({ v: 1, vw: ['heatmaps', 'x-ray'] }), /views: unknown view "x-ray" ignored/],
  [
    'five compare panes',
    frag({ v: 1, m: 'compare', c: { p: [0, 1, 2, 3, 4].map(() => ({ algorithm: 'fa2' })) } }),
    /the link has 5 compare panes; at most 4 are shown/,
  ],
  ['unknown sync axis', frag({ v: 1, c: { a: 'diagonal' } }), /sync axis "diagonal" is not one of kv, progress, time, none/],
  ['step past the end', frag({ v: 1, st: 99999 }), /step 100000 is past the end of the run \(\d+ steps\); showing the last step/],
  ['unknown GPU', frag({ v: 1, c: { g: 'v100' } }), /GPU "v100" is not one of a100, rtx4060, h100, h200, b200/],
];

test(`${BAD_LINKS.length} malformed or outdated links open the defaults for what they cannot say, with a notice`, async ({ page }) => {
  for (const [name, fragment, notice] of BAD_LINKS) {
    // A fragment-only change would not reload the page: open a blank page in between.
    await page.goto('about:blank');
    await page.goto(`/${fragment}`);
    await expect(page.getByTestId('share-notice'), name).toContainText(notice, { timeout: 20_000 });
    await expect(page.getByTestId('step-counter').first(), name).toHaveText(/^Step \d+ of \d+$/, { timeout: 20_000 });
  }
  // Dismissing keeps the defaults running.
  await page.getByTestId('share-notice').getByRole('button', { name: 'Dismiss' }).click();
  await expect(page.getByTestId('share-notice')).toHaveCount(0);
  expect(encodeState(defaultSharedState(DEFAULT_VIEWS))).toMatch(/^#s=/);
});

/** Problem settings a person can type: [case, field label, value, message]. */
const BAD_SETTINGS: [string, string, string, RegExp][] = [
  ['Nq zero', 'Nq', '0', /nq: must be at least 1, got 0/],
  ['Hk does not divide Hq', 'Hk', '3', /hk: query heads \(1\) must be a multiple of key\/value heads \(3\)/],
  ['Br not a number', 'Br', 'x', /Br: must be a whole number, got "x"/],
  ['softcap negative', 'softcap', '-1', /softcap: must be a number > 0, got "-1"/],
  ['seed negative', 'seed', '-3', /seed: must be at least 0, got -3/],
  ['d empty', 'd', '', /d: must be a whole number, got ""/],
  ['attention chunk zero', 'attention chunk', '0', /attention chunk: must be at least 1, got 0/],
  ['attention chunk on FA2', 'attention chunk', '16', /attentionChunk: fa2 has no attention chunk .*run it on fa3 or standard/],
];

async function download(page: Page, click: () => Promise<void>): Promise<{ name: string; body: Buffer }> {
  const wait = page.waitForEvent('download');
  await click();
  const d = await wait;
  const path = await d.path();
  return { name: d.suggestedFilename(), body: readFileSync(path) };
}

test(`${BAD_SETTINGS.length} bad problem settings are named and the loaded run stays; exports: view as PNG and SVG, counters as CSV, the trace as JSONL, compare's difference table as CSV; an attention chunk loads on standard, rides the share link, is refused by compare's fa1 and fa2 panes (the table says so) and runs in a standard pane`, async ({
  page,
}) => {
  const { s } = await engineSession();
  await openApp(page);
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  // Read the position only once the step has landed (the click returns before the worker answers).
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  const before = await counter(page).textContent();
  for (const [name, label, value, message] of BAD_SETTINGS) {
    const field = problem(page).getByLabel(label, { exact: true });
    const old = await field.inputValue();
    await field.fill(value);
    await page.getByRole('button', { name: 'Load problem' }).click();
    await expect(page.getByRole('region', { name: 'Problem' }).getByRole('alert'), name).toHaveText(message);
    await expect(counter(page)).toHaveText(before!);
    await field.fill(old);
  }

  // Every field is back at its default: the run the exports hold is the default problem's.
  for (let i = 0; i < 3; i++) await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counter(page)).toHaveText(`Step 5 of ${s.events().length}`);

  const png = await download(page, () => page.getByRole('button', { name: 'Export Tile heatmaps as PNG' }).click());
  expect(png.name).toBe('flashscope-fa2-step5-heatmaps.png');
  expect([...png.body.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  writeFileSync('test-results/exported-heatmaps.png', png.body);
  // Twice the view's CSS size.
  const box = (await page.locator('.export-frame[data-view="heatmaps"] .view').boundingBox())!;
  expect(png.body.readUInt32BE(16)).toBe(Math.round(Math.ceil(box.width) * 2));

  const svg = await download(page, () => page.getByRole('button', { name: 'Export Counters as SVG' }).click());
  expect(svg.name).toBe('flashscope-fa2-step5-counters.svg');
  const text = svg.body.toString('utf8');
  expect(text).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  expect(text).toContain('<foreignObject');
  expect(text).toContain('HBM read');
  expect(text).not.toContain('Export Counters as SVG');

  const heatSvg = await download(page, () => page.getByRole('button', { name: 'Export Tile heatmaps as SVG' }).click());
  expect(heatSvg.body.toString('utf8')).toContain('<img src="data:image/png;base64,');

  await s.seek(4);
  const frame = await s.seek(4);
  const csv = await download(page, () => page.getByRole('button', { name: 'Counters CSV' }).click());
  expect(csv.name).toBe('flashscope-fa2-step5-counters.csv');
  expect(csv.body.toString('utf8')).toBe(countersCsv(frame.counters));

  const jsonl = await download(page, () => page.getByRole('button', { name: 'Trace JSONL' }).click());
  expect(jsonl.name).toBe('flashscope-fa2-trace.jsonl');
  const lines = jsonl.body.toString('utf8').trimEnd().split('\n');
  expect(lines.length).toBe(s.events().length);
  expect(lines[7]).toBe(toJsonLine(s.events()[7]));

  // Compare's difference table, on the same problem.
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(page.getByTestId('diff-table')).toBeVisible({ timeout: 20_000 });
  const tableCsv = await download(page, () => page.getByRole('button', { name: 'Table CSV' }).click());
  const rows = tableCsv.body.toString('utf8').trimEnd().split('\n');
  expect(rows[0]).toBe('metric,1: fa1 16×16,2: fa2 16×16');
  const shown = await page.locator('tr[data-metric="exp count"] td').allTextContents();
  expect(rows.find((r) => r.startsWith('exp count,'))).toBe(`exp count,${shown.map((x) => x.replace(/,/g, '')).join(',')}`);

  // Back on Single: an algorithm that takes the attention chunk loads it (the steps of the chunked problem), and a share link keeps the field.
  await page.getByRole('tab', { name: 'Single' }).click();
  const chunked = (await engineSession({ algorithm: 'standard', attentionChunk: '16' })).s;
  await problem(page).getByLabel('Algorithm').selectOption('standard');
  await problem(page).getByLabel('attention chunk', { exact: true }).fill('16');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${chunked.events().length}`);
  await expect(page.getByRole('region', { name: 'Problem' }).getByRole('alert')).toHaveCount(0);
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await shot(page, { path: 'test-results/attention-chunk.png' });
  await page.getByRole('button', { name: 'Share link' }).click();
  const link = await page.getByLabel('Link to this view').inputValue();
  expect(decodeState(new URL(link).hash, DEFAULT_VIEWS).state.form.attentionChunk).toBe('16');
  // Compare runs the same problem: the summary names the chunk, and a pane whose algorithm lacks it says so.
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(page.getByTestId('shared-problem')).toContainText('attention chunk 16');
  await expect(pane(page, 0)).toContainText(/fa1 has no attention chunk/, { timeout: 20_000 });
  // Neither default pane (fa1, fa2) takes the chunk: the table says so instead of waiting, and so does the output difference.
  const table = page.getByRole('region', { name: 'Difference table' });
  await expect(page.getByTestId('diff-not-run')).toHaveText(
    /^No pane could run this problem: pane 1 \(fa1\): .*fa1 has no attention chunk.*; pane 2 \(fa2\): .*fa2 has no attention chunk.*\.$/,
  );
  await expect(table).not.toContainText('Waiting');
  await expect(page.getByTestId('diff-pair-not-run')).toContainText('pane 1 (fa1)');
  await shot(page, { path: 'test-results/attention-chunk-compare.png' });
  await shot(page.locator('.diff-panel'), { path: 'test-results/attention-chunk-compare-table.png' });
  // A pane that takes the chunk runs it; the table compares that pane and names the one that refused.
  await pane(page, 1).getByLabel('Pane 2 algorithm').selectOption('standard');
  await expect(page.getByTestId('diff-table')).toBeVisible({ timeout: 20_000 });
  await expect(page.getByTestId('diff-table').locator('thead th')).toHaveText(['metric', /^2: standard/]);
  await expect(page.getByTestId('diff-not-run')).toHaveText(/^Not in the table: pane 1 \(fa1\): .*fa1 has no attention chunk/);
  await expect(page.getByTestId('pane-differences')).toHaveCount(0);
  await shot(page.locator('.diff-panel'), { path: 'test-results/attention-chunk-compare-one-pane.png' });
});
