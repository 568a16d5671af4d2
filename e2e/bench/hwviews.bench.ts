// bench:hwviews: do the hardware views stay responsive while the debugger steps
// as fast as it can? Loads FA4 on B=1, H=16, Nq=64, Nk=520, d=64, bf16, Br=Bc=8 (50 304
// trace events) and plays at maximum speed in windows of WINDOW_S seconds, from the start
// and across a head boundary (where the hardware views switch to another SM's schedule),
// alternating between the warp-role timeline and memory map folded (the baseline: same
// page, same trace) and open. Long tasks come from PerformanceObserver('longtask') (every
// task over 50 ms), the views' own work from their User Timing measures (flashscope:…),
// steps/s from the step counter. Prints tables with the open/folded ratio of this one run.

import { expect, test, type Page } from '../fixtures.ts';
import { loadavg } from 'node:os';

const WINDOW_S = Number(process.env.WINDOW_S ?? 10);
// Many small heads: the heatmaps stay cheap (64×520 per head), and every head is another
// CTA, so the hardware views switch to another SM's schedule every ~3 100 steps.
const PROBLEM = { Nq: '64', Nk: '520', d: '64', dv: '64', Hq: '16', Hk: '16', Br: '8', Bc: '8' };
const HEADS = 16;

interface Window {
  open: boolean;
  from: number;
  steps: number;
  secs: number;
  long: number[];
  hwm: [string, number][];
  status: string;
}
type Probe = { __long: number[]; __hw: [string, number][] };

async function toggle(page: Page, open: boolean): Promise<void> {
  const verb = open ? 'Show' : 'Hide';
  await page.getByRole('button', { name: `${verb} warp-role timeline` }).click();
  await page.getByRole('button', { name: `${verb} memory map` }).click();
}

test('hardware views at maximum stepping speed, FA4 with 50 304 trace events', async ({ page }) => {
  test.setTimeout(900_000);
  await page.addInitScript(() => {
    const w = window as unknown as Probe;
    w.__long = [];
    w.__hw = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) if (e.name.startsWith('flashscope:')) w.__hw.push([e.name, e.duration]);
    }).observe({ type: 'measure', buffered: true });
  });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  const counter = page.getByTestId('step-counter');
  await expect(counter).toHaveText(/^Step 1 of/, { timeout: 60_000 });
  const panel = page.getByRole('region', { name: 'Problem' });
  await panel.getByLabel('Algorithm').selectOption('fa4');
  for (const [label, v] of Object.entries(PROBLEM)) await panel.getByLabel(label, { exact: true }).fill(v);
  await panel.getByLabel('dtype').selectOption('bf16');
  await panel.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter).toHaveText(/^Step 1 of 5\d{4}$/, { timeout: 300_000 });
  const total = Number((await counter.textContent())!.split(' of ')[1]);
  const canvas = page.getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-ops', /\d+/, { timeout: 60_000 });
  const ops = Number(await canvas.getAttribute('data-ops'));
  await page.getByLabel('Speed').selectOption('0');
  const stepNow = async () => Number((await counter.textContent())!.replace(/^Step (\d+).*/, '$1'));

  // Folded and open alternate, so a change in the load of this shared machine hits both.
  const headStart = (total / HEADS) * 8 - 30;
  const plan: [boolean, number][] = [
    [false, 0],
    [true, 0],
    [false, headStart],
    [true, headStart],
    [true, 0],
    [false, 0],
    [true, headStart],
    [false, headStart],
  ];
  const windows: Window[] = [];
  let isOpen = true;
  for (const [open, from] of plan) {
    if (open !== isOpen) await toggle(page, open);
    isOpen = open;
    const scrubber = page.getByLabel('Scrubber');
    await scrubber.fill(String(from));
    await scrubber.press('Shift'); // the scrubber seeks on key-up
    await page.waitForTimeout(1500); // let the seek and any schedule rebuild settle
    await page.evaluate(() => {
      const w = window as unknown as Probe;
      w.__long = [];
      w.__hw = [];
    });
    const s0 = await stepNow();
    const t0 = Date.now();
    await page.getByRole('button', { name: 'Play' }).click();
    await page.waitForTimeout(WINDOW_S * 1000);
    await page.getByRole('button', { name: 'Pause' }).click();
    const secs = (Date.now() - t0) / 1000;
    const s1 = await stepNow();
    const { long, hwm } = await page.evaluate(() => {
      const w = window as unknown as Probe;
      return { long: w.__long.slice(), hwm: w.__hw.slice() };
    });
    const status = open
      ? // biome-ignore lint/performance/useDomNodeTextContent: innerText keeps the line breaks between the status's parts, which become the separators
        (await page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status').innerText()).replace(/\n/g, ' · ')
      : '';
    windows.push({ open, from: s0, steps: s1 - s0, secs, long, hwm, status });
  }

  const rate = (ws: Window[]) => ws.reduce((x, w) => x + w.steps, 0) / ws.reduce((x, w) => x + w.secs, 0);
  const out: string[] = [];
  out.push(`bench:hwviews — FA4, ${total} trace events, one-SM timeline of ${ops} ops; ${WINDOW_S} s windows at maximum speed`);
  out.push(
    '| # | timeline + memory map | window from step | steps | steps/s | long tasks | longest (ms) |',
    '|---|---|---|---|---|---|---|',
  );
  windows.forEach((w, i) =>
    out.push(
      `| ${i + 1} | ${w.open ? 'open' : 'folded (baseline)'} | ${w.from} | ${w.steps} | ${(w.steps / w.secs).toFixed(1)} | ${w.long.length} | ${w.long.length ? Math.max(...w.long).toFixed(0) : '—'} |`,
    ),
  );
  const longs = (open: boolean) => windows.filter((w) => w.open === open).flatMap((w) => w.long);
  out.push(
    `long tasks: folded ${longs(false).length} (longest ${Math.max(0, ...longs(false)).toFixed(0)} ms), open ${longs(true).length} (longest ${Math.max(0, ...longs(true)).toFixed(0)} ms)`,
  );
  out.push(`steps/s open vs folded: ${(rate(windows.filter((w) => w.open)) / rate(windows.filter((w) => !w.open))).toFixed(2)}×`);
  out.push(
    "Hardware views' own main-thread work while open (User Timing):",
    '| measure | count | median (ms) | p95 (ms) | max (ms) | over 50 ms |',
    '|---|---|---|---|---|---|',
  );
  const by = new Map<string, number[]>();
  for (const w of windows.filter((x) => x.open)) for (const [n, d] of w.hwm) by.set(n, [...(by.get(n) ?? []), d]);
  const q = (ds: number[], f: number) => [...ds].sort((x, y) => x - y)[Math.min(ds.length - 1, Math.floor(f * ds.length))];
  for (const [n, ds] of [...by].sort())
    out.push(
      `| ${n} | ${ds.length} | ${q(ds, 0.5).toFixed(2)} | ${q(ds, 0.95).toFixed(2)} | ${Math.max(...ds).toFixed(2)} | ${ds.filter((d) => d > 50).length} |`,
    );
  out.push(
    `load average at the end (1/5/15 min): ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
  for (const w of windows.filter((x) => x.open).slice(0, 2)) out.push(`SM shown at the end of the window from step ${w.from}: ${w.status}`);
  console.log(out.join('\n'));
  expect(errors).toEqual([]);
  // The views did draw the SM of the second head window (another CTA than the first).
  expect(windows.find((w) => w.open && w.from > 1000)?.status).toMatch(/CTA 9 of 16/);
});
