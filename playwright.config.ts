import { defineConfig } from '@playwright/test';

// Debian's Chromium drives the browser tests; Playwright cannot download its own here.
// FLASHSCOPE_CHROMIUM overrides the path; PW_PORT lets parallel checkouts avoid clashing.
const port = Number(process.env.PW_PORT ?? 4173);
const executablePath = process.env.FLASHSCOPE_CHROMIUM ?? '/usr/bin/chromium';

/** A browser that has dismissed the first screen before: every spec but e2e/welcome.spec.ts starts on the app itself. */
export function welcomeSeen(origin: string) {
  return { cookies: [], origins: [{ origin, localStorage: [{ name: 'flashscope.welcome.v1', value: 'dismissed' }] }] };
}

export default defineConfig({
  testDir: 'e2e',
  testMatch: /.*\.spec\.ts$/,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: process.env.CI ? 1 : 0,
  reporter: process.env.PW_REPORTER === 'json' ? [['json', { outputFile: 'test-results/e2e.json' }], ['list']] : 'list',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    storageState: welcomeSeen(`http://127.0.0.1:${port}`),
    browserName: 'chromium',
    viewport: { width: 1440, height: 900 },
    launchOptions: {
      executablePath,
      args: [
        '--no-sandbox',
        '--enable-unsafe-webgpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    },
  },
  webServer: {
    command: `npx vite build --logLevel warn && npx vite preview --host 127.0.0.1 --port ${port} --strictPort`,
    url: `http://127.0.0.1:${port}`,
    reuseExistingServer: !process.env.CI,
    timeout: 180_000,
  },
});
