// Hostile share links: links whose problem form names a property every object
// inherits used to blank the page, and the page stayed blank on reload. Each must open the
// app with the defaults and a notice naming the ignored key, and a reload must open it too.

import { expect, test, type Page } from './fixtures.ts';
import { counter, watchConsole } from './helpers.ts';

const frag = (json: string) => `#s=${Buffer.from(json).toString('base64url')}`;

/** A fresh page load of the link (a fragment-only change would not reload the app). */
async function open(page: Page, fragment: string): Promise<void> {
  await page.goto('about:blank');
  await page.goto(`/${fragment}`);
}

test('the links from the issue open the defaults with a notice naming the key, and a reload opens too', async ({ page }) => {
  const checkConsole = watchConsole(page);
  for (const key of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty']) {
    await open(page, frag(`{"v":1,"f":{"${key}":1}}`));
    await expect(page.getByTestId('share-notice')).toContainText(`problem.${key}: unknown setting, ignored`);
    await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
  }
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  await page.reload();
  await expect(counter(page)).toHaveText(/^Step \d+ of \d+$/, { timeout: 20_000 });
  checkConsole();
});

test('a prototype name at every level of a link, and a link that is not a state, still open the app', async ({ page }) => {
  const checkConsole = watchConsole(page);
  const everywhere =
    '{"v":1,"constructor":{},"f":{"__proto__":{"nq":"1"},"switches":{"toString":true}},' +
    '"c":{"valueOf":1,"p":[{"algorithm":"fa2","hasOwnProperty":1,"features":{"constructor":1}},{"algorithm":"fa1"}]},' +
    '"sv":{"__proto__":1,"f":{"isPrototypeOf":2}}}';
  await open(page, frag(everywhere));
  const notice = page.getByTestId('share-notice');
  for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'])
    await expect(notice).toContainText(name);
  await expect(page.getByRole('heading', { name: 'Serving layouts' })).toBeVisible({ timeout: 20_000 });
  await open(page, '#s=%%%');
  await expect(page.getByTestId('share-notice')).toContainText('could not be read');
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
  checkConsole();
});
