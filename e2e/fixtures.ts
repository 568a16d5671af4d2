// The `test` every browser spec imports: Playwright's, with the first screen already dismissed.
// An init script writes the dismissal into the page's storage before the app reads it; a
// storageState would make Playwright open the origin in an extra page for every test, which
// costs about as much CPU as the context itself.

import { test as base } from '@playwright/test';

export { expect } from '@playwright/test';
export type { Locator, Page } from '@playwright/test';

/** app/welcome/welcome-memory.ts's key and value. */
const WELCOME_KEY = 'flashscope.welcome.v1';

export const test = base.extend<{ welcomeDismissed: boolean }>({
  /** false: the browser has never dismissed the first screen (e2e/first-minute.spec.ts). */
  welcomeDismissed: [true, { option: true }],
  context: async ({ context, welcomeDismissed }, use) => {
    if (welcomeDismissed)
      await context.addInitScript((key) => {
        try {
          if (window.localStorage.getItem(key) === null) window.localStorage.setItem(key, 'dismissed');
        } catch {
          // about:blank and other opaque origins have no storage.
        }
      }, WELCOME_KEY);
    await use(context);
  },
});
