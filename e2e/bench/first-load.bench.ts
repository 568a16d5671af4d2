// bench:first-load: how soon the debugger's first screen can be used. For RUNS fresh browser
// contexts (empty cache), the time from navigation start to the transport being usable (the
// step counter reads "Step 1 of N" and Step forward is enabled), and the JavaScript the page
// fetched by then (decoded bytes, from the Resource Timing entries). Prints every run and
// the median; the figures go into BENCHMARKS.md with the vite build's chunk sizes.

import { test } from '../fixtures.ts';

const RUNS = Number(process.env.RUNS ?? 7);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

test('first interactive: navigation to a usable transport on the default page', async ({ browser }) => {
  test.setTimeout(300_000);
  const times: number[] = [];
  const bytes: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto('/', { waitUntil: 'commit' });
    const t = await page.waitForFunction(
      () => {
        const c = document.querySelector('[data-testid="step-counter"]');
        const b = document.querySelector<HTMLButtonElement>('button[aria-label="Step forward"]');
        return c && /^Step 1 of \d+$/.test(c.textContent ?? '') && b && !b.disabled ? performance.now() : false;
      },
      null,
      { polling: 'raf', timeout: 60_000 },
    );
    times.push((await t.jsonValue()) as number);
    const js = await page.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .filter((e) => /\.js(\?|$)/.test(e.name) && !/worker/.test(e.name))
        .reduce((s, e) => s + (e as PerformanceResourceTiming).decodedBodySize, 0),
    );
    bytes.push(js);
    console.log(`run ${i + 1}: ${times[i].toFixed(0)} ms, main-thread JS fetched ${(js / 1000).toFixed(1)} kB`);
    await context.close();
  }
  console.log(
    `median over ${RUNS} runs: ${median(times).toFixed(0)} ms to a usable transport; ${(median(bytes) / 1000).toFixed(1)} kB of main-thread JS`,
  );
});
