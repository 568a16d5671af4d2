// Compare says what differs between panes besides the algorithm, offers the same tiles in
// every pane (a shipped kernel keeps its own and the note says so), and lays three panes
// side by side at 1440 px.

import { expect, test } from './fixtures.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

test('three panes side by side; tiles that differ are named and "Same tiles in every pane" evens them', async ({ page }) => {
  const checkConsole = watchConsole(page);
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  await page.getByRole('button', { name: 'Add pane' }).click();
  await page.getByLabel('Pane 2 algorithm').selectOption('fa3');
  const note = page.getByTestId('pane-differences');
  await expect(note).toContainText(/Tiles differ \(pane 1 16×16, pane 2 \d+×\d+, pane 3 16×16\)/, { timeout: 40_000 });
  // One row of three panes: their tops line up.
  const tops = await page.locator('.compare-pane').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
  expect(tops).toHaveLength(3);
  expect(new Set(tops).size).toBe(1);
  // FA3's tile is part of its kernel: pane 2 keeps it, and the free panes take it.
  await expect(note).toContainText('Keeps its kernel’s tile: pane 2');
  const same = note.getByRole('button', { name: /^Same tiles in every pane \(\d+×\d+ where the tile is free\)$/ });
  const tile = (await same.textContent())!.match(/(\d+×\d+)/)![1];
  await note.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/compare-differences-kept.png' });
  await same.click();
  await expect(note).toContainText(`Same tiles (${tile}), dtype and GPU in every pane`, { timeout: 40_000 });
  await expect(page.getByTestId('diff-table')).toContainText(`3: fa2 ${tile}`);
  await note.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/compare-differences.png' });
  checkConsole();
});
