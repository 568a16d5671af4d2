// `npm run bench:ui`: browser benchmarks, kept out of `npm test` (they time things).
import base from './playwright.config.ts';
import { defineConfig } from '@playwright/test';

export default defineConfig({
  ...base,
  projects: [{ name: 'bench' }],
  testDir: 'e2e/bench',
  testMatch: /.*\.bench\.ts$/,
  timeout: 120_000,
  reporter: 'list',
});
