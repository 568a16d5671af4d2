import { expect, test, type Page } from './fixtures.ts';
import type { TraceEvent } from '../engine/trace/events.ts';
import { counter, engineSession, openApp, shot, shown, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

/** How many of a canvas’s mostly opaque pixels are closest to each of the given colours. */
async function strokeCounts(page: Page, selector: string, colours: Record<string, [number, number, number]>) {
  return page.locator(selector).evaluate((c, cols) => {
    const canvas = c as HTMLCanvasElement;
    const d = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    const out: Record<string, number> = Object.fromEntries(Object.keys(cols).map((k) => [k, 0]));
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] < 128) continue;
      const near = Object.entries(cols).find(([, [r, g, b]]) => Math.abs(d[i] - r) + Math.abs(d[i + 1] - g) + Math.abs(d[i + 2] - b) < 24);
      if (near) out[near[0]]++;
    }
    return out;
  }, colours);
}

test('stepping forward and back shows the engine trace: counter, highlighted tile, m values; a crashed worker is reported, restarted, and the position is restored', async ({
  page,
}) => {
  const { s } = await engineSession();
  const ev = s.events();
  await openApp(page);
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`);

  // Walk to the second rowmax event (a K/V block after the first, so m already had a value).
  const target = ev.findIndex((e, i) => e.kind === 'rowmax' && ev.slice(0, i).some((x) => x.kind === 'rowmax'));
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < target; i++) await fwd.click();
  await expect(counter(page)).toHaveText(`Step ${target + 1} of ${ev.length}`);
  const e = ev[target] as Extract<TraceEvent, { kind: 'rowmax' }>;
  await expect(page.getByTestId('where')).toHaveText(
    `Running max m of rows ${e.tile.rows[0]}–${e.tile.rows[1] - 1} over K block ${e.tile.kvBlock} · ${e.line}`,
  );
  const { rows, cols } = e.tile;
  await expect(page.locator('figure[data-matrix="S"]')).toHaveAttribute('data-highlight', `${rows[0]},${rows[1]},${cols[0]},${cols[1]}`);
  for (const r of [0, 3, rows[1] - rows[0] - 1]) await expect(page.getByTestId(`m-${rows[0] + r}`)).toHaveText(shown(e.mAfter[r]));
  await expect(page.locator('ol.code li.current')).toContainText('m_new = max(m_old, rowmax(S_ij))');

  // One step back: the previous event's state (m not yet updated by this block).
  await page.getByRole('button', { name: 'Step back', exact: true }).click();
  await expect(counter(page)).toHaveText(`Step ${target} of ${ev.length}`);
  for (const r of [0, 3]) await expect(page.getByTestId(`m-${rows[0] + r}`)).toHaveText(shown(e.mBefore[r]));

  // Iteration buttons land where the engine says an iteration starts.
  await page.getByRole('button', { name: 'Next iteration' }).click();
  const pos = target - 1;
  const innerKey = (x: TraceEvent) => `${x.b},${x.h},${x.outer},${x.inner}`;
  let expectStep = pos + 1;
  while (expectStep < ev.length && innerKey(ev[expectStep]) === innerKey(ev[pos])) expectStep++;
  await expect(counter(page)).toHaveText(`Step ${expectStep + 1} of ${ev.length}`);
  await page.getByRole('button', { name: 'Previous iteration' }).click();
  let prevStart = expectStep - 1;
  while (prevStart > 0 && innerKey(ev[prevStart - 1]) === innerKey(ev[expectStep - 1])) prevStart--;
  await expect(counter(page)).toHaveText(`Step ${prevStart + 1} of ${ev.length}`);

  await page.getByRole('button', { name: 'Reset' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`);

  // A crash in the worker: reported, the worker restarted at the step it was on.
  for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step 11 of ${ev.length}`);
  const worker = page.workers().find((w) => w.url().includes('debugger'));
  expect(worker).toBeTruthy();
  await worker!.evaluate(() => {
    setTimeout(() => {
      throw new Error('injected failure');
    }, 0);
  });
  await expect(page.getByRole('alert')).toContainText('The debugger worker crashed');
  await expect(page.getByRole('alert')).toContainText('injected failure');
  await expect(page.getByText('Worker restarted; restored step 11')).toBeVisible();
  await expect(counter(page)).toHaveText(`Step 11 of ${ev.length}`);
  await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step 12 of ${ev.length}`);
  await page.getByRole('button', { name: 'Dismiss' }).click();
  await expect(page.getByRole('alert')).toHaveCount(0);
});

test('keyboard: arrows, Shift+arrows, Home/End and Space; switching the theme redraws the sparklines in the new theme’s colours without a step', async ({
  page,
}) => {
  const { s } = await engineSession();
  const total = s.events().length;
  await openApp(page);
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step 4 of ${total}`);
  await page.keyboard.press('ArrowLeft');
  await expect(counter(page)).toHaveText(`Step 3 of ${total}`);
  await s.seek(2);
  const inner = s.targetOf(1, 'inner');
  await page.keyboard.press('Shift+ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${inner + 1} of ${total}`);
  await page.keyboard.press('End');
  await expect(counter(page)).toHaveText(`Step ${total} of ${total}`);
  await page.keyboard.press('Home');
  await expect(counter(page)).toHaveText(`Step 1 of ${total}`);
  await page.keyboard.press('Space');
  await expect(page.getByRole('button', { name: 'Pause' })).toBeVisible();
  await expect(counter(page)).not.toHaveText(`Step 1 of ${total}`);
  await page.keyboard.press('Space');
  await expect(page.getByRole('button', { name: 'Play' })).toBeVisible();
  const text = await counter(page).textContent();
  expect(Number(/Step (\d+)/.exec(text ?? '')![1])).toBeGreaterThan(1);
  await page.keyboard.press('Home');
  await expect(counter(page)).toHaveText(`Step 1 of ${total}`);

  // The theme: the sparklines redraw in the new colours without a step. A line needs two K/V blocks visited.
  for (let i = 0; i < 20; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step 21 of ${total}`);
  const spark = '[aria-label="Running statistics"] canvas.spark:not([data-points="0"]):not([data-points="1"]) >> nth=0';
  const accents = { dark: [0x4f, 0xb3, 0xff] as [number, number, number], light: [0x09, 0x69, 0xda] as [number, number, number] };
  const before = await strokeCounts(page, spark, accents);
  expect(before.dark).toBeGreaterThan(0);
  await page.getByRole('button', { name: 'Switch to light theme' }).click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await expect.poll(() => strokeCounts(page, spark, accents)).toMatchObject({ dark: 0 });
  expect((await strokeCounts(page, spark, accents)).light).toBeGreaterThan(0);
  await expect(counter(page)).toHaveText(`Step 21 of ${total}`);
  await page.getByRole('button', { name: 'Switch to dark theme' }).click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  for (let i = 0; i < 20; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step 41 of ${total}`);
  await shot(page, { path: 'test-results/debugger.png' });
});

test('breakpoints stop where the engine says, in a run and during playback', async ({ page }) => {
  const { s } = await engineSession();
  const ev = s.events();
  await openApp(page);
  await page.getByLabel('Q block i').fill('2');
  await page.getByLabel('K/V block j').fill('1');
  await page.getByRole('button', { name: 'Add breakpoint' }).click();
  await expect(page.getByRole('checkbox', { name: 'Tile (2, 1)' })).toBeChecked();
  const tileStep = ev.findIndex((e) => e.tile.qBlock === 2 && e.tile.kvBlock === 1);
  await page.getByRole('button', { name: 'Run to next breakpoint' }).click();
  await expect(counter(page)).toHaveText(`Step ${tileStep + 1} of ${ev.length}`);
  await expect(page.getByTestId('breakpoint-hit')).toContainText('Tile (2, 1)');

  // Disable it, add a phase breakpoint on normalize, play at full speed from the start.
  await page.getByRole('checkbox', { name: 'Tile (2, 1)' }).uncheck();
  await page.getByLabel('Breakpoint kind').selectOption('phase');
  await page.getByLabel('Phase kind').selectOption('normalize');
  await page.getByRole('button', { name: 'Add breakpoint' }).click();
  await page.getByRole('button', { name: 'Reset' }).click();
  await page.getByLabel('Speed').selectOption('0');
  await page.getByRole('button', { name: 'Play' }).click();
  const norm = ev.findIndex((e) => e.kind === 'normalize');
  await expect(counter(page)).toHaveText(`Step ${norm + 1} of ${ev.length}`);
  await expect(page.getByRole('button', { name: 'Play' })).toBeVisible();
  await expect(page.getByTestId('breakpoint-hit')).toContainText('Phase normalize');

  // A rescale in row 37: the first K/V block after which row 37's max moved.
  await page.getByRole('button', { name: 'Remove breakpoint Phase normalize' }).click();
  await page.getByLabel('Breakpoint kind').selectOption('rescale-row');
  await page.getByLabel('Row r').fill('37');
  await page.getByRole('button', { name: 'Add breakpoint' }).click();
  await page.getByRole('button', { name: 'Reset' }).click();
  await page.getByRole('button', { name: 'Run to next breakpoint' }).click();
  const resc = ev.findIndex(
    (e) => e.kind === 'rescale' && e.tile.rows[0] <= 37 && e.tile.rows[1] > 37 && e.factor[37 - e.tile.rows[0]] !== 1,
  );
  await expect(counter(page)).toHaveText(`Step ${resc + 1} of ${ev.length}`);
  await expect(page.getByTestId('breakpoint-hit')).toContainText('row 37 rescaled');
});

test('problem panel: bad input keeps the run, large problems get a suggestion and a counters-only run', async ({ page }) => {
  const { s } = await engineSession();
  await openApp(page);
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq').fill('6x');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByRole('alert')).toContainText('nq: must be a whole number');
  await expect(counter(page)).toHaveText(`Step 2 of ${s.events().length}`);
  await expect(page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq')).toHaveValue('6x');

  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Hk').fill('3');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq').fill('64');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByRole('alert')).toContainText('hk: query heads (1) must be a multiple of key/value heads (3)');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Hk').fill('1');

  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq').fill('8192');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nk', { exact: true }).fill('8192');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByText('too large to step through')).toBeVisible();
  await expect(page.getByText('WebGPU backend')).toBeVisible();
  await expect(counter(page)).toHaveText(`Step 2 of ${s.events().length}`);

  // A counters-only run of a mid-size problem (fast enough for a test), then cancel a big one.
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq').fill('256');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nk', { exact: true }).fill('256');
  await page.getByRole('button', { name: 'Run counters only' }).click();
  await expect(page.getByLabel('Counters-only result')).toContainText('finished in');
  await expect(page.getByLabel('Counters-only result')).toContainText('row rescales');

  // A long load reports progress and can be cancelled; the loaded run stays.
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq').fill('1024');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nk', { exact: true }).fill('1024');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByRole('progressbar', { name: 'Progress' })).toBeVisible();
  await page.getByRole('region', { name: 'Problem', exact: true }).getByRole('button', { name: 'Cancel' }).click();
  await expect(page.getByText('Loading cancelled; the previous run is still loaded.')).toBeVisible();
  await expect(counter(page)).toHaveText(`Step 2 of ${s.events().length}`);

  // A causal problem loads with masked cells and a new total.
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nq').fill('48');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Nk', { exact: true }).fill('48');
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Causal').check();
  await page.getByRole('button', { name: 'Load problem' }).click();
  const causal = await engineSession({ nq: '48', nk: '48', causal: true });
  await expect(counter(page)).toHaveText(`Step 1 of ${causal.s.events().length}`);
  const maskStep = causal.s.events().findIndex((e) => e.kind === 'mask');
  await page.getByLabel('Breakpoint kind').selectOption('phase');
  await page.getByLabel('Phase kind').selectOption('mask');
  await page.getByRole('button', { name: 'Add breakpoint' }).click();
  await page.getByRole('button', { name: 'Run to next breakpoint' }).click();
  await expect(counter(page)).toHaveText(`Step ${maskStep + 1} of ${causal.s.events().length}`);
});

test('tile zoom shows the tile numbers and the formula panel the live values', async ({ page }) => {
  const { s } = await engineSession();
  const ev = s.events();
  await openApp(page);
  const qk = ev.findIndex((e) => e.kind === 'qk');
  for (let i = 0; i < qk; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${qk + 1} of ${ev.length}`);
  const e = ev[qk] as Extract<TraceEvent, { kind: 'qk' }>;
  const canvas = page.getByRole('img', { name: /^S = τ·QKᵀ heatmap/ });
  await canvas.hover({ position: { x: 3, y: 3 } });
  await expect(page.getByRole('tooltip')).toContainText(`S[0, 0] = ${Number(e.s[0].toPrecision(6))}`);
  await canvas.click({ position: { x: 3, y: 3 } });
  const zoom = page.getByRole('region', { name: 'Tile numbers' });
  await expect(zoom.getByRole('heading')).toHaveText('S tile (0, 0)');
  await expect(zoom.locator('tbody tr').first().locator('td').first()).toHaveText(String(Number(e.s[0].toPrecision(4))));
  await expect(zoom.locator('tbody tr').first().locator('td').nth(5)).toHaveText(String(Number(e.s[5].toPrecision(4))));
  await page.getByRole('button', { name: 'Close tile' }).click();
  await expect(zoom).toHaveCount(0);

  // Go to a rowsum step of the second K/V block: the formula shows ℓ_old and ℓ_new.
  const rs = ev.findIndex((x) => x.kind === 'rowsum' && x.tile.kvBlock === 1);
  await page.getByLabel('Scrubber').fill(String(rs));
  await page.getByLabel('Scrubber').dispatchEvent('pointerup');
  await expect(counter(page)).toHaveText(`Step ${rs + 1} of ${ev.length}`);
  const r = ev[rs] as Extract<TraceEvent, { kind: 'rowsum' }>;
  const row = r.tile.rows[0] + 2;
  await page.getByRole('button', { name: `Select row ${row}` }).click();
  const formula = page.getByRole('region', { name: 'Formula' });
  await expect(formula.locator('.katex').first()).toBeVisible();
  await expect(formula.getByLabel('Update with live numbers')).toHaveAttribute(
    'data-tex',
    new RegExp(`l_\\{${row}\\} = .*${Number(r.lAfter[2].toPrecision(5))}`),
  );
});

test('FA1 shows its HBM-resident m and ℓ; standard attention steps through its three passes', async ({ page }) => {
  const fa1 = await engineSession({ algorithm: 'fa1' });
  const ev = fa1.s.events();
  await openApp(page);
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Algorithm').selectOption('fa1');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`);
  await expect(page.getByRole('region', { name: 'HBM-resident m and ℓ' })).toBeVisible();
  const write = ev.findIndex((e, i) => e.kind === 'write' && i > 20);
  await page.getByLabel('Scrubber').fill(String(write));
  await page.getByLabel('Scrubber').dispatchEvent('pointerup');
  await expect(counter(page)).toHaveText(`Step ${write + 1} of ${ev.length}`);
  await expect(page.locator('ol.code li.current')).toContainText('write O_i, ℓ_i ← ℓ_new, m_i ← m_new to HBM');
  await expect(page.getByText('O (HBM-resident, rewritten)')).toBeVisible();
  await shot(page, { path: 'test-results/fa1.png' });

  const std = await engineSession({ algorithm: 'standard' });
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('Algorithm').selectOption('standard');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${std.s.events().length}`);
  await expect(page.getByRole('region', { name: 'HBM-resident m and ℓ' })).toHaveCount(0);
  const norm = std.s.events().findIndex((e) => e.kind === 'normalize');
  await page.getByLabel('Scrubber').fill(String(norm));
  await page.getByLabel('Scrubber').dispatchEvent('pointerup');
  await expect(page.locator('ol.code li.current')).toContainText('P_i ← diag(ℓ_i)⁻¹ P_i');
  // P is coloured on the normalized P's range, not on exp(S − m)'s (which reaches 1)
  const pMax = Math.max(...std.s.events().flatMap((e) => (e.kind === 'normalize' && e.p ? e.p.filter(Number.isFinite) : [])));
  expect(pMax).toBeLessThan(0.9);
  await expect(page.locator(`[aria-label="P colour legend from 0.00 to ${pMax.toPrecision(3)}"]`)).toBeVisible();
  await expect(page.getByText('P is coloured on the normalized P’s range')).toBeVisible();
  await shot(page, { path: 'test-results/standard.png' });
});

test('an attention sink loads and the final l includes it; loading another seed shows the new inputs', async ({ page }) => {
  const { randomInputs } = await import('../engine/core/inputs.ts');
  const { s } = await engineSession({ sink: '1.5' });
  const ev = s.events();
  const norm = ev.findIndex((e) => e.kind === 'normalize') as number;
  const e = ev[norm] as Extract<TraceEvent, { kind: 'normalize' }>;
  await openApp(page);
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('sink').fill('1.5');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`);
  await page.getByLabel('Scrubber').fill(String(norm));
  await page.getByLabel('Scrubber').dispatchEvent('pointerup');
  await expect(counter(page)).toHaveText(`Step ${norm + 1} of ${ev.length}`);
  await expect(page.getByTestId(`l-${e.tile.rows[0]}`)).toHaveText(shown(e.l[0]));

  // The sink leaves the inputs alone: Q is seed 1's until another seed is loaded.
  const q = page.getByRole('img', { name: /^Q heatmap/ });
  await q.hover({ position: { x: 1, y: 1 } });
  const { req } = await engineSession();
  const first = randomInputs(req.problem, { seed: 1 }).q[0];
  await expect(page.getByRole('tooltip')).toContainText(`Q[0, 0] = ${Number(first.toPrecision(6))}`);
  await page.getByRole('region', { name: 'Problem', exact: true }).getByLabel('seed').fill('2');
  await page.getByRole('button', { name: 'Load problem' }).click();
  const second = randomInputs(req.problem, { seed: 2 }).q[0];
  await q.hover({ position: { x: 2, y: 1 } });
  await q.hover({ position: { x: 1, y: 1 } });
  await expect(page.getByRole('tooltip')).toContainText(`Q[0, 0] = ${Number(second.toPrecision(6))}`);
});
