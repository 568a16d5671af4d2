// bench:hwviews — do the hardware views stay responsive while the debugger steps as fast as
// it can? Builds the app, serves it with `vite preview` on PW_PORT (default 4173), opens it
// in Chromium, loads FA4 on B=1, H=16, Nq=64, Nk=520, d=64, bf16, Br=Bc=8 (50 304 trace
// events) and plays at maximum speed in windows of WINDOW_S seconds, from the start and across a
// head boundary (where the hardware views switch to another SM's schedule), alternating
// between the warp-role timeline and memory map folded (the baseline: same page, same
// trace) and open. Long tasks come from PerformanceObserver('longtask') (every task over 50 ms), the
// views' own work from their User Timing measures (flashscope:…), steps/s from the step
// counter. Prints tables with the open/folded ratio measured in this one run.

import { spawn, execSync } from 'node:child_process';
import { loadavg } from 'node:os';
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
const PROBLEM_HEADS = 16;

async function run(browser) {
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
  await panel.getByLabel('Algorithm').selectOption('fa4');
  for (const [label, v] of Object.entries(PROBLEM)) await panel.getByLabel(label, { exact: true }).fill(v);
  await panel.getByLabel('dtype').selectOption('bf16');
  await panel.getByRole('button', { name: 'Load problem' }).click();
  await page.waitForFunction(() => Number(/^Step 1 of (\d+)$/.exec(document.querySelector('[data-testid="step-counter"]')?.textContent ?? '')?.[1] ?? 0) > 20000, null, { timeout: 300_000 });
  const total = Number((await counter.textContent()).split(' of ')[1]);
  const canvas = page.getByTestId('timeline-canvas');
  await canvas.and(page.locator('[data-ops]')).waitFor({ timeout: 60_000 });
  const ops = Number(await canvas.getAttribute('data-ops'));
  await page.getByLabel('Speed').selectOption('0');
  const stepNow = async () => Number((await counter.textContent()).replace(/^Step (\d+).*/, '$1'));
  const fold = async () => {
    await page.getByRole('button', { name: 'Hide warp-role timeline' }).click();
    await page.getByRole('button', { name: 'Hide memory map' }).click();
  };
  const unfold = async () => {
    await page.getByRole('button', { name: 'Show warp-role timeline' }).click();
    await page.getByRole('button', { name: 'Show memory map' }).click();
  };
  const windows = [];
  // Folded (the baseline) and open alternate, window by window, so a change in the load of
  // this shared machine hits both alike. Every head has the same number of steps: the
  // windows that start 30 steps before head 8 cross onto another CTA (another SM's
  // schedule for the hardware views).
  const headStart = (total / PROBLEM_HEADS) * 8 - 30;
  let isOpen = true;
  for (const [open, from] of [
    [false, 0],
    [true, 0],
    [false, headStart],
    [true, headStart],
    [true, 0],
    [false, 0],
    [true, headStart],
    [false, headStart],
  ]) {
    if (open !== isOpen) await (open ? unfold() : fold());
    isOpen = open;
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
    const status = open ? (await page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status').innerText()).replace(/\n/g, ' · ') : '';
    windows.push({ open, from: s0, steps: s1 - s0, secs, long, hwm, status });
  }
  await page.close();
  return { total, ops, windows, errors };
}

try {
  await waitForServer();
  const browser = await chromium.launch({ executablePath: process.env.FLASHSCOPE_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  const r = await run(browser);
  await browser.close();
  const rate = (ws) => ws.reduce((x, w) => x + w.steps, 0) / ws.reduce((x, w) => x + w.secs, 0);
  console.log(`bench:hwviews — FA4, ${r.total} trace events, one-SM timeline of ${r.ops} ops; ${WINDOW_S} s windows at maximum speed, Chromium headless`);
  console.log('| # | timeline + memory map | window from step | steps | steps/s | long tasks | longest (ms) |');
  console.log('|---|---|---|---|---|---|---|');
  r.windows.forEach((w, i) =>
    console.log(`| ${i + 1} | ${w.open ? 'open' : 'folded (baseline)'} | ${w.from} | ${w.steps} | ${(w.steps / w.secs).toFixed(1)} | ${w.long.length} | ${w.long.length ? Math.max(...w.long).toFixed(0) : '—'} |`),
  );
  const longs = (open) => r.windows.filter((w) => w.open === open).flatMap((w) => w.long);
  console.log(`long tasks: folded ${longs(false).length} (longest ${Math.max(0, ...longs(false)).toFixed(0)} ms), open ${longs(true).length} (longest ${Math.max(0, ...longs(true)).toFixed(0)} ms)`);
  console.log(`steps/s open vs folded: ${(rate(r.windows.filter((w) => w.open)) / rate(r.windows.filter((w) => !w.open))).toFixed(2)}×`);
  console.log("Hardware views' own main-thread work while open (User Timing):");
  console.log('| measure | count | median (ms) | p95 (ms) | max (ms) | over 50 ms |');
  console.log('|---|---|---|---|---|---|');
  const by = new Map();
  for (const w of r.windows.filter((x) => x.open)) for (const [n, d] of w.hwm) by.set(n, [...(by.get(n) ?? []), d]);
  const q = (ds, f) => [...ds].sort((x, y) => x - y)[Math.min(ds.length - 1, Math.floor(f * ds.length))];
  for (const [n, ds] of [...by].sort())
    console.log(`| ${n} | ${ds.length} | ${q(ds, 0.5).toFixed(2)} | ${q(ds, 0.95).toFixed(2)} | ${Math.max(...ds).toFixed(2)} | ${ds.filter((d) => d > 50).length} |`);
  console.log(`load average at the end (1/5/15 min): ${loadavg().map((x) => x.toFixed(2)).join(' / ')}`);
  for (const w of r.windows.filter((x) => x.open).slice(0, 2)) console.log(`SM shown at the end of the window from step ${w.from}: ${w.status}`);
  if (r.errors.length) console.log(`page errors: ${r.errors.join('; ')}`);
} finally {
  stopServer();
}
