// Accessibility: axe-core on every page a person reaches — the debugger (forward and
// backward, hardware views open), compare with four panes, the serving page (varlen and
// paged), the WebGPU panel, the lesson list and every chapter — in both themes. No serious
// or critical violation may remain; moderate and minor ones are printed for the report.

import { expect, test, type Page } from './fixtures.ts';
import { CHAPTERS } from '../content/lessons/chapters/index.ts';
import { axeOn, openApp, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

type Theme = 'dark' | 'light';

async function setTheme(page: Page, theme: Theme): Promise<void> {
  const other = theme === 'dark' ? 'light' : 'dark';
  const toggle = page.getByRole('button', { name: `Switch to ${theme} theme` });
  if (await toggle.isVisible()) await toggle.click();
  await expect(page.getByRole('button', { name: `Switch to ${other} theme` })).toBeVisible();
}

/**
 * axe on the page as it stands; serious and critical violations fail the test. `contrastOnly`:
 * the second theme of a page already checked whole (only colours differ between themes).
 */
async function audit(page: Page, where: string, contrastOnly = false, skipPanes = contrastOnly): Promise<void> {
  // A lesson's embedded debugger panes are the debugger page's components, checked there in
  // both themes: the contrast pass of a chapter leaves them out, and so does the whole pass of
  // a chapter whose panes show only views an earlier chapter's whole pass checked.
  // Only the violations come back: the passes of a page of tables are most of axe's output.
  const base = axeOn(page).options({ resultTypes: ['violations'] });
  const axe = skipPanes ? base.exclude('[data-lesson-pane]') : base;
  const t0 = Date.now();
  const { violations } = await (contrastOnly ? axe.withRules(['color-contrast']) : axe).analyze();
  console.log(`[axe ${where}] ${Date.now() - t0} ms`);
  const lines = violations.map(
    (v) =>
      `${v.impact} ${v.id} (${v.nodes.length}): ${v.help} — ${v.nodes
        .slice(0, 3)
        .map((n) => n.target.join(' '))
        .join(' | ')}`,
  );
  for (const l of lines) console.log(`[axe ${where}] ${l}`);
  const severe = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect
    .soft(
      severe.map((v) => `${v.id}: ${v.nodes.map((n) => `${n.target.join(' ')} — ${n.failureSummary}`).join('\n')}`),
      `serious/critical axe violations on ${where}`,
    )
    .toEqual([]);
}

/**
 * The page checked whole in the theme it shows, then for contrast in the other (only colours
 * differ between themes); it is left in the second, so the next page starts from the other one.
 */
async function bothThemes(page: Page, where: string, skipPanes = false): Promise<void> {
  const now: Theme = (await page.evaluate(() => document.documentElement.dataset.theme)) === 'light' ? 'light' : 'dark';
  await audit(page, `${where} ${now}`, false, skipPanes);
  const other: Theme = now === 'dark' ? 'light' : 'dark';
  await setTheme(page, other);
  await audit(page, `${where} ${other}`, true);
}

const problem = (page: Page) => page.getByRole('region', { name: 'Problem', exact: true });

test('debugger: FA3 forward and backward with the hardware views, and the WebGPU panel', async ({ page }) => {
  await openApp(page);
  await problem(page).getByLabel('Algorithm').selectOption('fa3');
  await problem(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByRole('region', { name: 'Warp-role timeline' }).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status')).toBeVisible();
  await expect(page.getByRole('region', { name: 'WebGPU full-size runs' })).toBeVisible();
  await bothThemes(page, 'debugger forward');
  await problem(page).getByRole('radio', { name: 'Backward' }).click();
  await expect(page.locator('figure[data-matrix="dQ"]')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await bothThemes(page, 'debugger backward');
});

test('compare with four panes, and the serving page (varlen and paged)', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  const add = page.getByRole('button', { name: 'Add pane' });
  await add.click();
  await add.click();
  for (let i = 0; i < 4; i++)
    await expect(page.locator(`[data-pane="cmp${i}"]`).getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await bothThemes(page, 'compare');
  await page.getByRole('tab', { name: 'Serving' }).click();
  await expect(page.getByTestId('serving-step')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await bothThemes(page, 'serving varlen');
  const form = page.getByRole('form', { name: 'Serving problem' });
  await form.getByRole('radio', { name: 'Paged K/V cache (block table)' }).check();
  await form.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('serving-step')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  await bothThemes(page, 'serving paged');
});

test('the lesson list and every chapter, in both themes', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('/?lesson');
  await expect(page.getByRole('link', { name: new RegExp(CHAPTERS[0].title) }).first()).toBeVisible();
  await bothThemes(page, 'lesson list');
  // The kinds of view (their class names) inside the lesson panes that a whole pass has checked.
  const viewsChecked = new Set<string>();
  for (const c of CHAPTERS) {
    if (c === CHAPTERS[0])
      await page
        .getByRole('link', { name: new RegExp(c.title) })
        .first()
        .click();
    else
      await page
        .getByRole('button', { name: `Next chapter: ${c.number}. ${c.title}` })
        .first()
        .click();
    await expect(page.getByRole('heading', { level: 2, name: c.title })).toBeVisible({ timeout: 20_000 });
    await expect(page.getByTestId('step-counter').first()).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
    // Lazily loaded views show a placeholder section first: list (and check) the views themselves.
    await expect(page.locator('[data-lesson-pane] section.view.dim')).toHaveCount(0, { timeout: 20_000 });
    const views = await page
      .locator('[data-lesson-pane] .view')
      .evaluateAll((els) => els.map((e) => [...e.classList].filter((k) => k !== 'view').join('.')));
    const unseen = views.filter((v) => !viewsChecked.has(v));
    for (const v of views) viewsChecked.add(v);
    console.log(`[axe chapter ${c.number}] panes: ${unseen.length ? `checked whole for ${unseen.join(', ')}` : 'views checked before'}`);
    await bothThemes(page, `chapter ${c.number}`, unseen.length === 0);
  }
});
