// The guided lessons at projector size: one walk opens every chapter in order with its
// debugger at the step the text names (computed here from the engine), takes one right and one
// wrong answer with the feedback a student would see, and runs axe on it in both themes (the
// walk a student takes with Next chapter, so one page load serves every chapter).

import { expect, test, type Locator, type Page } from './fixtures.ts';
import { CHAPTERS, chapterByNumber } from '../content/lessons/chapters/index.ts';
import { lessonContext, locateTarget, RunCache } from '../content/lessons/chapters/evaluate.ts';
import { onlineSoftmaxSteps } from '../content/lessons/chapters/online-softmax.ts';
import { fa1IoSweep, standardIoBytes } from '../content/lessons/chapters/io-sweep.ts';
import { bothThemes } from './axe-audit.ts';
import { shot, watchConsole } from './helpers.ts';

test.use({ viewport: { width: 1280, height: 720 } });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const cache = new RunCache(30);
const paneOf = (page: Page, chapter: number, i = 0) => page.locator(`[data-lesson-pane="lesson-${chapter}-${i}"]`);
const counterOf = (page: Page, chapter: number, i = 0) => paneOf(page, chapter, i).getByTestId('step-counter');

/** Text up to its first formula: what the page shows verbatim. */
const beforeMaths = (text: string) => text.split('$')[0];
/** Feedback shows its maths typeset like the chapter text, never as raw $…$. */
async function expectTypeset(feedback: Locator, source: string) {
  await expect(feedback).not.toContainText('$');
  if (source.includes('$')) await expect(feedback.locator('.katex').first()).toBeVisible();
}

test(`the lesson list, then chapters 1 to ${CHAPTERS.length} by Next chapter: each opens at its step with its boxes and sources, checks a right and a wrong answer, and passes axe in both themes`, async ({
  page,
}) => {
  test.setTimeout(300_000);
  await page.goto('/?lesson');
  await expect(page.getByRole('link', { name: new RegExp(CHAPTERS[0].title) }).first()).toBeVisible();
  await bothThemes(page, 'lesson list');
  // The kinds of view (their class names) inside the lesson panes that a whole axe pass has checked.
  const viewsChecked = new Set<string>();
  for (const chapter of CHAPTERS) {
    if (chapter === CHAPTERS[0])
      await page
        .getByRole('link', { name: new RegExp(chapter.title) })
        .first()
        .click();
    else
      await page
        .getByRole('button', { name: `Next chapter: ${chapter.number}. ${chapter.title}` })
        .first()
        .click();
    await expect(page.getByRole('heading', { level: 2, name: chapter.title })).toBeVisible({ timeout: 20_000 });

    // Every embedded debugger stands at the step the chapter names, as the engine computes it.
    for (let i = 0; i < chapter.panes.length; i++) {
      const t = locateTarget(chapter, i, chapter.panes[i].preset, cache);
      await expect(counterOf(page, chapter.number, i)).toHaveText(`Step ${t.step + 1} of ${t.total}`, { timeout: 30_000 });
      await expect(page.getByTestId(`lesson-target-${i}`)).toContainText(
        `step ${t.step + 1} of ${t.total}: ${chapter.panes[i].target.describe}`,
      );
    }
    await expect(page).toHaveURL(new RegExp(`lesson=${chapter.number}&step=\\d+`));
    // Paper-vs-code boxes and errata of published listings are shown as such (chapters 4, 5, 7).
    const codeWins = chapter.blocks.filter((b) => b.kind === 'code-wins').length;
    await expect(page.getByRole('complementary', { name: 'Paper and code' })).toHaveCount(codeWins);
    if (codeWins > 0) await expect(page.getByRole('complementary', { name: 'Paper and code' }).first()).toContainText('Paper vs code');
    // Citations sit in the chapter's sources footer, not in the running text.
    await expect(page.getByRole('region', { name: 'Sources' })).toContainText(chapter.sources[0].slice(0, 20));
    await expect(page.locator('.erratum-tag', { hasText: 'Erratum' })).toHaveCount(
      chapter.blocks.filter((b) => b.kind === 'erratum').length,
    );

    // One question right: the value the engine gives for the preset.
    const ctx = lessonContext(chapter, chapter.panes[0].preset, cache);
    const [q1, q2] = chapter.questions;
    const a1 = q1.answer(ctx);
    const card1 = page.getByTestId(`question-${q1.id}`);
    if (q1.kind === 'choice') await card1.getByRole('radio', { name: q1.choices!.find((c) => c.id === a1)!.label }).check();
    else await card1.getByRole('textbox').fill(String(a1));
    await card1.getByRole('button', { name: 'Check' }).click();
    const fb1 = page.getByTestId(`feedback-${q1.id}`);
    await expect(fb1).toContainText('Correct.', { timeout: 30_000 });
    const explanation = q1.explain(ctx, a1);
    await expect(fb1).toContainText(beforeMaths(explanation).slice(0, 30));
    await expectTypeset(fb1, explanation);
    await expect(card1).toContainText('✓ solved');

    // One question wrong: a hint, no answer, and the offer to show it.
    const a2 = q2.answer(ctx);
    const card2 = page.getByTestId(`question-${q2.id}`);
    if (q2.kind === 'choice') await card2.getByRole('radio', { name: q2.choices!.find((c) => c.id !== a2)!.label }).check();
    else await card2.getByRole('textbox').fill(String(Number(a2) + Math.max(1, Math.abs(Number(a2)))));
    await card2.getByRole('button', { name: 'Check' }).click();
    const fb2 = page.getByTestId(`feedback-${q2.id}`);
    await expect(fb2).toContainText('Not quite.', { timeout: 30_000 });
    await expect(fb2).toContainText(beforeMaths(q2.hint).slice(0, 30));
    await expectTypeset(fb2, q2.hint);
    await expect(fb2).not.toContainText(String(a2));
    await expect(card2.getByRole('button', { name: 'Show answer' })).toBeVisible();

    // Screenshots: the text, then the live debugger, in the theme shown; the whole page in the other.
    const theme = await page.evaluate(() => document.documentElement.dataset.theme);
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, { path: `test-results/lessons/ch${chapter.number}-${theme}-top.png` });
    await page.evaluate(() => document.querySelector('.lesson-live')!.scrollIntoView({ block: 'start' }));
    await shot(page, { path: `test-results/lessons/ch${chapter.number}-${theme}-live.png` });

    // axe with the feedback shown. Lazily loaded views show a placeholder section first: list
    // (and check) the views themselves.
    await expect(page.locator('[data-lesson-pane] section.view.dim')).toHaveCount(0, { timeout: 20_000 });
    const views = await page
      .locator('[data-lesson-pane] .view')
      .evaluateAll((els) => els.map((e) => [...e.classList].filter((k) => k !== 'view').join('.')));
    const unseen = views.filter((v) => !viewsChecked.has(v));
    for (const v of views) viewsChecked.add(v);
    console.log(
      `[axe chapter ${chapter.number}] panes: ${unseen.length ? `checked whole for ${unseen.join(', ')}` : 'views checked before'}`,
    );
    // Checked whole in this theme, then switched (the toggle asserted) and checked for contrast.
    await bothThemes(page, `chapter ${chapter.number}`, unseen.length === 0);
    const other = await page.evaluate(() => document.documentElement.dataset.theme);
    await shot(page, { path: `test-results/lessons/ch${chapter.number}-${other}-full.png`, fullPage: true });
  }
});

test('contents, next/previous, remembered progress and the top bar entry', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('button', { name: 'Lessons' }).click();
  await expect(page).toHaveURL(/\?lesson$/);
  await expect(page.getByRole('heading', { name: /Lessons: from standard attention to FA4/ })).toBeVisible();
  await expect(page.getByTestId('toc-3')).toContainText('not opened yet');
  await page.getByRole('link', { name: /3\s+One-pass attention/ }).click();
  await expect(page).toHaveURL(/lesson=3/);
  await expect(page.getByRole('heading', { level: 2, name: chapterByNumber(3)!.title })).toBeVisible();
  await page
    .getByRole('button', { name: /^Next chapter/ })
    .first()
    .click();
  await expect(page.getByRole('heading', { level: 2, name: chapterByNumber(4)!.title })).toBeVisible();
  await page
    .getByRole('button', { name: /^Previous chapter/ })
    .first()
    .click();
  await expect(page.getByRole('heading', { level: 2, name: chapterByNumber(3)!.title })).toBeVisible();

  // Answer chapter 3's second question right, then reload the contents: progress is kept.
  const c3 = chapterByNumber(3)!;
  const q = c3.questions[1];
  const a = q.answer(lessonContext(c3, c3.panes[0].preset, cache));
  await expect(counterOf(page, 3)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  await page.getByTestId(`question-${q.id}`).getByRole('textbox').fill(String(a));
  await page.getByTestId(`question-${q.id}`).getByRole('textbox').press('Enter');
  await expect(page.getByTestId(`feedback-${q.id}`)).toContainText('Correct.');
  await page.goto('/?lesson');
  await expect(page.getByTestId('toc-progress-3')).toHaveText(`1 of ${c3.questions.length} answered`);
  await expect(page.getByTestId('toc-progress-4')).toHaveText(`0 of ${chapterByNumber(4)!.questions.length} answered`);
  await expect(page.getByRole('button', { name: /Continue with chapter 3/ })).toBeVisible();
  await shot(page, { path: 'test-results/lessons/contents-dark.png' });
  await page.getByRole('button', { name: 'Debugger' }).click();
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
});

test('deep link to a step, the URL follows stepping, the keyboard steps the lesson debugger', async ({ page }) => {
  await page.goto('/?lesson=4&step=37');
  const total = locateTarget(chapterByNumber(4)!, 0, chapterByNumber(4)!.panes[0].preset, cache).total;
  await expect(counterOf(page, 4)).toHaveText(`Step 37 of ${total}`, { timeout: 30_000 });
  await page.locator('.chapter-head h2').click();
  await page.keyboard.press('ArrowRight');
  await expect(counterOf(page, 4)).toHaveText(`Step 38 of ${total}`);
  await expect(page).toHaveURL(/lesson=4&step=38/);
  // "Go to that step" returns to the chapter's own step.
  const t = locateTarget(chapterByNumber(4)!, 0, chapterByNumber(4)!.panes[0].preset, cache);
  await page.getByRole('button', { name: 'Go to that step' }).click();
  await expect(counterOf(page, 4)).toHaveText(`Step ${t.step + 1} of ${total}`);
  // The IO sweep table is the engine's counters.
  await expect(page.getByTestId('io-table')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('io-row-4096')).toBeVisible();
  const sweep = fa1IoSweep();
  for (const pt of sweep)
    await expect(page.getByTestId(`io-bytes-${pt.sramBytes}`)).toHaveText(pt.hbmBytes.toLocaleString('en-US').replace(/,/g, ' '));
  await expect(page.getByTestId('io-standard')).toContainText(standardIoBytes().toLocaleString('en-US').replace(/,/g, ' '));
});

test('a kernel switch reloads the debugger and the questions follow the new problem', async ({ page }) => {
  const c7 = chapterByNumber(7)!;
  await page.goto('/?lesson=7');
  await expect(counterOf(page, 7)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  await expect(page.getByTestId('hw-table')).toBeVisible({ timeout: 30_000 });
  await page.getByRole('checkbox', { name: /Ping-pong between warpgroups/ }).uncheck();
  await expect(page.getByTestId('try-status')).toContainText('loaded', { timeout: 30_000 });
  const off = { ...c7.panes[0].preset, features: { pingpong: false } };
  const t = locateTarget(c7, 0, off, cache);
  await expect(counterOf(page, 7)).toHaveText(`Step ${t.step + 1} of ${t.total}`);
  const card = page.getByTestId('question-turn-after-softmax');
  await card.getByRole('textbox').fill('0');
  await card.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-turn-after-softmax')).toContainText('Not quite.');
  await card.getByRole('textbox').fill('1');
  await card.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-turn-after-softmax')).toContainText('Correct.');
  await expect(page.getByTestId('feedback-turn-after-softmax')).toContainText('ping-pong off');
  // Reloading the problem from the pane's form keeps the switch (the form has none of its own).
  await page.getByRole('region', { name: 'Problem', exact: true }).getByRole('button', { name: 'Load problem' }).click();
  await expect(counterOf(page, 7)).toHaveText(`Step 1 of ${t.total}`, { timeout: 30_000 });
  await expect(page.getByRole('checkbox', { name: /Ping-pong between warpgroups/ })).not.toBeChecked();
  // The kernel's own notes fold out under the debugger.
  await page.getByText('FlashAttention-3: switches and support').click();
  await expect(page.locator('.kernel-ref')).toContainText('pingpong');
});

test("a switch that removes the chapter's step: the caption names the step shown instead", async ({ page }) => {
  const c9 = chapterByNumber(9)!;
  await page.goto('/?lesson=9');
  await expect(counterOf(page, 9)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  // At the combine the statistics view holds the merged LSE and each split's weight, not the last split's m and ℓ.
  const combine = cache.get(c9.panes[0].preset).events.find((e) => e.kind === 'combine')!;
  if (combine.kind !== 'combine') throw new Error('chapter 9 has a combine step');
  const stats = paneOf(page, 9).getByRole('region', { name: 'Running statistics' });
  await expect(stats.getByRole('heading')).toHaveText(
    `Combine — Q tile 0 (row 0): ${combine.splitLse[0].length} splits merged by their LSE`,
  );
  await expect(stats.getByRole('row').nth(1)).toContainText(Number(combine.lse[0].toPrecision(5)).toString());
  // The write after it keeps the merged rows and names the splits they came from.
  await paneOf(page, 9).getByRole('button', { name: 'Step forward' }).click();
  await expect(stats.getByRole('heading')).toHaveText(
    `Write O and LSE — Q tile 0 (row 0): the ${combine.splitLse[0].length} splits merged`,
  );
  await expect(stats.getByRole('row').nth(1)).toContainText(Number(combine.lse[0].toPrecision(5)).toString());
  await page.getByRole('checkbox', { name: /Split K\/V/ }).uncheck();
  await expect(page.getByTestId('try-status')).toContainText('loaded', { timeout: 30_000 });
  const t = locateTarget(c9, 0, { ...c9.panes[0].preset, features: { splits: 1 } }, cache);
  expect(t.exact).toBe(false);
  await expect(counterOf(page, 9)).toHaveText(`Step ${t.step + 1} of ${t.total}`);
  await expect(page.getByTestId('lesson-target-0')).toContainText(
    `In this problem, the nearest to the text is step ${t.step + 1} of ${t.total}: ${t.describe}`,
  );
  // With one split, the lightest split's LSE is the merged one: the questions follow the switch.
  const one = { ...c9.panes[0].preset, features: { splits: 1 } };
  const q = c9.questions.find((x) => x.id === 'split-lse')!;
  const card = page.getByTestId('question-split-lse');
  await card.getByRole('textbox').fill(String(q.answer(lessonContext(c9, one, cache))));
  await card.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-split-lse')).toContainText('Correct.');
  await expect(page.getByTestId('feedback-split-lse')).toContainText('One split');
});

test('try this changes the problem; bad answers get a message, not a verdict; unknown chapters are explained', async ({ page }) => {
  const c1 = chapterByNumber(1)!;
  await page.goto('/?lesson=1');
  await expect(counterOf(page, 1)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
  await page.getByRole('button', { name: 'Double N to 64' }).click();
  await expect(page.getByTestId('try-status')).toContainText('loaded', { timeout: 30_000 });
  const doubled = c1.tryThis[0].change(c1.panes[0].preset);
  const t = locateTarget(c1, 0, doubled, cache);
  await expect(counterOf(page, 1)).toHaveText(`Step ${t.step + 1} of ${t.total}`);
  const sBytes = c1.questions[0].answer(lessonContext(c1, doubled, cache));
  expect(sBytes).toBe(64 * 64 * 4);
  const card = page.getByTestId('question-s-bytes');
  await card.getByRole('textbox').fill('lots');
  await card.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-s-bytes')).toHaveText('"lots" is not a number.');
  await card.getByRole('textbox').fill(String(sBytes));
  await card.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-s-bytes')).toContainText('Correct.');
  // A wrong answer offers the answer, which comes from the engine for the loaded problem.
  const ratio = page.getByTestId('question-ratio');
  await ratio.getByRole('textbox').fill('1');
  await ratio.getByRole('button', { name: 'Check' }).click();
  await expect(page.getByTestId('feedback-ratio')).toContainText('Not quite.');
  await ratio.getByRole('button', { name: 'Show answer' }).click();
  const r = Number(c1.questions[1].answer(lessonContext(c1, doubled, cache)));
  expect(r).toBe(4);
  await expect(page.getByTestId('feedback-ratio')).toContainText(`The answer is ${r}.`);

  await page.goto('/?lesson=42');
  await expect(page.getByRole('alert')).toHaveText(`There is no chapter 42; the lessons have chapters 1 to ${CHAPTERS.length}.`);
  await expect(page.getByTestId('toc-1')).toBeVisible();
});

test('online softmax widget: arrow keys change a value and the running sum follows the recurrence', async ({ page }) => {
  await page.goto('/?lesson=2');
  const bar = page.getByTestId('os-bar-2');
  const before = Number(await bar.getAttribute('aria-valuenow'));
  await bar.focus();
  await page.keyboard.press('Shift+ArrowUp');
  await page.keyboard.press('Shift+ArrowUp');
  await page.keyboard.press('Shift+ArrowUp');
  await expect(bar).toHaveAttribute('aria-valuenow', String(before + 3));
  const xs: number[] = [];
  for (let i = 0; i < 8; i++) xs.push(Number(await page.getByTestId(`os-bar-${i}`).getAttribute('aria-valuenow')));
  const steps = onlineSoftmaxSteps(xs);
  for (const i of [2, 7]) await expect(page.getByTestId(`os-l-${i}`)).toHaveText(String(Number(steps[i].l.toPrecision(4))));
  await expect(page.getByTestId('os-row-2')).toHaveClass(/grew/);
  await expect(page.getByTestId('os-diff')).toHaveText(/e-1[5-7]|0\.0e\+0/);
  // The arrow keys stayed in the widget: the debugger did not move.
  await expect(counterOf(page, 2)).toHaveText(/^Step \d+ of \d+$/, { timeout: 30_000 });
});
