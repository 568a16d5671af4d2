// The main thread under load: a step repaints only the tile it changed, not the
// whole score matrix, and max-speed playback leaves the main thread mostly free. Timing is
// asserted with a wide margin (this runs on a shared 2-core machine); the repaint count is exact.

import { expect, test, type Page } from './fixtures.ts';
import { counter, openApp, watchConsole } from './helpers.ts';

type LongTasks = { __long: { start: number; duration: number }[] };

/** Opens the app with a long-task observer installed and loads FA2 at N × N with tiles × tiles. */
async function openFa2(page: Page, n: number, tile: number): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as LongTasks;
    w.__long = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__long.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  });
  await openApp(page);
  const problem = page.getByRole('region', { name: 'Problem', exact: true });
  await problem.getByLabel('Algorithm').selectOption('fa2');
  for (const [label, v] of [
    ['Nq', n],
    ['Nk', n],
    ['Br', tile],
    ['Bc', tile],
  ] as const)
    await problem.getByLabel(label, { exact: true }).fill(String(v));
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 60_000 });
}

test('N 1024 with 64×64 tiles: a step compares one tile of the S and P images, and playback keeps the main thread free', async ({
  page,
}) => {
  const checkConsole = watchConsole(page);
  await openFa2(page, 1024, 64);
  const s = page.getByRole('img', { name: /^S.* heatmap, 1024 by 1024/ });
  const p = page.getByRole('img', { name: /^P.* heatmap, 1024 by 1024/ });
  for (let i = 2; i <= 6; i++) {
    await page.getByRole('button', { name: 'Step forward', exact: true }).click();
    await expect(counter(page)).toHaveText(new RegExp(`^Step ${i} of`));
    // 1024 cells on ~256 pixels: one 64×64 tile is 16×16 pixels (17×17 at most with rounding), of 65 536.
    for (const h of [s, p]) expect(Number(await h.getAttribute('data-compared'))).toBeLessThanOrEqual(17 * 17);
  }
  // A 64-row tile puts the statistics rows in view (and a margin) in the DOM, not 64; scrolling brings the rest.
  const stats = page.getByRole('region', { name: 'Running statistics' });
  await expect(stats.locator('table')).toHaveAttribute('data-rows', '64');
  expect(await stats.locator('tr[data-row]').count()).toBeLessThan(32);
  await stats.locator('.stats-scroll').evaluate((e) => e.scrollTo(0, e.scrollHeight));
  await expect(page.getByTestId('m-63')).toBeVisible();
  await expect(page.getByTestId('m-0')).toHaveCount(0);
  // Max-speed playback: the share of the time spent in long tasks.
  await page.getByLabel('Speed').selectOption('0');
  const t0 = await page.evaluate(() => performance.now());
  await page.getByRole('button', { name: 'Play' }).click();
  await page.waitForTimeout(3_000);
  await page.getByRole('button', { name: 'Pause' }).click();
  const r = await page.evaluate((start) => {
    const ms = performance.now() - start;
    const tasks = (window as unknown as LongTasks).__long.filter((t) => t.start >= start);
    return { ms, busy: tasks.reduce((a, t) => a + t.duration, 0), count: tasks.length };
  }, t0);
  console.log(`long tasks during playback: ${r.count}, ${Math.round(r.busy)} ms of ${Math.round(r.ms)} ms`);
  // Loose on purpose: other work shares the two cores; a frozen page (over 9 s of every 10 s in long tasks) fails it.
  expect(r.busy / r.ms).toBeLessThan(0.9);
  checkConsole();
});

// Views whose DOM grew with the problem: the block mask drew an SVG rect per tile pair (29 584 at
// N 2748 with 16×16 tiles) and the statistics an SVG tree per row. Both are canvases now, and
// no main-thread task of playback or of a seek to the end may take longer than LONGTASK_BUDGET_MS.
// Default 250 ms: about twice the longest seek task CI's quiet 2-core machine measured (91–138 ms; BENCHMARKS.md).
test('65×65 tile pairs: the block mask and the sparklines are canvases, and playback has no task over the budget', async ({ page }) => {
  const checkConsole = watchConsole(page);
  const budget = Number(process.env.LONGTASK_BUDGET_MS ?? 250);
  await openFa2(page, 1040, 16);
  const mask = page.getByRole('region', { name: 'Block mask', exact: true });
  const grid = mask.getByRole('img', { name: 'Block mask: 65 Q tiles by 65 K/V tiles' });
  await expect(grid).toHaveAttribute('data-cells', '4225');
  expect(await grid.evaluate((e) => e.tagName)).toBe('CANVAS');
  await expect(mask.locator('rect')).toHaveCount(0);
  const stats = page.getByRole('region', { name: 'Running statistics' });
  await expect(stats.locator('canvas.spark')).toHaveCount(16);
  await expect(stats.locator('svg')).toHaveCount(0);
  await page.getByLabel('Speed').selectOption('0');
  const t0 = await page.evaluate(() => performance.now());
  await page.getByRole('button', { name: 'Play' }).click();
  await page.waitForTimeout(2_000);
  await page.getByRole('button', { name: 'Pause' }).click();
  const tasks = await page.evaluate(
    (start) => (window as unknown as LongTasks).__long.filter((t) => t.start >= start).map((t) => t.duration),
    t0,
  );
  console.log(`long tasks during 2 s of playback: ${tasks.length}, longest ${Math.round(Math.max(0, ...tasks))} ms (budget ${budget} ms)`);
  expect(Math.max(0, ...tasks)).toBeLessThan(budget);
  // A seek repaints the whole S image in slices of at most 65 536 pixels, each its own task, to the last row.
  const sMap = page.getByRole('img', { name: /^S.* heatmap, 1040 by 1040/ });
  const tSeek = await page.evaluate(() => performance.now());
  await page.keyboard.press('End');
  await expect(counter(page)).toHaveText(/^Step (\d+) of \1$/);
  await expect(sMap).toHaveAttribute('data-stale-rows', '0');
  expect(Number(await sMap.getAttribute('data-compared'))).toBeLessThanOrEqual(65_536);
  const seekTasks = await page.evaluate(
    (start) => (window as unknown as LongTasks).__long.filter((t) => t.start >= start).map((t) => t.duration),
    tSeek,
  );
  console.log(`long tasks of the seek to the end: ${seekTasks.length}, longest ${Math.round(Math.max(0, ...seekTasks))} ms`);
  expect(Math.max(0, ...seekTasks)).toBeLessThan(budget);
  // The sparklines kept up: the rows of the tile being worked on show points.
  await expect(stats.locator('canvas.spark[data-points="0"]')).not.toHaveCount(16);
  checkConsole();
});

test('a heatmap redrawn only where a step changed it shows the same pixels as one drawn whole at that step', async ({ page }) => {
  const checkConsole = watchConsole(page);
  await openApp(page);
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
  for (let i = 2; i <= 24; i++) {
    await page.getByRole('button', { name: 'Step forward', exact: true }).click();
    await expect(counter(page)).toHaveText(new RegExp(`^Step ${i} of`));
  }
  const pixels = () =>
    Promise.all(
      ['S', 'P'].map((m) =>
        page.getByRole('img', { name: new RegExp(`^${m}\\b.* heatmap, 64 by 64`) }).evaluate((c) => (c as HTMLCanvasElement).toDataURL()),
      ),
    );
  const stepped = await pixels();
  // The address holds the step once the link has caught up: a reload seeks there and draws every heatmap whole.
  const { decodeState } = await import('../app/share/url-state.ts');
  await expect.poll(() => decodeState(new URL(page.url()).hash, []).state.step).toBe(23);
  await page.reload();
  await expect(counter(page)).toHaveText(/^Step 24 of \d+$/);
  await expect.poll(pixels).toEqual(stepped);
  checkConsole();
});
