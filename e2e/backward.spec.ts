// The backward pass in the debugger: the Forward | Backward switch, stepping and seeking
// the backward with the same transport, its heatmaps, the dQ accumulation view, the live
// dS / dQ numbers, the backward breakpoints and the share link — each checked against
// the engine's own session run here in Node with the request the page sends.

import { expect, test, type Page } from './fixtures.ts';
import type { TraceEvent } from '../engine/trace/events.ts';
import { DEFAULT_FORM } from '../app/store/problem-form.ts';
import { decodeState, defaultSharedState, encodeState } from '../app/share/url-state.ts';
import { DEFAULT_VIEWS } from '../app/views/registry.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';
import { stepInWords } from '../app/panels/step-words.ts';
import { texNum } from '../content/tex.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const problem = (p: Page) => p.getByRole('region', { name: 'Problem' });
const BACKWARD = { pass: 'backward' as const };

/** Opens the app straight on a backward run at `step` (0-based) through a share link. */
async function openAt(page: Page, step: number, form = {}) {
  const s = defaultSharedState(DEFAULT_VIEWS);
  s.form = { ...DEFAULT_FORM, ...BACKWARD, ...form };
  s.step = step;
  await page.goto(`/${encodeState(s)}`);
}

test('Forward | Backward: the backward is stepped with the same transport and keys, and lands in the link', async ({ page }) => {
  const { s: fwd } = await engineSession();
  const { s } = await engineSession(BACKWARD);
  const ev = s.events();
  await openApp(page);
  await expect(counter(page)).toHaveText(`Step 1 of ${fwd.events().length}`);
  const radios = problem(page).getByRole('radiogroup', { name: 'Pass' });
  await expect(radios.getByRole('radio', { name: 'Forward' })).toHaveAttribute('aria-checked', 'true');
  await radios.getByRole('radio', { name: 'Backward' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 20_000 });
  await expect(radios.getByRole('radio', { name: 'Backward' })).toHaveAttribute('aria-checked', 'true');
  for (const m of ['dO', 'S', 'P', 'P fwd', 'dP', 'D', 'dS', 'dQ', 'dK', 'dV'])
    await expect(page.locator(`figure[data-matrix="${m}"]`)).toBeVisible();

  // Keys step the backward exactly like the forward.
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step 4 of ${ev.length}`);
  await expect(page.getByTestId('where')).toContainText(`${stepInWords(ev[3])}`);
  await expect(page.getByTestId('where')).toContainText(ev[3].line);
  await page.keyboard.press('ArrowLeft');
  await expect(counter(page)).toHaveText(`Step 3 of ${ev.length}`);
  await page.keyboard.press('End');
  await expect(counter(page)).toHaveText(`Step ${ev.length} of ${ev.length}`);
  await s.seek(2);
  const inner = s.targetOf(1, 'inner');
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Shift+ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${inner + 1} of ${ev.length}`);

  // The address bar carries the pass and the step: reloading it opens the same place.
  const linked = async () => decodeState(await page.evaluate(() => location.hash), DEFAULT_VIEWS).state;
  await expect.poll(async () => (await linked()).step).toBe(inner);
  expect((await linked()).form.pass).toBe('backward');
  await page.reload();
  await expect(counter(page)).toHaveText(`Step ${inner + 1} of ${ev.length}`, { timeout: 20_000 });
  await expect(problem(page).getByRole('radio', { name: 'Backward' })).toHaveAttribute('aria-checked', 'true');

  // Arrow keys on the switch move between the passes (and do not step).
  await problem(page).getByRole('radio', { name: 'Backward' }).focus();
  await page.keyboard.press('ArrowLeft');
  await expect(counter(page)).toHaveText(`Step 1 of ${fwd.events().length}`, { timeout: 20_000 });
  await expect(problem(page).getByRole('radio', { name: 'Forward' })).toBeFocused();
});

test('an atomic add into dQ: heatmaps, dQ accumulation and live numbers agree with the engine', async ({ page }) => {
  const { s, req } = await engineSession(BACKWARD);
  const ev = s.events();
  const k = ev.findIndex((e) => e.kind === 'dq' && e.collidesWith.length > 1 && e.tile.qBlock > 0);
  const e = ev[k] as Extract<TraceEvent, { kind: 'dq' }>;
  await openAt(page, k);
  await expect(counter(page)).toHaveText(`Step ${k + 1} of ${ev.length}`, { timeout: 20_000 });
  const { rows, cols, qBlock, kvBlock } = e.tile;
  await expect(page.locator('figure[data-matrix="dS"]')).toHaveAttribute('data-highlight', `${rows[0]},${rows[1]},${cols[0]},${cols[1]}`);
  await expect(page.locator('figure[data-matrix="dQ"]')).toContainText(`dQ (accumulating: + K/V block ${kvBlock})`);
  await expect(page.getByTestId('bwd-hint')).toContainText(
    `dQ rows ${rows[0]}–${rows[1] - 1} (orange bar) receive τ·dS·K from K/V column block ${kvBlock}`,
  );

  const view = page.getByRole('region', { name: 'dQ accumulation' });
  await expect(view.getByTestId('dq-now')).toContainText(
    `Worker ${kvBlock} (K/V block ${kvBlock}) adds τ·dS·K into dQ row block ${qBlock} (rows ${rows[0]}–${rows[1] - 1}) with an atomic add.`,
  );
  await expect(view.getByTestId('dq-now')).toContainText(
    `workers ${e.collidesWith.join(', ')} would add into the same rows at the same moment`,
  );
  await expect(view.locator('td[data-state="current"]')).toHaveCount(1);
  await expect(view.locator('td[data-state="together"]')).toHaveCount(e.collidesWith.length);
  // Every add before this one is a filled cell.
  const before = ev.filter((x) => x.kind === 'dq' && x.step < k && x.b === e.b && x.h === e.h).length;
  await expect(view.locator('td[data-state="done"]')).toHaveCount(before);

  // The formula panel: the dQ update with this row's numbers, ending in the engine's value.
  const formula = page.getByRole('region', { name: 'Formula' });
  const tail = `= ${texNum(e.dQ[0])}`;
  await expect(formula.getByLabel('One entry, continued')).toHaveAttribute(
    'data-tex',
    new RegExp(`${tail.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}$`),
  );

  // One step back is the dS of the same tile: dS = P (dP − D) for the largest entry of the row.
  await page.getByRole('button', { name: 'Step back', exact: true }).click();
  await expect(counter(page)).toHaveText(`Step ${k} of ${ev.length}`);
  expect(ev[k - 1].kind).toBe('ds');
  await expect(formula.getByLabel('One entry with live numbers')).toHaveAttribute(
    'data-tex',
    new RegExp(`^dS_\\{${rows[0]},\\d+\\} = [-\\d.]+ \\\\cdot \\\\big\\(`),
  );
  expect(req.pass).toBe('backward');
  await shot(page, { path: 'test-results/backward/dq-add.png', fullPage: true });
});

test('breakpoints on |dS| and on gradient NaN/Inf stop where the engine says', async ({ page }) => {
  const { s } = await engineSession(BACKWARD);
  const ev = s.events();
  const dss = ev.filter((e): e is Extract<TraceEvent, { kind: 'ds' }> => e.kind === 'ds');
  const big = Math.max(...dss.map((e) => Math.max(...e.dS.map(Math.abs))));
  const thr = Number((big * 0.7).toPrecision(3));
  const first = dss.find((e) => e.dS.some((x) => Math.abs(x) > thr))!;
  await openAt(page, 0);
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 20_000 });
  const panel = page.getByRole('region', { name: 'Breakpoints' });
  await panel.getByLabel('Breakpoint kind').selectOption('ds-above');
  await panel.getByLabel('Threshold').fill(String(thr));
  await panel.getByRole('button', { name: 'Add breakpoint' }).click();
  await expect(panel.getByRole('list', { name: 'Breakpoint list' })).toContainText(`|dS| above ${thr}`);
  await panel.getByRole('button', { name: 'Run to next breakpoint' }).click();
  await expect(counter(page)).toHaveText(`Step ${first.step + 1} of ${ev.length}`);
  await expect(page.getByTestId('breakpoint-hit')).toContainText(new RegExp(`\\|dS\\| above ${thr}: \\|dS\\[\\d+, \\d+\\]\\| = `));

  // Finite gradients everywhere: a NaN/Inf breakpoint runs to the end without stopping.
  await panel.getByRole('button', { name: `Remove breakpoint |dS| above ${thr}` }).click();
  await panel.getByLabel('Breakpoint kind').selectOption('grad-nonfinite');
  await panel.getByRole('button', { name: 'Add breakpoint' }).click();
  await panel.getByRole('button', { name: 'Run to next breakpoint' }).click();
  await expect(counter(page)).toHaveText(`Step ${ev.length} of ${ev.length}`);
  // A bad threshold is refused by name and the list keeps what it had.
  await panel.getByLabel('Breakpoint kind').selectOption('ds-above');
  await panel.getByLabel('Threshold').fill('-1');
  await panel.getByRole('button', { name: 'Add breakpoint' }).click();
  await expect(panel.getByRole('alert')).toHaveText('Threshold must be a number ≥ 0, got "-1"');
  await expect(panel.getByRole('list', { name: 'Breakpoint list' }).locator('li')).toHaveCount(1);
});

test('the switch is offered only where a backward exists, and a link asking for one elsewhere says so', async ({ page }) => {
  await openAt(page, 0, { algorithm: 'sage' });
  await expect(page.getByTestId('share-notice')).toContainText('problem.pass: pass: sage has no backward pass in FlashScope');
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
  await expect(problem(page).getByRole('radiogroup', { name: 'Pass' })).toHaveCount(0);
});
