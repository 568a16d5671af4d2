// Keyboard use: the shortcuts' help dialog on `?` (Escape closes it and focus goes back), the
// heatmaps' tile numbers from the keyboard, and the warp-role timeline's ops picked and
// sought with arrows and Enter, all without the arrows stepping the debugger underneath.

import { expect, test, type Page } from './fixtures.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const help = (page: Page) => page.getByRole('dialog', { name: 'Keyboard shortcuts' });

test("a heatmap reached by Tab reads a tile's numbers with the arrows, and Enter opens the tile; ? opens the shortcuts, Escape closes them and focus returns where it was", async ({
  page,
}) => {
  await openApp(page);
  const { s, req } = await engineSession();
  const { q: qValues } = await s.headInputs(0, 0);
  const q = page.getByRole('img', { name: /^Q heatmap/ });
  // Tab from the control before it, as a keyboard user would arrive.
  await page.getByRole('button', { name: 'Export Tile heatmaps as SVG' }).focus();
  await page.keyboard.press('Tab');
  await expect(q).toBeFocused();
  const tip = page.locator('figure[data-matrix="Q"] [role="tooltip"]');
  await expect(tip).toContainText('Q[0, 0] =');
  const bm = req.blocks.blockM ?? 16;
  await page.keyboard.press('ArrowDown');
  await expect(tip).toContainText(`Q[${bm}, 0] = ${Number(qValues[bm * req.problem.d].toPrecision(6))}`);
  await expect(tip).toContainText('tile (1, 0)');
  await expect(tip).toHaveAttribute('aria-live', 'polite');
  await page.keyboard.press('Shift+ArrowRight');
  await expect(tip).toContainText(`Q[${bm}, 1] =`);
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
  await shot(page, { path: 'test-results/heatmap-focus.png', clip: { x: 250, y: 120, width: 700, height: 420 } });
  await page.keyboard.press('Enter');
  await expect(page.getByRole('region', { name: 'Tile numbers' }).getByRole('heading', { level: 3 })).toContainText('Q');
  // Leaving the heatmap takes its tooltip away.
  await page.keyboard.press('Tab');
  await expect(tip).toHaveCount(0);

  // The shortcuts' help, from the transport.
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  await fwd.focus();
  await page.keyboard.press('?');
  await expect(help(page)).toBeVisible();
  for (const key of ['Space', 'Shift + →', 'Home', 'Enter', '+ / − / 0'])
    await expect(help(page).getByText(key, { exact: true }).first()).toBeVisible();
  await expect(help(page).getByRole('button', { name: 'Close' })).toBeFocused();
  await shot(page, { path: 'test-results/help-dialog.png' });
  await page.keyboard.press('Escape');
  await expect(help(page)).toBeHidden();
  await expect(fwd).toBeFocused();
  // The arrows are the debugger's again.
  await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  // The top bar's button opens it too; Close returns focus to that button.
  const button = page.getByRole('button', { name: 'Keyboard shortcuts' });
  await button.click();
  await expect(help(page)).toBeVisible();
  await help(page).getByRole('button', { name: 'Close' }).click();
  await expect(help(page)).toBeHidden();
  await expect(button).toBeFocused();
  // Typing a ? into a field types it.
  const d = page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('d', { exact: true });
  await d.focus();
  await page.keyboard.press('?');
  await expect(help(page)).toBeHidden();
});

test('the warp-role timeline: arrows pick an op and read it out, Enter seeks the debugger to its step', async ({ page }) => {
  await openApp(page);
  const panel = page.getByRole('region', { name: 'Problem', exact: true });
  await panel.getByLabel('Algorithm').selectOption('fa3');
  await panel.getByRole('button', { name: 'Load problem' }).click();
  const tl = page.getByRole('region', { name: 'Warp-role timeline' });
  await expect(tl.getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  const canvas = tl.getByTestId('timeline-canvas');
  await canvas.focus();
  const live = tl.locator('.sr-only[aria-live="polite"]');
  let step = '';
  // Walk forward until an op that belongs to a debugger step (producer loads come first).
  for (let i = 0; i < 40 && !step; i++) {
    await page.keyboard.press('ArrowRight');
    await expect(live).toContainText('cycles');
    step = /Enter: step (\d+)/.exec((await live.textContent()) ?? '')?.[1] ?? '';
  }
  expect(step).not.toBe('');
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
  await page.keyboard.press('Enter');
  await expect(counter(page)).toHaveText(new RegExp(`^Step ${step} of \\d+$`));
  await shot(page, { path: 'test-results/timeline-focus.png' });
});
