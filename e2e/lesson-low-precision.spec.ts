// Chapters 12 and 13 (low precision) in the browser: the FP8 formats widget driven by the
// keyboard and checked against the engine's rounding, the engine-computed tables matching what
// Node computes, questions answered, and the step links moving the debuggers to the steps the
// text names. Screenshots of each part for a person to look at.

import { expect, test, type Page } from './fixtures.ts';
import { chapterByNumber } from '../content/lessons/chapters/index.ts';
import { lessonContext, locateBlock, locateTarget, RunCache } from '../content/lessons/chapters/evaluate.ts';
import { fp8ErrorTable, flushTable } from '../content/lessons/chapters/low-precision.ts';
import { smoothingTable } from '../content/lessons/chapters/k-smoothing.ts';
import { precisionMarks } from '../engine/debugger/precision.ts';
import { encodeFp8, roundFp8 } from '../engine/lowprec/fp8.ts';
import { num } from '../app/views/tile-info.ts';
import { shot, watchConsole } from './helpers.ts';

test.use({ viewport: { width: 1280, height: 720 } });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const c = chapterByNumber(12)!;
const c13 = chapterByNumber(13)!;
const cache = new RunCache(20);
const paneOf = (page: Page, i: number, ch = 12) => page.locator(`[data-lesson-pane="lesson-${ch}-${i}"]`);
const counterOf = (page: Page, i: number, ch = 12) => paneOf(page, i, ch).getByTestId('step-counter');
const precisionOf = (page: Page, i: number, ch = 12) => paneOf(page, i, ch).getByRole('region', { name: 'Precision' });
const shown = (x: number) =>
  x === 0 ? '0' : Math.abs(x) >= 1e-3 && Math.abs(x) < 1e6 ? String(Number(x.toPrecision(6))) : x.toExponential(4);

test('chapter 12: the FP8 widget by keyboard, engine tables, a question and the step links; the incoherent-processing switch reloads the pane and the block question follows', async ({
  page,
}) => {
  // The widget, two tables, a question, two step links, the tile grid and a reload: more than one minute on a busy 2-core machine.
  test.setTimeout(120_000);
  await page.goto('/?lesson=12');
  await expect(page.getByRole('heading', { level: 2, name: c.title })).toBeVisible();
  for (let i = 0; i < c.panes.length; i++) {
    const t = locateTarget(c, i, c.panes[i].preset, cache);
    await expect(counterOf(page, i)).toHaveText(`Step ${t.step + 1} of ${t.total}`, { timeout: 30_000 });
  }

  // The widget, by keyboard only: type into the value box, then the slider's arrow keys and End/Home.
  const widget = page.getByRole('region', { name: 'FP8 formats: e4m3 and e5m2' });
  const box = widget.getByRole('textbox', { name: 'Value to round' });
  await box.focus();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.type('300');
  await expect(widget.getByTestId('fp8-e4m3-value')).toHaveText(shown(roundFp8('e4m3', 300)));
  await expect(widget.getByTestId('fp8-e5m2-value')).toHaveText(shown(roundFp8('e5m2', 300)));
  await expect(widget.getByTestId('fp8-e4m3-code')).toContainText(`0x${encodeFp8('e4m3', 300).toString(16)}`);
  await expect(widget.getByLabel('e4m3 bits: sign 0, exponent 1111, mantissa 001')).toBeVisible();
  await widget.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson12/widget-300.png' });

  await page.keyboard.press('Tab'); // to the slider
  await expect(widget.getByRole('slider', { name: 'Magnitude (log scale)' })).toBeFocused();
  await page.keyboard.press('ArrowRight');
  await expect(box).not.toHaveValue('300');
  const moved = Number(await box.inputValue());
  await expect(widget.getByTestId('fp8-e4m3-value')).toHaveText(shown(roundFp8('e4m3', moved)));
  await page.keyboard.press('End');
  await expect(widget.getByTestId('fp8-e4m3-value')).toHaveText('448');
  await expect(widget.getByTestId('fp8-e5m2-value')).toHaveText('57344');
  await expect(widget.getByTestId('fp8-e4m3-status')).toContainText('saturated');
  await page.keyboard.press('Home');
  await expect(widget.getByTestId('fp8-e5m2-value')).toHaveText('0');
  await expect(widget.getByTestId('fp8-e5m2-status')).toContainText('flushed to zero');
  // A subnormal from the preset buttons (reached with Tab and Enter).
  await widget.getByRole('button', { name: '2^-9' }).focus();
  await page.keyboard.press('Enter');
  await expect(widget.getByTestId('fp8-e4m3-status')).toContainText('subnormal');
  await expect(widget.getByLabel('e4m3 bits: sign 0, exponent 0000, mantissa 001')).toBeVisible();
  await shot(page, { path: 'test-results/lesson12/widget-subnormal.png' });
  // On a phone the number line shrinks to about half: its labels still read at 10 px or more.
  await page.setViewportSize({ width: 390, height: 844 });
  const labelPx = await widget.locator('svg.fp8-line text').evaluateAll((els) =>
    els.map((e) => {
      const svg = e.closest('svg')!;
      return (Number.parseFloat(getComputedStyle(e).fontSize) * svg.getBoundingClientRect().width) / svg.viewBox.baseVal.width;
    }),
  );
  expect(labelPx.length).toBeGreaterThan(4);
  for (const px of labelPx) expect(px, 'number-line label on a phone').toBeGreaterThanOrEqual(10);
  await widget.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson12/widget-390.png' });
  await page.setViewportSize({ width: 1440, height: 900 });
  // A bad value: a message, and the last good value stays shown.
  await box.fill('3OO');
  await expect(widget.getByTestId('fp8-error')).toContainText('is not a number');
  await expect(box).toHaveValue('3OO');
  await expect(widget.getByTestId('fp8-e4m3-value')).toHaveText(shown(2 ** -9));

  // The computed paragraphs show the engine's numbers.
  const errTable = page.getByRole('group', { name: 'output error against float64' });
  await expect(errTable).toBeVisible({ timeout: 30_000 });
  for (const r of fp8ErrorTable()) await expect(errTable.getByRole('row', { name: r.label })).toContainText(r.rmse.toExponential(2));
  await errTable.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson12/error-table.png' });
  await page.getByRole('group', { name: 'K block scales of the first pane' }).scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson12/scales.png' });

  // A question: the e4m3 value nearest 300.
  const card = page.getByTestId('question-e4m3-300');
  await card.getByRole('textbox').fill('320');
  await card.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-e4m3-300')).toContainText('Not quite.', { timeout: 30_000 });
  await card.getByRole('textbox').fill(String(roundFp8('e4m3', 300)));
  await card.getByRole('textbox').press('Enter');
  await expect(page.getByTestId('feedback-e4m3-300')).toContainText('Correct.');

  // The step links: each moves its pane to the step the engine finds.
  const links = c.blocks.map((b, i) => ({ b, i })).filter((x) => x.b.kind === 'goto');
  for (const { b, i } of links) {
    if (b.kind !== 'goto') continue;
    const t = locateBlock(c, i, c.panes[b.pane].preset, cache);
    await page.getByRole('button', { name: `▸ Show in the debugger: ${b.label}` }).click();
    await expect(counterOf(page, b.pane)).toHaveText(`Step ${t.step + 1} of ${t.total}`, { timeout: 30_000 });
  }

  // The outlier pane: focus its target tile in the Precision view's tile grid (keyboard), and
  // the detail lists the tile's scales; 1 / the K scale, rounded to e4m3, is the one-stored answer.
  const outRun = cache.get(c.panes[0].preset);
  const tgt0 = outRun.events[locateTarget(c, 0, c.panes[0].preset, cache).step];
  if (tgt0.kind !== 'qk') throw new Error('expected the qk target');
  await page.getByRole('button', { name: `▸ Show in the debugger: ${links[1].b.kind === 'goto' ? links[1].b.label : ''}` }).click();
  const prec0 = precisionOf(page, 0);
  await expect(prec0.getByTestId('precision-step')).toContainText(`K scale ${num(tgt0.kScale, 4)}`, { timeout: 30_000 });
  const tileBtn = prec0.locator(`button[data-tile="${tgt0.tile.qBlock},${tgt0.tile.kvBlock}"]`);
  await tileBtn.focus();
  const detail = prec0.getByTestId('tile-detail');
  await expect(detail).toContainText(`K scale${num(tgt0.kScale, 4)}`);
  await expect(detail).toContainText(`Q scale${num(tgt0.qScale, 4)}`);
  await detail.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson12/outlier-precision.png' });

  await page.evaluate(() => document.querySelector('.lesson-live')!.scrollIntoView({ block: 'start' }));
  await expect(page.locator('[data-lesson-pane] section.view.dim')).toHaveCount(0);
  await shot(page, { path: 'test-results/lesson12/debuggers.png' });
  await shot(page, { path: 'test-results/lesson12/full.png', fullPage: true });
  await page.getByRole('button', { name: 'Switch to light theme' }).click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await widget.getByRole('button', { name: '500' }).click();
  await widget.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson12/widget-light-500.png' });

  // Incoherent processing on: the pane reloads at the chapter's step and the block question follows.
  await page.getByRole('checkbox', { name: /Incoherent processing/ }).check();
  await expect(page.getByTestId('try-status')).toContainText('loaded', { timeout: 30_000 });
  const on = { ...c.panes[0].preset, features: { ...c.panes[0].preset.features, incoherent: true } };
  const tgt = locateTarget(c, 0, on, cache);
  await expect(counterOf(page, 0)).toHaveText(`Step ${tgt.step + 1} of ${tgt.total}`);
  const q = c.questions.find((x) => x.id === 'one-stored')!;
  const a = Number(q.answer(lessonContext(c, on, cache)));
  const storedCard = page.getByTestId('question-one-stored');
  await storedCard.getByRole('textbox').fill(String(a));
  await storedCard.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-one-stored')).toContainText('Correct.', { timeout: 30_000 });

  // Two-pane chapters hide the panes' problem forms; the form round trip of these FP8 presets is
  // app/lessons/request-form.test.ts. A wrong value is still rejected after the switch.
  await storedCard.getByRole('textbox').fill(String(a * 2));
  await storedCard.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-one-stored')).toContainText('Not quite.', { timeout: 30_000 });
});

test('chapter 13: the flush table, the sink pane at its flushing step, the INT8 table and the sage pane; the smoothing "try this" reloads only the sage pane', async ({
  page,
}) => {
  test.setTimeout(90_000);
  await page.goto('/?lesson=13');
  await expect(page.getByRole('heading', { level: 2, name: c13.title })).toBeVisible();
  for (let i = 0; i < c13.panes.length; i++) {
    const t = locateTarget(c13, i, c13.panes[i].preset, cache);
    await expect(counterOf(page, i, 13)).toHaveText(`Step ${t.step + 1} of ${t.total}`, { timeout: 30_000 });
  }
  const flushGroup = page.getByRole('group', { name: 'P values flushed by the cast' });
  await expect(flushGroup).toBeVisible({ timeout: 30_000 });
  const rows = flushTable((r) => cache.get(r));
  for (const r of rows) await expect(flushGroup.getByRole('row', { name: r.label })).toContainText(String(r.count.flushed));
  await flushGroup.evaluate((el) => el.scrollIntoView({ block: 'center' }));
  await shot(page, { path: 'test-results/lesson13/flush-table.png' });

  const links = c13.blocks.map((b, i) => ({ b, i })).filter((x) => x.b.kind === 'goto');
  for (const { b, i } of links) {
    if (b.kind !== 'goto') continue;
    const t = locateBlock(c13, i, c13.panes[b.pane].preset, cache);
    await page.getByRole('button', { name: `▸ Show in the debugger: ${b.label}` }).click();
    await expect(counterOf(page, b.pane, 13)).toHaveText(`Step ${t.step + 1} of ${t.total}`, { timeout: 30_000 });
  }
  // Back to the flush: the exp step whose cast flushed P values (the link after it is its P·V).
  const flushLink = links.find((x) => x.b.kind === 'goto' && x.b.pane === 0 && x.b.label.startsWith('the first exp step'))!;
  if (flushLink.b.kind !== 'goto') throw new Error('expected a step link');
  await page.getByRole('button', { name: `▸ Show in the debugger: ${flushLink.b.label}` }).click();
  const t = locateBlock(c13, flushLink.i, c13.panes[0].preset, cache);
  await expect(counterOf(page, 0, 13)).toHaveText(`Step ${t.step + 1} of ${t.total}`, { timeout: 30_000 });
  // What the sink pane's Precision view shows there: this tile's flushed count (the answer of
  // flush-step-count), ringed cells, and the whole run's count (the flush table's first row).
  const sinkRun = cache.get(c13.panes[0].preset);
  const marks = precisionMarks(c13.panes[0].preset.problem, sinkRun.events, 0, 0);
  const flushEv = sinkRun.events[t.step];
  const stepFlushed = flushEv.kind === 'exp' ? flushEv.flushed!.length : -1;
  const prec1 = precisionOf(page, 0, 13);
  await expect(prec1.getByTestId('precision-step')).toContainText(`flushed P ${stepFlushed}`, { timeout: 30_000 });
  await expect(prec1.getByTestId('flushed-total')).toHaveText(String(marks.flushed));
  await expect(prec1.getByTestId('flushed-head')).toHaveText(String(stepFlushed));
  expect(marks.flushed).toBe(rows[0].count.flushed);
  await prec1.getByRole('group', { name: 'Tiles of this head' }).scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson13/sink-precision.png' });
  const fc = c13.questions.find((q) => q.id === 'flush-step-count')!;
  await page.getByTestId('question-flush-step-count').getByRole('textbox').fill(String(stepFlushed));
  await page.getByTestId('question-flush-step-count').getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-flush-step-count')).toContainText('Correct.', { timeout: 30_000 });
  expect(Number(fc.answer(lessonContext(c13, c13.panes[0].preset, cache)))).toBe(stepFlushed);
  // The INT8 section: the engine's table, the smoothing question, and the sage pane at its S step
  // with the INT8 scales in its Precision view.
  const smooth = page.getByRole('group', { name: 'K smoothing on INT8 keys' });
  await expect(smooth).toBeVisible({ timeout: 30_000 });
  for (const r of smoothingTable()) await expect(smooth.getByRole('row', { name: r.label })).toContainText(r.rmse.toExponential(2));
  const sq = page.getByTestId('question-smoothk-factor');
  const factor = Number(c13.questions.find((q) => q.id === 'smoothk-factor')!.answer(lessonContext(c13, c13.panes[0].preset, cache)));
  await sq.getByRole('textbox').fill(String(1 / factor));
  await sq.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-smoothk-factor')).toContainText('Not quite.', { timeout: 30_000 });
  await sq.getByRole('textbox').fill(factor.toFixed(2));
  await sq.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-smoothk-factor')).toContainText('Correct.', { timeout: 30_000 });
  await smooth.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson13/smoothing.png' });
  // On a phone the tables' headers keep whole words (the table scrolls in its box instead).
  await page.setViewportSize({ width: 390, height: 844 });
  const broken = await page.locator('.live-table th').evaluateAll((ths) =>
    ths
      .filter((th) => {
        const st = getComputedStyle(th);
        const g = document.createElement('canvas').getContext('2d')!;
        g.font = `${st.fontWeight} ${st.fontSize} ${st.fontFamily}`;
        const longest = Math.max(...(th.textContent ?? '').split(/\s+/).map((w) => g.measureText(w).width));
        return th.clientWidth - Number.parseFloat(st.paddingLeft) - Number.parseFloat(st.paddingRight) + 0.5 < longest;
      })
      .map((th) => th.textContent),
  );
  expect(broken, 'table headers broken inside a word at 390').toEqual([]);
  await smooth.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/lesson13/smoothing-390.png' });
  await page.setViewportSize({ width: 1440, height: 900 });
  const sageRun = cache.get(c13.panes[1].preset);
  const sageAt = sageRun.events[locateTarget(c13, 1, c13.panes[1].preset, cache).step];
  if (sageAt.kind !== 'qk') throw new Error('expected the sage qk target');
  const prec2 = precisionOf(page, 1, 13);
  await expect(prec2.getByTestId('precision-step')).toContainText(`K scale ${num(sageAt.kScale, 4)}`, { timeout: 30_000 });
  await expect(prec2.getByTestId('precision-step')).toContainText(`Q scale ${num(sageAt.qScale, 4)}`);
  await paneOf(page, 1, 13).evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await shot(page, { path: 'test-results/lesson13/sage-pane.png' });
  await prec2.getByTestId('precision-step').evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await shot(page, { path: 'test-results/lesson13/sage-precision.png' });

  // Sage's "try this" reloads only the sage pane (smoothing on): its Precision view's K scale
  // is the smoothed K's, and the FP8 panes keep their problems.
  const smoothOn = c13.tryThis.find((x) => x.label === 'SageAttention with K smoothing')!;
  const before0 = await counterOf(page, 0, 13).textContent();
  await page.getByRole('button', { name: smoothOn.label }).click();
  await expect(page.getByTestId('try-status')).toContainText(`${smoothOn.label}: loaded`, { timeout: 30_000 });
  const sageOn = smoothOn.change(c13.panes[1].preset);
  const sageEv = cache.get(sageOn).events[locateTarget(c13, 1, sageOn, cache).step];
  if (sageEv.kind !== 'qk') throw new Error('expected the sage qk target');
  await expect(precisionOf(page, 1, 13).getByTestId('precision-step')).toContainText(`K scale ${num(sageEv.kScale, 4)}`, {
    timeout: 30_000,
  });
  await expect(counterOf(page, 0, 13)).toHaveText(before0!);
  await precisionOf(page, 1, 13)
    .getByTestId('precision-step')
    .evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await shot(page, { path: 'test-results/lesson13/sage-smoothing.png' });
});
