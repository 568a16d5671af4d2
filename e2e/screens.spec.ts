// Lessons and Serving at a phone, a projector and a desktop: no sideways scroll, one column
// on the phone, the transport's buttons in one row, heatmaps at a readable size, the problem
// form inside its panel, and a clicked tile's numbers scrolled into view. Screenshots go to
// test-results/screens/ to be looked at.

import { expect, test, type Page } from './fixtures.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

const SIZES = [
  { width: 390, height: 844 },
  { width: 1280, height: 720 },
  { width: 1440, height: 900 },
];

async function noSidewaysScroll(page: Page) {
  const [scroll, inner] = await page.evaluate(() => [document.scrollingElement!.scrollWidth, window.innerWidth]);
  expect(scroll, 'page width').toBeLessThanOrEqual(inner);
}

async function equationsUncut(page: Page) {
  const cut = await page
    .locator('.lesson-math')
    .evaluateAll((els) => els.filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.getAttribute('data-tex')));
  expect(cut, 'equations wider than their box').toEqual([]);
}

/** Left, top, width of what a locator matches. */
const boxes = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return { left: r.left, top: Math.round(r.top), right: r.right, width: r.width, height: r.height };
    }),
  );

for (const size of SIZES) {
  test(`${size.width}×${size.height}: a lesson and the Serving page fit the screen`, async ({ page }) => {
    const checkConsole = watchConsole(page);
    await page.setViewportSize(size);
    const dir = `test-results/screens/${size.width}x${size.height}`;

    await page.goto('/?lesson=1');
    const pane = page.locator('[data-lesson-pane="lesson-1-0"]');
    await expect(pane.getByTestId('step-counter')).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
    await noSidewaysScroll(page);
    // The top bar keeps one row; on a phone the tools fold behind "More", which the keyboard opens.
    const bar = (await boxes(page, 'header.topbar button:visible')).filter((b) => b.width > 0);
    expect(new Set(bar.map((b) => Math.round(b.top / 8))).size, 'top bar rows').toBe(1);
    for (const b of bar) expect(b.right).toBeLessThanOrEqual(size.width);
    for (const tab of ['Lessons', 'Single', 'Compare', 'Serving'])
      await expect(page.getByRole('button', { name: tab, exact: true }).or(page.getByRole('tab', { name: tab }))).toBeVisible();
    if (size.width < 720) {
      const more = page.getByRole('button', { name: /^More/ });
      await more.focus();
      await page.keyboard.press('Enter');
      await expect(page.getByRole('button', { name: 'Share link', exact: true })).toBeVisible();
      await page.keyboard.press('Tab');
      await expect(page.getByRole('button', { name: 'Share link', exact: true })).toBeFocused();
      await page.keyboard.press('Escape');
      await expect(page.getByRole('button', { name: 'Share link', exact: true })).toBeHidden();
      await expect(more).toBeFocused();
    } else await expect(page.getByRole('button', { name: /^More/ })).toBeHidden();
    // The transport's seven buttons sit in one row.
    const buttons = await boxes(page, '[data-lesson-pane="lesson-1-0"] .transport .buttons button');
    expect(buttons).toHaveLength(7);
    expect(new Set(buttons.map((b) => b.top)).size).toBe(1);
    // On a phone only the buttons and the step counter stay on screen while the views scroll: one short row.
    if (size.width < 720) {
      const bar = page.locator('[data-lesson-pane="lesson-1-0"] .transport-bar');
      await expect(bar).toHaveCSS('position', 'sticky');
      const [b] = await boxes(page, '[data-lesson-pane="lesson-1-0"] .transport-bar');
      expect(b.height, 'sticky transport height').toBeLessThanOrEqual(48);
    }
    // Heatmaps at a readable size, inside the screen.
    const s = (await boxes(page, '[data-lesson-pane="lesson-1-0"] figure[data-matrix="S"] canvas'))[0];
    expect(s.width).toBeGreaterThanOrEqual(size.width < 720 ? 200 : 150);
    expect(s.right).toBeLessThanOrEqual(size.width);
    // Every equation stays inside its box; side-by-side equations wrap, so none is cut.
    for (const m of await boxes(page, '.lesson-math')) expect(m.right).toBeLessThanOrEqual(size.width);
    await equationsUncut(page);
    if (size.width < 720) {
      // One column: the views, the side views and the problem form share a left edge.
      const cols = await boxes(page, '[data-lesson-pane="lesson-1-0"] .pane > .center, [data-lesson-pane="lesson-1-0"] .pane > aside');
      expect(new Set(cols.map((c) => Math.round(c.left))).size).toBe(1);
    }
    await shot(page, { path: `${dir}/lesson-1.png`, fullPage: true });

    if (size.width < 720) {
      // A chapter with two panes stacks them on a phone, each heatmap still readable.
      await page.goto('/?lesson=6');
      const panes = [0, 1].map((k) => page.locator(`[data-lesson-pane="lesson-6-${k}"]`));
      for (const p of panes) await expect(p.getByTestId('step-counter')).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
      await noSidewaysScroll(page);
      await equationsUncut(page);
      const [first, second] = await Promise.all(panes.map((p) => p.evaluate((e) => e.getBoundingClientRect().toJSON())));
      expect(second.top, 'second pane below the first').toBeGreaterThanOrEqual(first.bottom - 1);
      for (const k of [0, 1]) {
        const [heat] = await boxes(page, `[data-lesson-pane="lesson-6-${k}"] figure[data-matrix="S"] canvas`);
        expect(heat.width, `pane ${k + 1} heatmap width`).toBeGreaterThanOrEqual(200);
        expect(heat.right).toBeLessThanOrEqual(size.width);
      }
      // The Running statistics table fits its box: no column scrolls out of sight.
      const stats = await page
        .locator('[aria-label="Running statistics"] .stats-scroll')
        .evaluateAll((els) => els.map((e) => e.scrollWidth - e.clientWidth));
      expect(stats.length).toBeGreaterThan(0);
      for (const over of stats) expect(over, 'stats table overflow').toBeLessThanOrEqual(1);
      // The hardware table: each configuration a card whose figures all show, none scrolled out of its box.
      const table = page.getByTestId('hw-table');
      await expect(table).toBeVisible({ timeout: 30_000 });
      const cells = await table.locator('td').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right));
      expect(cells.length).toBeGreaterThan(0);
      for (const right of cells) expect(right, 'hardware table cell').toBeLessThanOrEqual(size.width);
      await expect(table.locator('td.units').first()).toContainText(/tensor \d+/);
      expect(await table.evaluate((e) => e.scrollWidth - e.clientWidth), 'hardware table overflow').toBeLessThanOrEqual(1);
      await shot(page, { path: `${dir}/lesson-6.png`, fullPage: true });

      // The backward pass's heatmaps as large as the forward ones.
      await page.goto('/?lesson=10');
      const bwd = page.locator('[data-lesson-pane="lesson-10-0"]');
      await expect(bwd.getByTestId('step-counter')).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
      await noSidewaysScroll(page);
      for (const m of ['S', 'dS']) {
        const [heat] = await boxes(page, `[data-lesson-pane="lesson-10-0"] .bwd-heatmaps figure[data-matrix="${m}"] canvas`);
        expect(heat.width, `backward ${m} width`).toBeGreaterThanOrEqual(200);
        expect(heat.right).toBeLessThanOrEqual(size.width);
      }
      // What made the chapter long on a phone is folded: each pane's unchanging inputs, and the text's side road; the keyboard opens both.
      const inputs = bwd.locator('details.bwd-inputs > summary');
      await expect(inputs).toHaveText('Inputs: Q, Kᵀ, V, dO');
      await expect(bwd.locator('.bwd-heatmaps figure[data-matrix="Q"]')).toBeHidden();
      const side = page.locator('details.lesson-more > summary', { hasText: 'A third way' });
      await expect(page.getByText(/every term is added as the integer/)).toBeHidden();
      await expect(page.locator('[data-lesson-pane="lesson-10-1"] .bwd-heatmaps figure[data-matrix="dS"]')).toBeVisible({
        timeout: 30_000,
      });
      const height = await page.evaluate(() => document.scrollingElement!.scrollHeight);
      expect(height / size.height, 'chapter 10 in phone screens').toBeLessThanOrEqual(14);
      await inputs.focus();
      await page.keyboard.press('Enter');
      await expect(bwd.locator('.bwd-heatmaps figure[data-matrix="Q"]')).toBeVisible();
      await side.focus();
      await page.keyboard.press('Enter');
      await expect(page.getByText(/every term is added as the integer/)).toBeVisible();

      // FA4's memory map: the strip's labels would be a few pixels tall, so a line of text names its blocks.
      await page.goto('/?lesson=8');
      const fa4 = page.locator('[data-lesson-pane="lesson-8-0"]');
      await expect(fa4.getByTestId('step-counter')).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
      const list = fa4.getByTestId('smem-list').first();
      await expect(list).toBeVisible({ timeout: 30_000 });
      await expect(list).toContainText(/K\S* s\d \d/);
      expect(await list.evaluate((e) => Number.parseFloat(getComputedStyle(e).fontSize))).toBeGreaterThanOrEqual(12);
      await expect(fa4.locator('.hw-strip .hw-label').first()).toBeHidden();
      // The TMEM grid likewise: its labels give way to a line naming each block and its columns.
      const tmem = fa4.getByTestId('tmem-list').first();
      await expect(tmem).toBeVisible();
      await expect(tmem).toContainText(/[SPO]\d( \(K\/V \d+\))? cols \d+–\d+/);
      expect(await tmem.evaluate((e) => Number.parseFloat(getComputedStyle(e).fontSize))).toBeGreaterThanOrEqual(12);
      await expect(fa4.locator('.hw-tmem svg text').first()).toBeHidden();
      // The warp-role timeline draws its cycle axis and lane names in 12 px type on the phone's narrow chart.
      const timeline = fa4.getByTestId('timeline-canvas').first();
      await expect(timeline).toHaveAttribute('data-axis-font-px', '12');
      expect((await timeline.boundingBox())!.width).toBeLessThanOrEqual(size.width);
      await noSidewaysScroll(page);
      await shot(page, { path: `${dir}/lesson-8.png`, fullPage: true });
    }

    await page.getByRole('tab', { name: 'Serving' }).click();
    await expect(page.getByTestId('varlen-view')).toBeVisible({ timeout: 30_000 });
    await noSidewaysScroll(page);
    const [form] = await boxes(page, '.serving-side');
    const [view] = await boxes(page, '.serving-main');
    expect(view.right).toBeLessThanOrEqual(size.width);
    // Phone: the form over the views; wider: side by side.
    if (size.width < 720) expect(view.top).toBeGreaterThan(form.top);
    else expect(view.left).toBeGreaterThan(form.left);
    await shot(page, { path: `${dir}/serving.png`, fullPage: true });
    if (size.width < 720) {
      // A paged kernel without the page-by-page SMEM view names the tab the phone shows for its memory map.
      await page.getByRole('radio', { name: /Paged K\/V cache/ }).check();
      await page.getByRole('combobox', { name: 'Algorithm' }).selectOption('fa3');
      await page.getByRole('button', { name: 'Load problem' }).click();
      await expect(page.getByTestId('smem-view')).toContainText('in the Single tab', { timeout: 30_000 });
      await expect(page.getByRole('tab', { name: 'Single' })).toBeVisible();
      await expect(page.getByRole('button', { name: 'Debugger', exact: true })).toBeHidden();
      // The block table's page columns all fit its box: the last one is not cut at the right.
      const blockTable = page.getByRole('region', { name: 'Block table', exact: true });
      await expect(blockTable.getByRole('columnheader', { name: /^page \d+/ })).toHaveCount(3);
      expect(await blockTable.evaluate((e) => e.scrollWidth - e.clientWidth)).toBeLessThanOrEqual(0);
      await page.getByTestId('smem-view').scrollIntoViewIfNeeded();
      await shot(page, { path: `${dir}/serving-paged-fa3.png` });
    }
    checkConsole();
  });
}

test('1280×720: the Inputs fieldset stays in the problem panel and a clicked tile opens its numbers in view, in the debugger and in a lesson', async ({
  page,
}) => {
  const checkConsole = watchConsole(page);
  await page.setViewportSize({ width: 1280, height: 720 });
  await openApp(page);
  const [panel] = await boxes(page, 'section.panel.problem');
  for (const f of await boxes(page, 'section.panel.problem fieldset')) expect(f.right).toBeLessThanOrEqual(panel.right);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.getByRole('img', { name: /^S = τ·QKᵀ heatmap/ }).click({ position: { x: 3, y: 3 } });
  const zoom = page.getByRole('region', { name: 'Tile numbers' });
  await expect(zoom.getByRole('heading')).toHaveText('S tile (0, 0)');
  await expect(zoom.getByRole('heading')).toBeInViewport();
  await shot(page, { path: 'test-results/screens/1280x720/tile-numbers.png' });
  // A lesson's heatmaps say the same; the tile's numbers open there too, in view.
  await page.goto('/?lesson=1');
  const lesson = page.locator('[data-lesson-pane="lesson-1-0"]');
  await expect(lesson.getByTestId('step-counter')).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  await expect(lesson.getByRole('region', { name: 'Tile numbers' })).toHaveCount(0);
  // Before a click the view is empty: no export buttons of its own over the next view.
  await expect(lesson.getByRole('button', { name: 'Export Tile numbers as PNG' })).toBeHidden();
  await lesson.getByRole('img', { name: /^S = τ·QKᵀ heatmap/ }).click({ position: { x: 3, y: 3 } });
  const lessonZoom = lesson.getByRole('region', { name: 'Tile numbers' });
  await expect(lessonZoom.getByRole('heading')).toHaveText('S tile (0, 0)');
  await expect(lessonZoom.getByRole('heading')).toBeInViewport();
  await expect(lesson.getByRole('button', { name: 'Export Tile numbers as PNG' })).toBeVisible();
  // Chapter 7's side column: the Running statistics headers keep a gap between their words and the table fits its box.
  await page.goto('/?lesson=7');
  const stats = page.locator('[data-lesson-pane="lesson-7-0"] [aria-label="Running statistics"]');
  await expect(stats.locator('th').first()).toBeVisible({ timeout: 30_000 });
  const heads = await stats.locator('th').evaluateAll((els) =>
    els.map((e) => {
      const r = document.createRange();
      r.selectNodeContents(e);
      const b = r.getBoundingClientRect();
      return { text: e.textContent, left: b.left, right: b.right };
    }),
  );
  for (let i = 1; i < heads.length; i++)
    expect(heads[i].left - heads[i - 1].right, `${heads[i - 1].text} | ${heads[i].text}`).toBeGreaterThanOrEqual(4);
  expect(await stats.locator('.stats-scroll').evaluate((e) => e.scrollWidth - e.clientWidth), 'stats table overflow').toBeLessThanOrEqual(
    1,
  );
  await stats.scrollIntoViewIfNeeded();
  await shot(page, { path: 'test-results/screens/1280x720/lesson-7-stats.png' });
  checkConsole();
});
