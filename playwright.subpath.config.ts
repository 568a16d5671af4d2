// The hosted build: `FLASHSCOPE_BASE=/some/sub/path/ vite build` served by a plain static
// server under that path (scripts/static-server.mjs), as a course page would host it.
// Run by `npm test` after the main suite; PW_PORT + 1 keeps it off the main suite's port.
import { defineConfig } from '@playwright/test';
import base from './playwright.config.ts';

export const SUB_PATH = '/some/sub/path/';
const port = Number(process.env.PW_PORT ?? 4173) + 1;

export default defineConfig({
  ...base,
  projects: [{ name: 'sub-path' }],
  testMatch: /.*\.subpath\.ts$/,
  use: { ...base.use, baseURL: `http://127.0.0.1:${port}` },
  webServer: {
    // FLASHSCOPE_PREBUILT: `npm test` built dist-subpath already (scripts/test-all.mjs, with the same base path).
    command: `${process.env.FLASHSCOPE_PREBUILT ? '' : `FLASHSCOPE_BASE=${SUB_PATH} npx vite build --outDir dist-subpath --logLevel warn && `}node scripts/static-server.mjs dist-subpath ${SUB_PATH} ${port}`,
    url: `http://127.0.0.1:${port}${SUB_PATH}`,
    reuseExistingServer: !process.env.CI,
    timeout: 180_000,
  },
});
