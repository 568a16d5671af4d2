import { expect, test, type Page } from './fixtures.ts';
import { counter, openApp, shot, watchConsole } from './helpers.ts';

// The main screens at a desktop (1440×900), a projector (1280×720) and a phone (390×844):
// the page never scrolls sideways, nothing overlaps the transport, and the controls a
// person needs (problem form, transport, views) can be reached.

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const VIEWPORTS = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'projector', width: 1280, height: 720 },
  { name: 'phone', width: 390, height: 844 },
] as const;

/** Elements whose box reaches past the page's right edge (the body would scroll sideways). */
async function horizontalOverflow(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const W = document.documentElement.clientWidth;
    const out: string[] = [];
    if (document.documentElement.scrollWidth > W + 1) out.push(`document scrolls: ${document.documentElement.scrollWidth} > ${W}`);
    for (const el of Array.from(document.querySelectorAll<HTMLElement>('body *'))) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.right <= W + 1) continue;
      // Inside a container that scrolls by itself, overflow is reachable.
      let p = el.parentElement;
      let scrolls = false;
      while (p && p !== document.body) {
        const s = getComputedStyle(p);
        if (/(auto|scroll|hidden)/.test(s.overflowX) && p.getBoundingClientRect().right <= W + 1) {
          scrolls = true;
          break;
        }
        p = p.parentElement;
      }
      if (!scrolls) out.push(`${el.tagName.toLowerCase()}.${el.className} right=${Math.round(r.right)}`);
    }
    return out.slice(0, 10);
  });
}

/** Transport buttons that another element covers at their centre. */
async function coveredControls(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => {
    const out: string[] = [];
    for (const el of Array.from(document.querySelectorAll<HTMLElement>(sel))) {
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      const x = r.left + r.width / 2;
      const y = r.top + r.height / 2;
      if (y < 0 || y > window.innerHeight) continue;
      const top = document.elementFromPoint(x, y);
      if (top && top !== el && !el.contains(top))
        out.push(`${el.getAttribute('aria-label') ?? el.textContent} under ${top.tagName.toLowerCase()}.${top.className}`);
    }
    return out;
  }, selector);
}

for (const vp of VIEWPORTS) {
  test(`${vp.name} ${vp.width}×${vp.height}: debugger, compare and lessons fit the width and keep their controls reachable`, async ({
    page,
  }) => {
    await page.setViewportSize({ width: vp.width, height: vp.height });
    await openApp(page);
    const problem = page.getByRole('region', { name: 'Problem', exact: true });
    await problem.getByLabel('Algorithm').selectOption('fa4');
    await problem.getByRole('button', { name: 'Load problem' }).click();
    await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
    await shot(page, { path: `test-results/layout-${vp.name}-loaded.png`, fullPage: true });
    await expect(page.getByRole('region', { name: 'Memory map' }).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
    expect(await horizontalOverflow(page)).toEqual([]);
    // The transport can be reached and used from the keyboard and by clicking.
    const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
    await fwd.scrollIntoViewIfNeeded();
    await fwd.click();
    await expect(counter(page)).toHaveText(/^Step 2 of/);
    expect(await coveredControls(page, '.transport button')).toEqual([]);
    await shot(page, { path: `test-results/layout-${vp.name}-debugger.png` });
    await shot(page, { path: `test-results/layout-${vp.name}-debugger-full.png`, fullPage: true });

    await page.getByRole('tab', { name: 'Compare' }).click();
    await expect(page.locator('[data-pane="cmp1"]').getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
    expect(await horizontalOverflow(page)).toEqual([]);
    await shot(page, { path: `test-results/layout-${vp.name}-compare.png` });

    await page.getByRole('button', { name: 'Lessons' }).click();
    await expect(page.getByRole('heading', { level: 2 }).first()).toBeVisible();
    expect(await horizontalOverflow(page)).toEqual([]);
    await shot(page, { path: `test-results/layout-${vp.name}-lessons.png` });
  });
}
