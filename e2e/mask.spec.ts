import { expect, test, type Page } from './fixtures.ts';
import { blockMask, elementDensity } from '../engine/core/block-mask.ts';
import { counterFigure } from '../content/counter-figures.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { axeOn, counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

// The mask editor (text with the error at its column, presets) and the block-mask view.

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const panel = (page: Page) => page.getByRole('region', { name: 'Problem', exact: true });
const blockView = (page: Page) => page.getByRole('region', { name: 'Block mask', exact: true });

test('a mistake is shown at its column and loses nothing; a preset loads and its empty tiles are counted', async ({ page }) => {
  await openApp(page);
  const p = panel(page);
  await expect(counter(page)).toContainText('Step');
  const before = await counter(page).textContent();

  const text = p.getByLabel('mask_mod text', { exact: true });
  await text.fill('q_idx >= foo');
  await expect(p.getByText("mask_mod: column 10: unknown name 'foo'")).toBeVisible();
  await expect(p.locator('.mask-caret')).toHaveText(`${' '.repeat(9)}^`);
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(p.getByRole('alert')).toContainText("mask_mod: column 10: unknown name 'foo'");
  await expect(counter(page)).toHaveText(before ?? '');
  await expect(text).toHaveValue('q_idx >= foo');

  await p.getByLabel('mask_mod preset', { exact: true }).selectOption('document');
  await expect(text).toHaveValue('document:21');
  await expect(p.getByText('runs as')).toContainText('doc[q_idx + (nk - nq)] == doc[kv_idx]');
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(p.getByRole('alert')).toHaveCount(0);

  const bm = blockMask(formToRequest({ ...DEFAULT_FORM, maskMod: 'document:21' }).problem, 16, 16);
  expect(bm.counts.empty).toBeGreaterThan(0);
  const v = blockView(page);
  await expect(v).toContainText(`density ${(bm.density * 100).toFixed(1)}%`);
  await expect(v).toContainText(`${bm.counts.empty} of 16 tile pairs empty, ${bm.counts.partial} partial, ${bm.counts.full} full`);
  await expect(v.locator('rect[data-state="0"]')).toHaveCount(bm.counts.empty);

  // The stepper skips those tiles: a skip step says so, and the counters add them up.
  const { s } = await engineSession({ maskMod: 'document:21' });
  const skipAt = s.events().findIndex((e) => e.kind === 'skip');
  expect(skipAt).toBeGreaterThan(0);
  await page.getByLabel('Breakpoint kind').selectOption('phase');
  await page.getByLabel('Phase kind').selectOption('skip');
  await page.getByRole('button', { name: 'Add breakpoint' }).click();
  await page.getByRole('button', { name: 'Run to next breakpoint' }).click();
  await expect(counter(page)).toHaveText(`Step ${skipAt + 1} of ${s.events().length}`);
  const e = s.events()[skipAt];
  await expect(page.getByText(`Tile (${e.tile.qBlock}, ${e.tile.kvBlock}) skipped (empty)`)).toBeVisible();
  await page.getByRole('button', { name: 'End', exact: true }).click();
  await expect(page.getByTestId('counters-sparsity')).toContainText(`${bm.counts.empty} tiles skipped`);
  // A phone cannot hover: a tap (or Enter) on a rounded figure writes its exact value beside it, and another folds it.
  const readRow = page.locator('table.counters tr', { hasText: 'HBM read' });
  const fig = readRow.locator('button.fig-exact').first();
  await fig.click();
  await expect(fig).toHaveAttribute('aria-expanded', 'true');
  const exact = (await readRow.locator('.fig-exact-value').first().textContent()) ?? '';
  expect(exact).toMatch(/^ = [\d,]+ bytes$/);
  expect(`${counterFigure(Number(exact.replace(/[^\d]/g, '')))}B`).toBe(await fig.textContent());
  await fig.press('Enter');
  await expect(readRow.locator('.fig-exact-value')).toHaveCount(0);

  // Standard attention has no tiles: its counters report only the mask checks, one per score.
  const std = await engineSession({ maskMod: 'document:21', algorithm: 'standard' });
  await p.getByLabel('Algorithm').selectOption('standard');
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${std.s.events().length}`);
  await page.getByRole('button', { name: 'End', exact: true }).click();
  const { batch, hq, nq, nk } = std.req.problem;
  await expect(page.getByTestId('counters-sparsity')).toHaveText(
    `no tiles to skip: ${counterFigure(batch * hq * nq * nk)} mask checks, one per score`,
  );
  // Its one row block spans every key (a block density of 100%): the view gives the density per score, and FA2's tiles beside it.
  const scores = elementDensity(std.req.problem);
  expect(scores.density).toBeLessThan(1);
  await expect(blockView(page).getByTestId('element-density')).toContainText(`Density per score ${(scores.density * 100).toFixed(1)}%`);
  await expect(blockView(page)).toContainText(
    `At FlashAttention-2's tiles 16 × 16: density ${(bm.density * 100).toFixed(1)}% — ${bm.counts.empty} of 16 tile pairs empty`,
  );
  await expect(blockView(page).locator('rect[data-state="0"]')).toHaveCount(bm.counts.empty);
  await page.screenshot({ path: test.info().outputPath('standard-mask-checks.png'), fullPage: true });
  await p.getByLabel('Algorithm').selectOption('fa2');

  // An own mask reading an array typed in the aux box.
  await text.fill('doc[q_idx] == doc[kv_idx]');
  await expect(p.getByText("mask_mod: column 1: unknown array 'doc'; this mask has no aux arrays")).toBeVisible();
  const aux = p.getByLabel('aux arrays', { exact: true });
  await aux.fill('doc = 0*40, 1');
  await expect(p.getByText('aux arrays: doc: entry 2 "1" is not a number')).toHaveCount(0);
  await aux.fill('doc = 0*40, 1*x');
  await expect(p.getByText('aux arrays: doc: entry 2 "1*x" is not a number (or number*count)')).toBeVisible();
  await aux.fill('doc = 0*40, 1*24');
  await expect(p.locator('.mask-error')).toHaveCount(0);
  await p.getByRole('button', { name: 'Load problem' }).click();
  await expect(p.getByRole('alert')).toHaveCount(0);
  await expect(blockView(page)).toContainText('4 of 16 tile pairs empty');
  await shot(page, { path: test.info().outputPath('mask.png'), fullPage: true });
});

test('chapter 14 opens on a partial tile with its mask in the editor; the block mask shows the six empty tiles; axe passes', async ({
  page,
}) => {
  await page.goto('/?lesson=14');
  await expect(page.getByRole('heading', { level: 2, name: 'Masks as functions, and the tiles they empty' })).toBeVisible({
    timeout: 20_000,
  });
  await expect(page.getByTestId('step-counter').first()).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  await expect(blockView(page)).toContainText('6 of 16 tile pairs empty, 8 partial, 2 full');
  const text = panel(page).getByLabel('mask_mod text', { exact: true });
  await expect(text).toHaveValue(/^where\(q_idx < 24, 0/);
  await expect(page.getByText('Problem changed')).toHaveCount(0);
  await text.fill('kv_idx <= q_idx &&');
  await expect(panel(page).locator('.mask-error')).toBeVisible();
  const { violations } = await axeOn(page).include('.mask-editor').include('.block-mask').analyze();
  expect(violations.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
  // On a phone the grid's tiles are large enough to tell apart and numbered along both edges, in type that reads.
  await page.setViewportSize({ width: 390, height: 844 });
  const grid = blockView(page).getByRole('img', { name: 'Block mask: 4 Q tiles by 4 K/V tiles' });
  await expect(grid.locator('.bm-numbers text')).toHaveText(['0', '1', '2', '3', '0', '1', '2', '3']);
  const px = await grid.evaluate((svg) => {
    const scale = svg.getBoundingClientRect().width / (svg as SVGSVGElement).viewBox.baseVal.width;
    return {
      cell: svg.querySelector('rect')!.getBoundingClientRect().width,
      font: Number.parseFloat(getComputedStyle(svg.querySelector('.bm-numbers text')!).fontSize) * scale,
      right: svg.getBoundingClientRect().right,
    };
  });
  expect(px.cell, 'tile pair on a phone').toBeGreaterThanOrEqual(32);
  expect(px.font, 'tile numbers on a phone').toBeGreaterThanOrEqual(12);
  expect(px.right).toBeLessThanOrEqual(390);
  // A phone cannot hover: a tap names the tile under the grid, and so do Enter and the arrow keys. Documents of 24, 16
  // and 24 tokens: rows 16–31 by keys 16–31 keep two 8 × 8 blocks, rows 16–31 by keys 32–47 one (rows 24–31, keys 32–39).
  const line = blockView(page).getByTestId('bm-tile-line');
  await expect(line).toHaveText('Tap or click a tile to see how many of its scores the mask keeps.');
  await grid.locator('rect[data-tile="1-1"]').click();
  await expect(line).toHaveText('Q tile 1 × K/V tile 1: partial (masked inside), 128 of 256 scores kept.');
  const step = await page.getByTestId('step-counter').first().textContent();
  await grid.press('ArrowRight');
  await expect(line).toHaveText('Q tile 1 × K/V tile 2: partial (masked inside), 64 of 256 scores kept.');
  await grid.press('ArrowUp');
  await expect(line).toHaveText('Q tile 0 × K/V tile 2: empty (skipped), 0 of 256 scores kept.');
  await expect(page.getByTestId('step-counter').first(), 'arrows in the grid leave the step alone').toHaveText(step ?? '');
  await blockView(page).scrollIntoViewIfNeeded();
  await shot(page, { path: test.info().outputPath('block-mask-390.png') });
});

test('compare preset "Two masks": each pane shows its own block mask', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await page.getByRole('button', { name: 'Preset: Two masks' }).click();
  const pane = (i: number) => page.locator(`[data-pane="cmp${i}"]`);
  // 8 × 8 tile pairs: causal keeps 36, the 32-key window 21 (block-mask.test.ts and mask-preset.test.ts count them).
  await expect(pane(0).getByRole('region', { name: 'Block mask' })).toContainText('28 of 64 tile pairs empty', { timeout: 60_000 });
  await expect(pane(1).getByRole('region', { name: 'Block mask' })).toContainText('43 of 64 tile pairs empty', { timeout: 60_000 });
  await shot(page, { path: test.info().outputPath('compare-masks.png'), fullPage: true });
});
