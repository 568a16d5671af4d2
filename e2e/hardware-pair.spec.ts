// FA4's CTA pair in the hardware views: the dedicated d = dv = 256 kernel
// (sm100_hd256_2cta_fmha_forward.py@0251105a) shows the leader's and the peer's rows side by side.
import { expect, test, type Page } from './fixtures.ts';
import type { ProblemForm } from '../app/store/problem-form.ts';
import { axeOn, counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const HD256: Partial<ProblemForm> = {
  algorithm: 'fa4',
  nq: '512',
  nk: '512',
  d: '256',
  dv: '256',
  blockM: '128',
  blockN: '128',
  dtype: 'bf16',
};

async function loadProblem(page: Page, form: Partial<ProblemForm>): Promise<void> {
  const panel = page.getByRole('region', { name: 'Problem' });
  await panel.getByLabel('Algorithm').selectOption(form.algorithm!);
  for (const [label, key] of [
    ['Nq', 'nq'],
    ['Nk', 'nk'],
    ['d', 'd'],
    ['dv', 'dv'],
    ['Br', 'blockM'],
    ['Bc', 'blockN'],
  ] as const)
    await panel.getByLabel(label, { exact: true }).fill(String(form[key]));
  await panel.getByLabel('dtype').selectOption(form.dtype!);
  await panel.getByRole('button', { name: 'Load problem' }).click();
}

const timeline = (page: Page) => page.getByRole('region', { name: 'Warp-role timeline' });
const memoryMap = (page: Page) => page.getByRole('region', { name: 'Memory map' });

test('FA4 d = dv = 256: the timeline shows the leader and the peer CTA row by row, the pair MMA issued by the leader alone', async ({
  page,
}) => {
  const { s } = await engineSession(HD256);
  const ev = s.events();
  await openApp(page);
  await loadProblem(page, HD256);
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 30_000 });
  const canvas = timeline(page).getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-ops', /\d+/, { timeout: 30_000 });

  // Both CTAs' rows, with their labels: load, mma, softmax and correction of each (the peer's
  // mma lane is drawn although it issues nothing: the leader's MMAs reach down into it).
  const pair = timeline(page).getByTestId('timeline-pair');
  await expect(pair).toBeVisible();
  await expect(pair).toContainText('(cta_group::2)');
  const row = (side: string, role: string) =>
    pair.locator(`[data-testid="pair-side"][data-side="${side}"] [data-testid="pair-role"][data-role="${side}/${role}"]`);
  for (const side of ['leader', 'peer']) {
    await expect(pair.locator(`[data-side="${side}"]`)).toBeVisible();
    for (const role of ['load', 'mma', 'softmax0', 'correction']) await expect(row(side, role)).toBeVisible();
  }
  await expect(row('leader', 'mma')).toContainText('issues every tcgen05.mma cta_group::2 of the pair');
  await expect(row('peer', 'mma')).toContainText('issues nothing');
  await expect(canvas).toHaveAttribute('data-lanes', '8');
  // Lazy rescaling is the main kernel's: this one has no threshold, so the switch is off with the reason.
  await expect(timeline(page).getByLabel('lazyRescale')).toBeDisabled();

  // The memory map: one SMEM strip and one TMEM grid per CTA, S/P/O filling all 512 columns.
  await expect(memoryMap(page).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await expect(memoryMap(page).locator('.hw-smem[data-cta="leader"]')).toBeVisible();
  await expect(memoryMap(page).locator('.hw-smem[data-cta="peer"]')).toBeVisible();
  await expect(memoryMap(page).locator('.hw-tmem[data-cta="peer"]')).toContainText('512 allocated');
  const cta = memoryMap(page).getByTestId('cta-pair').getByTestId('pair-cta');
  await expect(cta).toHaveCount(2);
  await expect(cta.nth(0)).toContainText('Q tiles Q0 of the pair');
  await expect(cta.nth(1)).toContainText('Q tiles Q1 of the pair');
  await expect(cta.nth(1)).toContainText('4 stages of 16 KiB in sK and in sV, each holding rows 64–127');
  await expect(memoryMap(page).locator('[data-testid="reg-role"][data-registers="256"]')).toHaveCount(1);
  // No serious or critical axe violation in the pair rows or the memory map's pair panels.
  const { violations } = await axeOn(page)
    .include('[data-testid="timeline-pair"]')
    .include('[data-testid="cta-pair"]')
    .options({ resultTypes: ['violations'] })
    .analyze();
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);

  // Keyboard: the timeline takes the arrows to walk its ops (both CTAs' rows) and Enter to seek.
  await canvas.focus();
  const live = timeline(page).locator('[aria-live="polite"]');
  let text = '';
  const seen = new Set<string>();
  for (let i = 0; i < 60 && !/^leader\/mma: S0/.test(text); i++) {
    await page.keyboard.press('ArrowRight');
    text = (await live.textContent()) ?? '';
    seen.add(text.split(':')[0]);
  }
  expect([...seen].some((r) => r.startsWith('peer/'))).toBe(true);
  expect(text).toMatch(/^leader\/mma: S0=.*\(cta_group::2\) · tensor/);
  const stepOfOp = Number(/step (\d+)$/.exec(text)?.[1]);
  expect(stepOfOp).toBeGreaterThan(1);
  await page.keyboard.press('Enter');
  await expect(counter(page)).toHaveText(`Step ${stepOfOp} of ${ev.length}`);
  await expect(memoryMap(page).getByTestId('hw-status')).toContainText('(cta_group::2)');
  await shot(page, { path: '/tmp/fa4-pair-timeline.png', fullPage: false, clip: (await timeline(page).boundingBox()) ?? undefined });
  await shot(memoryMap(page), { path: '/tmp/fa4-pair-memory.png' });
  await shot(page, { path: 'test-results/hardware-fa4-hd256-pair.png', fullPage: true });
});
