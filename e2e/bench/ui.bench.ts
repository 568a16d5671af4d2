// UI benchmark: 10 s of playback at maximum speed on FA2 N = 256, d = 64.
// Reports main-thread long tasks (> 50 ms, goal 0), frames per second (goal >= 55) and the
// JS transferred before first paint, gzip-compressed (goal <= 250 KB).

import { expect, test } from '../fixtures.ts';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { cpus, loadavg } from 'node:os';

test('playback at max speed, FA2 N=256 d=64', async ({ page }) => {
  await page.addInitScript(() => {
    const w = window as unknown as { __longTasks: { start: number; duration: number }[]; __firstPaint: number };
    w.__longTasks = [];
    w.__firstPaint = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
    new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        if (e.name === 'first-paint' || (e.name === 'first-contentful-paint' && !w.__firstPaint)) w.__firstPaint = e.startTime;
    }).observe({ type: 'paint', buffered: true });
  });
  await page.goto('/');
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of/, { timeout: 30_000 });

  // JS fetched before first paint, measured as the gzip size of the very files served.
  const scripts = await page.evaluate(() => {
    const fp =
      (window as unknown as { __firstPaint: number }).__firstPaint || performance.getEntriesByType('paint')[0]?.startTime || Infinity;
    return {
      fp,
      files: performance
        .getEntriesByType('resource')
        .filter((e) => e.name.endsWith('.js') && e.startTime < fp)
        .map((e) => ({ url: new URL(e.name).pathname, transfer: (e as PerformanceResourceTiming).transferSize })),
    };
  });
  const files = scripts.files.map((f) => {
    const raw = readFileSync(`dist${f.url}`);
    return { ...f, raw: raw.length, gzip: gzipSync(raw, { level: 9 }).length };
  });
  const jsGzip = files.reduce((a, f) => a + f.gzip, 0);

  for (const [label, v] of [
    ['Nq', '256'],
    ['Nk', '256'],
    ['d', '64'],
    ['dv', '64'],
  ])
    await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel(label, { exact: true }).fill(v);
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of (\d+)$/, { timeout: 30_000 });
  const total = Number(/of (\d+)/.exec((await page.getByTestId('step-counter').textContent()) ?? '')![1]);
  await page.getByLabel('Speed').selectOption('0');

  const t0 = await page.evaluate(() => {
    const w = window as unknown as { __frames: number; __count: boolean; __longTasks: unknown[] };
    w.__longTasks.length = 0;
    w.__frames = 0;
    w.__count = true;
    const tick = () => {
      if (!w.__count) return;
      w.__frames++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    return performance.now();
  });
  await page.getByRole('button', { name: 'Play' }).click();
  await page.waitForTimeout(10_000);
  await page.getByRole('button', { name: 'Pause' }).click();
  const r = await page.evaluate((start) => {
    const w = window as unknown as { __frames: number; __count: boolean; __longTasks: { start: number; duration: number }[] };
    w.__count = false;
    const seconds = (performance.now() - start) / 1000;
    return { frames: w.__frames, seconds, longTasks: w.__longTasks.filter((t) => t.start >= start).map((t) => Math.round(t.duration)) };
  }, t0);
  const stepText = (await page.getByTestId('step-counter').textContent()) ?? '';
  const steps = Number(/Step (\d+)/.exec(stepText)![1]) - 1;
  const fps = r.frames / r.seconds;
  const result = {
    problem: 'FA2 N=256 d=64, blocks 16x16',
    totalSteps: total,
    playbackSeconds: Number(r.seconds.toFixed(2)),
    stepsPlayed: steps,
    stepsPerSecond: Number((steps / r.seconds).toFixed(1)),
    fps: Number(fps.toFixed(1)),
    longTasks: r.longTasks.length,
    longTaskMs: r.longTasks,
    firstPaintMs: Math.round(scripts.fp),
    jsBeforeFirstPaint: files,
    jsBeforeFirstPaintGzipKB: Number((jsGzip / 1024).toFixed(1)),
    // Timings on a shared machine mean little without the load they were taken under.
    machine: { cores: cpus().length, loadAverage1m: Number(loadavg()[0].toFixed(2)) },
  };
  mkdirSync('test-results', { recursive: true });
  writeFileSync('test-results/bench-ui.json', JSON.stringify(result, null, 2));
  console.log(
    `bench:ui ${result.problem}: ${result.stepsPlayed} steps in ${result.playbackSeconds} s (${result.stepsPerSecond} steps/s); ${result.machine.cores} cores, load average ${result.machine.loadAverage1m}`,
  );
  console.log(`  frames per second: ${result.fps} (goal >= 55; fps/goal = ${(fps / 55).toFixed(2)})`);
  console.log(`  long tasks > 50 ms on the main thread: ${result.longTasks} ${JSON.stringify(result.longTaskMs)} (goal 0)`);
  console.log(
    `  JS before first paint: ${result.jsBeforeFirstPaintGzipKB} KB gzip in ${files.length} file(s) (goal <= 250 KB; ratio ${(jsGzip / 1024 / 250).toFixed(2)})`,
  );
  expect(steps).toBeGreaterThan(0);
});
