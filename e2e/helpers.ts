// Shared by the debugger specs: the engine's own trace for the page's problem (computed
// here in Node with the same session code the worker runs) and a console-error guard.

import AxeBuilder from '@axe-core/playwright';
import { expect, type Locator, type LocatorScreenshotOptions, type Page, type PageScreenshotOptions } from '@playwright/test';
import { DebuggerSession } from '../engine/debugger/session.ts';
import type { LoadRequest } from '../engine/request.ts';
import { DEFAULT_FORM, formToRequest, type ProblemForm } from '../app/store/problem-form.ts';

export async function engineSession(form: Partial<ProblemForm> = {}): Promise<{ s: DebuggerSession; req: LoadRequest }> {
  const req = formToRequest({ ...DEFAULT_FORM, ...form });
  const s = new DebuggerSession();
  await s.load(req);
  return { s, req };
}

/** What StatsView prints for a number. */
export function shown(v: number): string {
  if (Number.isNaN(v)) return '—';
  if (v === -Infinity) return '−∞';
  return Number(v.toPrecision(5)).toString();
}

export function watchConsole(page: Page): () => void {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  return () => expect(errors, 'console errors').toEqual([]);
}

export async function openApp(page: Page): Promise<void> {
  await page.goto('/');
  await expect(page.getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 20_000 });
}

export const counter = (page: Page) => page.getByTestId('step-counter');

/**
 * Saves a screenshot for a person to look at (test-results/). CI looks at none, and each costs
 * Chromium a few tenths of a CPU-second, so under CI it takes none; no test asserts on one.
 */
export function shot(target: Page, options: PageScreenshotOptions): Promise<void>;
export function shot(target: Locator, options: LocatorScreenshotOptions): Promise<void>;
export async function shot(target: Page | Locator, options: PageScreenshotOptions & LocatorScreenshotOptions): Promise<void> {
  if (process.env.CI) return;
  await target.screenshot(options);
}

/**
 * axe-core on the page. Legacy mode runs axe in the page itself: the app has no frames, and the
 * default mode's extra blank page for combining frame results doubles each pass's time.
 */
export const axeOn = (page: Page): AxeBuilder => new AxeBuilder({ page }).setLegacyMode(true);
