// A teacher's copy: the site built with FLASHSCOPE_BASE=/some/sub/path/ and served by a plain
// static server under that path (playwright.subpath.config.ts). Walks the debugger (worker,
// lazy views, KaTeX and its fonts), a lesson by its route, compare mode and a share link,
// and fails on any request that leaves the sub-path or comes back with an error status.

import { expect, test, type Page } from './fixtures.ts';
import { CHAPTERS } from '../content/lessons/chapters/index.ts';
import { SUB_PATH } from '../playwright.subpath.config.ts';
import { watchConsole } from './helpers.ts';

let checkConsole: () => void;
let bad: string[];
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
  bad = [];
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (u.protocol.startsWith('http') && (!u.pathname.startsWith(SUB_PATH) || r.status() >= 400)) bad.push(`${r.status()} ${u.pathname}`);
  });
  page.on('requestfailed', (r) => {
    const error = r.failure()?.errorText ?? '';
    // A request the test's own navigation cancels says nothing about the host; its address must still be under the sub-path.
    if (error === 'net::ERR_ABORTED' && new URL(r.url()).pathname.startsWith(SUB_PATH)) return;
    bad.push(`failed ${r.url()} (${error})`);
  });
});
test.afterEach(() => {
  checkConsole();
  expect(bad, 'requests outside the sub-path or with an error status').toEqual([]);
});

const counter = (page: Page) => page.getByTestId('step-counter').first();

test('debugger from the sub-path: worker, lazy hardware views, KaTeX fonts', async ({ page }) => {
  await page.goto(SUB_PATH);
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  // The formula view's KaTeX chunk, stylesheet and fonts all come from under the sub-path.
  await expect(page.locator('.katex').first()).toBeVisible({ timeout: 20_000 });
  await expect
    .poll(() => page.evaluate(async () => (await document.fonts.ready, document.fonts.check('16px KaTeX_Main'))), { timeout: 20_000 })
    .toBe(true);
  // A kernel algorithm: its hardware views are lazy chunks, their schedule comes from the worker.
  const problem = page.getByRole('region', { name: 'Problem', exact: true });
  await problem.getByLabel('Algorithm').selectOption('fa3');
  await problem.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByRole('region', { name: 'Warp-role timeline' }).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status')).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`^http://127\\.0\\.0\\.1:\\d+${SUB_PATH}`));
});

test('a lesson by its route, opened directly and from the table of contents', async ({ page }) => {
  const chapter = CHAPTERS[0];
  await page.goto(SUB_PATH);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: 'Lessons' }).click();
  await expect(page).toHaveURL(new RegExp(`${SUB_PATH}\\?lesson`));
  await page
    .getByRole('link', { name: new RegExp(chapter.title) })
    .first()
    .click();
  await expect(page.getByRole('heading', { level: 2, name: chapter.title })).toBeVisible({ timeout: 20_000 });
  await expect(counter(page)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  // The chapter's own address, typed or reloaded, opens it from the sub-path.
  await page.goto(`${SUB_PATH}?lesson=${CHAPTERS[1].number}`);
  await expect(page.getByRole('heading', { level: 2, name: CHAPTERS[1].title })).toBeVisible({ timeout: 20_000 });
  await expect(counter(page)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
});

test('compare mode and a share link made on the hosted site open there', async ({ page, context }) => {
  await page.goto(SUB_PATH);
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await page.getByRole('tab', { name: 'Compare' }).click();
  for (const p of ['cmp0', 'cmp1'])
    await expect(page.locator(`[data-pane="${p}"]`).getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await page.locator('[data-pane="cmp0"]').getByRole('button', { name: 'Step forward', exact: true }).click();
  await page.getByRole('button', { name: 'Share link' }).click();
  const link = await page.getByLabel('Link to this view').inputValue();
  expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+${SUB_PATH}#`));
  const fresh = await context.newPage();
  const freshCheck = watchConsole(fresh);
  await fresh.goto(link);
  await expect(fresh.getByRole('tab', { name: 'Compare' })).toHaveAttribute('aria-selected', 'true');
  await expect(fresh.locator('[data-pane="cmp0"]').getByTestId('step-counter')).toHaveText(/^Step 2 of \d+$/, { timeout: 30_000 });
  freshCheck();
});
