import { defineConfig } from '@playwright/test';
import { TEST_DAWN_FEATURES } from './engine/webgpu/swiftshader.ts';

// Debian's Chromium drives the browser tests; Playwright cannot download its own here.
// FLASHSCOPE_CHROMIUM overrides the path; PW_PORT lets parallel checkouts avoid clashing.
const port = Number(process.env.PW_PORT ?? 4173);
const executablePath = process.env.FLASHSCOPE_CHROMIUM ?? '/usr/bin/chromium';

/** Specs that measure main-thread tasks: e2e/main-thread*.spec.ts. */
const MAIN_THREAD_SPECS = /main-thread[\w-]*\.spec\.ts$/;

/**
 * Chromium's launch flags for every browser test. Chromium keeps only the last --disable-features, so
 * Playwright's own list is repeated here; added to it: the omnibox popup's WebUI, which otherwise
 * starts a renderer per browser context that costs as much CPU as loading FlashScope itself.
 */
const PLAYWRIGHT_DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
];
const OMNIBOX_WEBUI_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'WebUIOmniboxFullPopup', 'PreloadTopChromeWebUI'];
/** Without --enable-unsafe-webgpu: headless Chromium then offers no WebGPU adapter (e2e/webgpu-unavailable.spec.ts). */
export const CHROMIUM_ARGS_NO_WEBGPU = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  `--disable-features=${[...PLAYWRIGHT_DISABLED_FEATURES, ...OMNIBOX_WEBUI_FEATURES].join(',')}`,
];
/** With WebGPU on SwiftShader, and the Dawn toggle the Node tests use (engine/webgpu/swiftshader.ts, TEST_DAWN_FEATURES). */
export const CHROMIUM_ARGS = [...CHROMIUM_ARGS_NO_WEBGPU, '--enable-unsafe-webgpu', `--enable-dawn-features=${TEST_DAWN_FEATURES}`];

export default defineConfig({
  testDir: 'e2e',
  testMatch: /.*\.spec\.ts$/,
  // Two browsers share CI's two cores, so a test gets more time there than on one worker.
  timeout: process.env.CI ? 90_000 : 60_000,
  expect: { timeout: 10_000 },
  // Tests, not files, are handed to the workers: no spec shares state between its tests, and a
  // long file at the end of the run no longer leaves the other worker idle.
  fullyParallel: true,
  // CI runs two browsers at once (one per core); a local run stays on one so parallel checkouts share the machine.
  workers: process.env.CI ? 2 : 1,
  retries: process.env.CI ? 1 : 0,
  reporter: process.env.PW_REPORTER === 'json' ? [['json', { outputFile: 'test-results/e2e.json' }], ['list']] : 'list',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: 'chromium',
    viewport: { width: 1440, height: 900 },
    launchOptions: {
      executablePath,
      args: CHROMIUM_ARGS,
    },
  },
  // Specs that time the main thread: `npm test` runs them alone after the rest (scripts/test-all.mjs), so a second browser's load cannot fail them.
  projects: [
    { name: 'app', testIgnore: MAIN_THREAD_SPECS },
    { name: 'main thread', testMatch: MAIN_THREAD_SPECS },
  ],
  webServer: {
    // FLASHSCOPE_PREBUILT: `npm test` built dist already (scripts/test-all.mjs), beside the typecheck.
    command: `${process.env.FLASHSCOPE_PREBUILT ? '' : 'npx vite build --logLevel warn && '}npx vite preview --host 127.0.0.1 --port ${port} --strictPort`,
    url: `http://127.0.0.1:${port}`,
    reuseExistingServer: !process.env.CI,
    timeout: 180_000,
  },
});
