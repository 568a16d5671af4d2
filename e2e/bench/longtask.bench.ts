// `npm run bench:longtask`: main-thread long tasks during 10 s of max-speed playback on the
// largest square problems the stepping budget allows at d 32 (FA2: N 2793 with 128×128 tiles,
// N 2058 with 16×16), all views open, then four seeks (End, Home, the scrubber's middle, the End
// button) each left to finish its sliced repaints. Reports long-task count, total and longest (wall
// time, from a longtask observer), the share of the wall time, and from Chromium's trace the main
// thread's CPU per step and its longest task's CPU, for the playback and for the seeks.

import { expect, test } from '../fixtures.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { cpuOf, traceMainThread } from '../main-thread-trace.ts';

const CASES = [
  { name: 'FA2 N 2793, 128×128 tiles', tile: '128', n: '2793' },
  { name: 'FA2 N 2058, 16×16 tiles', tile: '16', n: '2058' },
];

for (const c of CASES)
  test(`long tasks at max speed: ${c.name}`, async ({ page }) => {
    test.setTimeout(240_000);
    await page.addInitScript(() => {
      const w = window as unknown as { __longTasks: { start: number; duration: number }[] };
      w.__longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, duration: e.duration });
      }).observe({ type: 'longtask', buffered: true });
    });
    await page.goto('/');
    await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of/, { timeout: 30_000 });
    const problem = page.getByRole('region', { name: 'Problem', exact: true });
    await problem.getByLabel('Algorithm').selectOption('fa2');
    for (const [label, v] of [
      ['Nq', c.n],
      ['Nk', c.n],
      ['Br', c.tile],
      ['Bc', c.tile],
    ])
      await problem.getByLabel(label, { exact: true }).fill(v);
    const counter = page.getByTestId('step-counter');
    const before = new RegExp(`^${(await counter.textContent()) ?? ''}$`);
    await page.getByRole('button', { name: 'Load problem' }).click();
    // A refused load keeps the problem shown before and says why: the bench fails at once with the app's words.
    const loaded = counter.filter({ hasText: /^Step 1 of \d+$/ }).filter({ hasNotText: before });
    const refused = problem.getByRole('alert');
    await expect(loaded.or(refused).first()).toBeVisible({ timeout: 120_000 });
    if (await refused.isVisible()) throw new Error(`${c.name}: the app refused the load: ${await refused.textContent()}`);
    const total = Number(/of (\d+)/.exec((await page.getByTestId('step-counter').textContent()) ?? '')![1]);
    await page.getByLabel('Speed').selectOption('0');
    const playTrace = await traceMainThread(page);
    const t0 = await page.evaluate(() => performance.now());
    await page.getByRole('button', { name: 'Play' }).click();
    await page.waitForTimeout(10_000);
    await page.getByRole('button', { name: 'Pause' }).click();
    const r = await page.evaluate((start) => {
      const w = window as unknown as { __longTasks: { start: number; duration: number }[] };
      const seconds = (performance.now() - start) / 1000;
      const entries = w.__longTasks.filter((t) => t.start >= start);
      return { seconds, entries, tasks: entries.map((t) => Math.round(t.duration)) };
    }, t0);
    const { tasks: playTasks } = await playTrace.stop(t0);
    const steps = Number(/Step (\d+)/.exec((await page.getByTestId('step-counter').textContent()) ?? '')![1]) - 1;
    // Seeks: each waits for the counter to move and every heatmap's repaint to finish, then 0.4 s of quiet.
    const scrubber = page.getByLabel('Scrubber');
    const seeks: [string, () => Promise<void>][] = [
      ['End key', () => page.keyboard.press('End')],
      ['Home key', () => page.keyboard.press('Home')],
      [
        'scrubber 50 %',
        async () => {
          const b = (await scrubber.boundingBox())!;
          await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2);
        },
      ],
      ['End button', () => page.getByRole('button', { name: 'End', exact: true }).click()],
    ];
    const seekTrace = await traceMainThread(page);
    const tSeek = await page.evaluate(() => performance.now());
    for (const [, seek] of seeks) {
      const from = (await counter.textContent()) ?? '';
      await seek();
      await expect(counter).not.toHaveText(from, { timeout: 60_000 });
      await expect(page.locator('canvas[data-stale-rows]:not([data-stale-rows="0"])')).toHaveCount(0, { timeout: 60_000 });
      await page.waitForTimeout(400);
    }
    const seekTasks = await page.evaluate(
      (start) =>
        (window as unknown as { __longTasks: { start: number; duration: number }[] }).__longTasks
          .filter((t) => t.start >= start)
          .map((t) => Math.round(t.duration)),
      tSeek,
    );
    const { tasks: seekTraced } = await seekTrace.stop(tSeek);
    const sum = r.tasks.reduce((a, b) => a + b, 0);
    const cpuMs = (tasks: { cpu: number }[]) => tasks.reduce((a, t) => a + t.cpu, 0);
    const longestCpu = (tasks: { cpu: number }[]) => Number(Math.max(0, ...tasks.map((t) => t.cpu)).toFixed(1));
    const out = {
      case: c.name,
      date: new Date().toISOString(),
      machine: `${cpus().length}× ${cpus()[0]?.model ?? '?'}, load ${loadavg()[0].toFixed(2)}`,
      totalSteps: total,
      stepsPlayed: steps,
      seconds: Number(r.seconds.toFixed(2)),
      longTasks: r.tasks.length,
      longTaskMs: sum,
      longestMs: Math.max(0, ...r.tasks),
      longTaskShare: Number((sum / (r.seconds * 1000)).toFixed(3)),
      longTaskCpuMs: r.entries.map((e) => Number((cpuOf(playTasks, e) ?? Number.NaN).toFixed(1))),
      mainCpuPerStepMs: Number((cpuMs(playTasks) / Math.max(1, steps)).toFixed(2)),
      longestTaskCpuMs: longestCpu(playTasks),
      seeks: seeks.map(([name]) => name),
      seekLongTasks: seekTasks.length,
      seekLongestMs: Math.max(0, ...seekTasks),
      seekMainCpuMs: Math.round(cpuMs(seekTraced)),
      seekLongestTaskCpuMs: longestCpu(seekTraced),
    };
    console.log(JSON.stringify(out));
    mkdirSync('test-results', { recursive: true });
    writeFileSync(`test-results/longtask-${c.tile}.json`, JSON.stringify(out, null, 2));
  });
