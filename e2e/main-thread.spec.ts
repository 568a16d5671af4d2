// The main thread under load, on the largest problems the stepping budget allows (FA2, d 32,
// engine/core/size-model.ts): a step repaints only the tile it changed, and no main-thread task of
// max-speed playback or of a seek to the end takes 50 ms of CPU. Long tasks come from a longtask
// observer (wall time); Chromium's trace gives each one's CPU time, since on this shared 2-core
// machine a task's wall time also holds the time it waited for a core (BENCHMARKS.md).

import { expect, test, type Page } from './fixtures.ts';
import { counter, openApp, watchConsole } from './helpers.ts';
import { cpuOf, traceMainThread } from './main-thread-trace.ts';

type LongTasks = { __long: { start: number; duration: number }[] };

/** A main-thread task longer than this is one a person can feel (the longtask API's own threshold). */
const TASK_CPU_MS = 50;
/** Wall time no task may reach even on a loaded machine: a frozen page, not a slow core. */
const FROZEN_MS = 1000;

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

/**
 * Runs `act` under a trace and checks the main thread's tasks from its start: none over
 * TASK_CPU_MS of CPU, each long task the observer saw found in the trace (but one still running
 * when the trace ended), none frozen.
 */
async function checkTasks(page: Page, what: string, act: () => Promise<void>): Promise<void> {
  const trace = await traceMainThread(page);
  const since = await page.evaluate(() => performance.now());
  await act();
  const { tasks, until } = await trace.stop(since);
  const long = await page.evaluate((from) => (window as unknown as LongTasks).__long.filter((e) => e.start >= from), since);
  const seen = long.filter((e) => e.start + e.duration <= until).map((e) => ({ wall: Math.round(e.duration), cpu: cpuOf(tasks, e) }));
  const cpu = Math.max(0, ...tasks.map((t) => t.cpu));
  console.log(
    `${what}: ${tasks.length} main-thread tasks, longest ${cpu.toFixed(1)} ms of CPU; long tasks (wall, CPU ms): ` +
      (seen.map((e) => `${e.wall}/${e.cpu === undefined ? '?' : e.cpu.toFixed(1)}`).join(' ') || 'none'),
  );
  expect(tasks.length, 'the trace holds the main thread').toBeGreaterThan(10);
  expect(
    seen.filter((e) => e.cpu === undefined),
    'long tasks the trace does not hold',
  ).toEqual([]);
  expect(cpu, `${what}: the longest task's CPU time (ms)`).toBeLessThan(TASK_CPU_MS);
  expect(Math.max(0, ...long.map((e) => e.duration)), `${what}: the longest task's wall time (ms)`).toBeLessThan(FROZEN_MS);
}

/** Max-speed playback for `ms`, paused at the end. */
async function playFor(page: Page, ms: number): Promise<void> {
  await page.getByLabel('Speed').selectOption('0');
  await page.getByRole('button', { name: 'Play' }).click();
  await page.waitForTimeout(ms);
  await page.getByRole('button', { name: 'Pause' }).click();
}

test('N 2793 with 128×128 tiles: a step compares one tile of the S and P images, and max-speed playback has no task of 50 ms', async ({
  page,
}) => {
  const checkConsole = watchConsole(page);
  await openFa2(page, 2793, 128);
  const s = page.getByRole('img', { name: /^S.* heatmap, 2793 by 2793/ });
  const p = page.getByRole('img', { name: /^P.* heatmap, 2793 by 2793/ });
  for (let i = 2; i <= 4; i++) {
    await page.getByRole('button', { name: 'Step forward', exact: true }).click();
    await expect(counter(page)).toHaveText(new RegExp(`^Step ${i} of`));
    // 2793 cells on 698 pixels: the image holds every 5th, so a 128×128 tile is 26×26 image pixels (27×27 at most), of 312 481.
    for (const h of [s, p]) expect(Number(await h.getAttribute('data-compared'))).toBeLessThanOrEqual(27 * 27);
  }
  // A 128-row tile puts the statistics rows in view (and a margin) in the DOM, not 128; scrolling brings the rest.
  const stats = page.getByRole('region', { name: 'Running statistics' });
  await expect(stats.locator('table')).toHaveAttribute('data-rows', '128');
  expect(await stats.locator('tr[data-row]').count()).toBeLessThan(32);
  await stats.locator('.stats-scroll').evaluate((e) => e.scrollTo(0, e.scrollHeight));
  await expect(page.getByTestId('m-127')).toBeVisible();
  await expect(page.getByTestId('m-0')).toHaveCount(0);
  await checkTasks(page, '2 s of max-speed playback', () => playFor(page, 2_000));
  await expect(counter(page)).not.toHaveText(/^Step 4 of/);
  checkConsole();
});

// Views whose DOM would grow with the problem (an element per tile pair of the block mask, a
// tree per statistics row) are canvases. A seek to the end repaints every large heatmap
// whole: in slices of at most 65 536 image pixels, each its own task, so the bound on a seek is
// the same as on a step (no task of 50 ms of CPU) and the repaint reaches the last row.
test('N 2058 with 16×16 tiles: the block mask and the sparklines are canvases, and neither playback nor a seek to the end has a task of 50 ms', async ({
  page,
}) => {
  const checkConsole = watchConsole(page);
  await openFa2(page, 2058, 16);
  const mask = page.getByRole('region', { name: 'Block mask', exact: true });
  const grid = mask.getByRole('img', { name: 'Block mask: 129 Q tiles by 129 K/V tiles' });
  await expect(grid).toHaveAttribute('data-cells', String(129 * 129));
  expect(await grid.evaluate((e) => e.tagName)).toBe('CANVAS');
  await expect(mask.locator('rect')).toHaveCount(0);
  // A tap names a tile of the canvas too (no mask, so every one is full). The cells shrink to
  // the box's width, so the last tile lies inside the view and a tap reaches it.
  const cell = Number(await grid.getAttribute('data-cell'));
  expect(cell).toBeGreaterThanOrEqual(3);
  const [gridBox, maskBox] = [await grid.boundingBox(), await mask.boundingBox()];
  expect(gridBox && maskBox && gridBox.x + gridBox.width <= maskBox.x + maskBox.width).toBe(true);
  const tileLine = mask.getByTestId('bm-tile-line');
  await grid.click({ position: { x: 6 * cell + cell / 2, y: 5 * cell + cell / 2 } });
  await expect(tileLine).toHaveText('Q tile 5 × K/V tile 6: full (no mask work), 256 of 256 scores kept.');
  await grid.click({ position: { x: 128 * cell + cell / 2, y: 128 * cell + cell / 2 } });
  // N 2058 = 128 · 16 + 10: the last tile holds 10 × 10 scores.
  await expect(tileLine).toHaveText('Q tile 128 × K/V tile 128: full (no mask work), 100 of 100 scores kept.');
  const stats = page.getByRole('region', { name: 'Running statistics' });
  await expect(stats.locator('canvas.spark')).toHaveCount(16);
  await expect(stats.locator('svg')).toHaveCount(0);
  await checkTasks(page, '2 s of max-speed playback', () => playFor(page, 2_000));
  const sMap = page.getByRole('img', { name: /^S.* heatmap, 2058 by 2058/ });
  await checkTasks(page, 'the seek to the end', async () => {
    await page.keyboard.press('End');
    await expect(counter(page)).toHaveText(/^Step (\d+) of \1$/);
    await expect(sMap).toHaveAttribute('data-stale-rows', '0');
  });
  expect(Number(await sMap.getAttribute('data-compared'))).toBeLessThanOrEqual(65_536);
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
