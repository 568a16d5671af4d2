// A newcomer's first minute: the welcome screen and its three ways in (and that a share
// link or a lesson address skips it), step lines in words, a pending load said as such,
// and the top bar marking the section shown.

import { expect, test } from './fixtures.ts';
import { counter, openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

test.describe('a browser that never opened FlashScope', () => {
  test.use({ welcomeDismissed: false });

  test('the welcome says what FlashScope is, Learn opens chapter 1, and it does not come back', async ({ page }) => {
    await page.goto('/');
    const welcome = page.getByRole('dialog', { name: 'Welcome to FlashScope' });
    await expect(welcome).toBeVisible();
    await expect(welcome).toContainText('how attention is computed one tile at a time');
    for (const way of ['Learn', 'Debug', 'Compare'])
      await expect(welcome.getByRole('button', { name: new RegExp(`^${way}`) })).toBeVisible();
    await expect(welcome).toContainText('lists every shortcut');
    // The first way has the focus: Enter takes it.
    await expect(welcome.getByRole('button', { name: /^Learn/ })).toBeFocused();
    await shot(page, { path: 'test-results/first-minute/welcome.png' });
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(/\?lesson=1/);
    await expect(page.getByText(/^Chapter 1 of \d+$/)).toBeVisible();
    await expect(welcome).toHaveCount(0);
    await page.goto('/');
    await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
    await expect(page.getByTestId('welcome')).toHaveCount(0);
  });

  test('Escape leaves the welcome for the debugger', async ({ page }) => {
    await page.goto('/');
    await expect(page.getByTestId('welcome')).toBeVisible();
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('welcome')).toHaveCount(0);
    await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
    await page.keyboard.press('ArrowRight');
    await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  });

  test('a lesson address and a share link open straight to their state; Compare is a way in', async ({ page }) => {
    await page.goto('/?lesson=2');
    await expect(page.getByText(/^Chapter 2 of \d+$/)).toBeVisible();
    await expect(page.getByTestId('welcome')).toHaveCount(0);
    await page.goto('/#s=x');
    await expect(page.getByTestId('welcome')).toHaveCount(0);
    await page.goto('/');
    await page
      .getByRole('dialog', { name: 'Welcome to FlashScope' })
      .getByRole('button', { name: /^Compare/ })
      .click();
    await expect(page.getByRole('tab', { name: 'Compare' })).toHaveAttribute('aria-selected', 'true');
  });
});

test('step lines read in words, a changed form says it is not loaded, the top bar marks the tab shown', async ({ page }) => {
  await openApp(page);
  await expect(page.getByTestId('where')).toHaveText('Load Q tile 0 (rows 0–15) · fa2.loadQ');
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('where')).toHaveText('Load K, V block 0 (keys 0–15) · fa2.loadKV');

  const problem = page.getByRole('region', { name: 'Problem', exact: true });
  await expect(page.getByTestId('load-pending')).toHaveCount(0);
  await problem.getByLabel('Algorithm').selectOption('fa1');
  await expect(page.getByTestId('load-pending')).toHaveText('Not loaded yet: the views show the previous run');
  await expect(page.getByRole('toolbar', { name: 'Playback' })).toContainText('press Load problem');
  await problem.getByRole('button', { name: 'Load problem' }).click();
  await expect(page.getByTestId('where')).toContainText('fa1.', { timeout: 20_000 });
  await expect(page.getByTestId('load-pending')).toHaveCount(0);

  const debuggerNav = page.getByRole('navigation', { name: 'Sections' }).getByRole('button', { name: 'Debugger' });
  await expect(debuggerNav).toHaveAttribute('aria-current', 'page');
  await page.getByRole('tab', { name: 'Serving' }).click();
  await expect(debuggerNav).not.toHaveAttribute('aria-current', 'page');
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(debuggerNav).not.toHaveAttribute('aria-current', 'page');
  await expect(page.getByText('change it in the Single tab')).toBeVisible({ timeout: 20_000 });
  await debuggerNav.click();
  await expect(page.getByRole('tab', { name: 'Single' })).toHaveAttribute('aria-selected', 'true');
  await expect(debuggerNav).toHaveAttribute('aria-current', 'page');
});
