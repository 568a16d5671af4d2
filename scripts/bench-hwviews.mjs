// bench:hwviews — are the hardware views responsive while the debugger steps as fast as it
// can? Builds the app, serves it with `vite preview` on PW_PORT (default 4173), opens it in
// Chromium and, in one run:
//   A. FA2 (no hardware views: the baseline),
//   B. FA4 with the warp-role timeline, memory map, HBM traffic and hardware notes,
// both on the same problem (B=1, H=2, Nq=256, Nk=1152, d=64, bf16, Br=Bc=8: FA4's trace
// has 55 488 events), playing at maximum speed for WINDOW_S seconds from the start and again across
// the head boundary (where the hardware views switch to another SM's schedule). Long tasks
// come from PerformanceObserver('longtask') (every task over 50 ms); steps/s from the step
// counter. Prints one table, with B's steps/s as a ratio to A's.

import { spawn, execSync } from 'node:child_process';
import { chromium } from '@playwright/test';

const port = Number(process.env.PW_PORT ?? 4173);
const WINDOW_S = Number(process.env.WINDOW_S ?? 10);
const base = `http://127.0.0.1:${port}`;

execSync('npx vite build --logLevel warn', { stdio: 'inherit' });
const server = spawn('npx', ['vite', 'preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'], { stdio: 'ignore', detached: true });
const stopServer = () => {
  try {
    process.kill(-server.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
};
process.on('exit', stopServer);

async function waitForServer() {
  for (let i = 0; i < 120; i++) {
    try {
      if ((await fetch(base)).ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`vite preview did not start on ${base}`);
}

// Many small heads: the heatmaps stay cheap (64×520 per head), so long tasks in the baseline
// are few and the hardware views' own cost is visible; every head is another CTA, so the
// hardware views switch to another SM's schedule every ~3 100 steps.
const PROBLEM = { Nq: '64', Nk: '520', d: '64', dv: '64', Hq: '16', Hk: '16', Br: '8', Bc: '8' };

async function scenario(browser, algorithm) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.addInitScript(() => {
    window.__long = [];
    window.__hw = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
    // The hardware views' own work (User Timing measures named flashscope:…).
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) if (e.name.startsWith('flashscope:')) window.__hw.push([e.name, e.duration]);
    }).observe({ type: 'measure', buffered: true });
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base);
  const counter = page.getByTestId('step-counter');
  await counter.filter({ hasText: /^Step 1 of/ }).waitFor({ timeout: 60_000 });
  const panel = page.getByRole('region', { name: 'Problem' });
  await panel.getByLabel('Algorithm').selectOption(algorithm);
  for (const [label, v] of Object.entries(PROBLEM)) await panel.getByLabel(label, { exact: true }).fill(v);
  await panel.getByLabel('dtype').selectOption('bf16');
  await panel.getByRole('button', { name: 'Load problem' }).click();
  await page.waitForFunction(() => Number(/^Step 1 of (\d+)$/.exec(document.querySelector('[data-testid="step-counter"]')?.textContent ?? '')?.[1] ?? 0) > 20000, null, { timeout: 300_000 });
  const total = Number((await counter.textContent()).split(' of ')[1]);
  const hw = (await page.getByRole('region', { name: 'Warp-role timeline' }).count()) > 0;
  if (hw) await page.getByTestId('timeline-canvas').and(page.locator('[data-ops]')).waitFor({ timeout: 60_000 });
  const ops = hw ? Number(await page.getByTestId('timeline-canvas').getAttribute('data-ops')) : 0;
  await page.getByLabel('Speed').selectOption('0');
  const stepNow = async () => Number((await counter.textContent()).replace(/^Step (\d+).*/, '$1'));
  const windows = [];
  for (const from of [0, Math.floor(total / 2) - 200]) {
    const scrubber = page.getByLabel('Scrubber');
    await scrubber.fill(String(from));
    await scrubber.press('Shift'); // the scrubber seeks on key-up
    await page.waitForTimeout(1500); // let the seek and any schedule rebuild settle
    await page.evaluate(() => {
      window.__long = [];
      window.__hw = [];
    });
    const s0 = await stepNow();
    const t0 = Date.now();
    await page.getByRole('button', { name: 'Play' }).click();
    await page.waitForTimeout(WINDOW_S * 1000);
    await page.getByRole('button', { name: 'Pause' }).click();
    const secs = (Date.now() - t0) / 1000;
    const s1 = await stepNow();
    const long = await page.evaluate(() => window.__long.slice());
    const hwm = await page.evaluate(() => window.__hw.slice());
    const status = hw ? await page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status').textContent() : '';
    windows.push({ from: s0, steps: s1 - s0, secs, long, hwm, status });
  }
  await page.close();
  return { algorithm, total, ops, windows, errors };
}

try {
  await waitForServer();
  const browser = await chromium.launch({ executablePath: process.env.FLASHSCOPE_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  const a = await scenario(browser, 'fa2');
  const b = await scenario(browser, 'fa4');
  await browser.close();
  const rate = (r) => r.windows.reduce((x, w) => x + w.steps, 0) / r.windows.reduce((x, w) => x + w.secs, 0);
  console.log(`bench:hwviews — ${WINDOW_S} s windows at maximum speed, Chromium headless`);
  console.log('| scenario | trace events | timeline ops | window from step | steps | steps/s | long tasks | longest (ms) |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of [a, b])
    for (const w of r.windows)
      console.log(
        `| ${r.algorithm}${r.ops ? ' + hardware views' : ' (baseline)'} | ${r.total} | ${r.ops || '—'} | ${w.from} | ${w.steps} | ${(w.steps / w.secs).toFixed(1)} | ${w.long.length} | ${w.long.length ? Math.max(...w.long).toFixed(0) : '—'} |`,
      );
  console.log(`steps/s with hardware views vs baseline: ${(rate(b) / rate(a)).toFixed(2)}×`);
  console.log('Hardware views\' own main-thread work during the fa4 windows (User Timing):');
  console.log('| measure | count | mean (ms) | max (ms) |');
  console.log('|---|---|---|---|');
  const by = new Map();
  for (const w of b.windows) for (const [n, d] of w.hwm) by.set(n, [...(by.get(n) ?? []), d]);
  for (const [n, ds] of [...by].sort()) console.log(`| ${n} | ${ds.length} | ${(ds.reduce((x, y) => x + y, 0) / ds.length).toFixed(2)} | ${Math.max(...ds).toFixed(2)} |`);
  for (const w of b.windows) console.log(`SM shown at the end of the window from step ${w.from}: ${w.status}`);
  for (const r of [a, b]) if (r.errors.length) console.log(`page errors (${r.algorithm}): ${r.errors.join('; ')}`);
} finally {
  stopServer();
}
