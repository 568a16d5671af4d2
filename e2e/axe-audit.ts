// axe-core passes shared by the accessibility walks (e2e/a11y.spec.ts, the chapter walk in
// e2e/lessons.spec.ts): a page checked whole in the theme it shows, then for contrast in the other.

import { expect, type Page } from './fixtures.ts';
import { axeOn } from './helpers.ts';

export type Theme = 'dark' | 'light';

/** Switches to `theme` with the top bar's toggle (a no-op when it shows already). */
export async function setTheme(page: Page, theme: Theme): Promise<void> {
  const other = theme === 'dark' ? 'light' : 'dark';
  const toggle = page.getByRole('button', { name: `Switch to ${theme} theme` });
  if (await toggle.isVisible()) await toggle.click();
  await expect(page.getByRole('button', { name: `Switch to ${other} theme` })).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('data-theme', theme);
}

/** The theme the page shows now. */
export async function themeShown(page: Page): Promise<Theme> {
  return (await page.evaluate(() => document.documentElement.dataset.theme)) === 'light' ? 'light' : 'dark';
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
export async function bothThemes(page: Page, where: string, skipPanes = false): Promise<void> {
  const now = await themeShown(page);
  await audit(page, `${where} ${now}`, false, skipPanes);
  const other: Theme = now === 'dark' ? 'light' : 'dark';
  await setTheme(page, other);
  await audit(page, `${where} ${other}`, true);
}
