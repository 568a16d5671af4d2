// The Serving page: packed varlen and paged K/V runs stepped in the browser, checked against
// the same runs done here in Node with the engine (engine/layouts/serving-run.ts).

import { expect, test, type Page } from './fixtures.ts';
import { encodeNpy } from '../engine/io/npy.ts';
import { DEFAULT_SERVING_FORM, generateServing, runServing, type ServingForm } from '../engine/layouts/serving-run.ts';
import { file } from './tensor-files.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const stepText = (page: Page) => page.getByTestId('serving-step');
const sp = (page: Page) => page.getByTestId('serving-page');
const seek = async (page: Page, i: number) => {
  await page.getByLabel('Serving step').fill(String(i));
  await expect(stepText(page)).toHaveText(new RegExp(`^Step ${i + 1} of`));
};

/** What the address bar's link says of the Serving page: its layout, splits and step. */
async function linkedServing(page: Page): Promise<{ layout: string; splits: number; step: number } | null> {
  const hash = await page.evaluate(() => location.hash);
  if (!hash.startsWith('#s=')) return null;
  const sv = JSON.parse(Buffer.from(hash.slice(3), 'base64url').toString('utf8')).sv;
  return sv ? { layout: sv.f.layout, splits: sv.f.splits, step: sv.st } : null;
}

async function openServing(page: Page): Promise<void> {
  await openApp(page);
  await page.getByRole('tab', { name: 'Serving' }).click();
  await expect(page.getByTestId('serving-page')).toBeVisible();
}

test('varlen: packed grid with boundaries, a straddling tile masked, the sequence picker, the keyboard and the link', async ({
  page,
  context,
}) => {
  const run = runServing(generateServing(DEFAULT_SERVING_FORM), DEFAULT_SERVING_FORM.algorithm);
  await openServing(page);
  await expect(stepText(page)).toHaveText(`Step 1 of ${run.steps.length}`, { timeout: 20_000 });
  await expect(page.getByTestId('serving-error')).toHaveText(run.maxError.toExponential(2));
  // Four sequences (12, 40, 0, 23 rows): four diagonal blocks in the packed score grid.
  for (let b = 0; b < 4; b++) await expect(page.getByTestId(`seq-block-${b}`)).toHaveCount(1);
  // The first Q tile of sequence 0 has Br = 16 rows but the sequence has 12: 4 rows straddle.
  const firstQk = run.steps.findIndex((s) => s.kind === 'qk');
  await seek(page, firstQk);
  await expect(page.getByTestId('straddle-note')).toContainText(`${run.blocks.blockM - 12} of its ${run.blocks.blockM} rows`);
  await expect(page.getByTestId('straddle-rows')).toHaveCount(1);
  // The picker jumps to the first step of sequence 3; the arrow keys step from there.
  await page.getByRole('button', { name: /^3 \(23 × 23\)/ }).click();
  const first3 = run.steps.findIndex((s) => s.b === 3);
  await expect(stepText(page)).toHaveText(`Step ${first3 + 1} of ${run.steps.length}`);
  await expect(page.getByTestId('step-desc')).toContainText('sequence 3, head 0');
  await page.keyboard.press('ArrowRight');
  await expect(stepText(page)).toHaveText(`Step ${first3 + 2} of ${run.steps.length}`);
  await expect(page.getByTestId('step-desc')).toContainText(`${run.steps[first3 + 1].kind}`);
  // Packing against padding, from the engine's counters.
  await expect(page.getByTestId('packed-flops')).toBeVisible();
  const sq = run.steps.findIndex((s) => s.b === 1 && s.kind === 'qk');
  await seek(page, sq);
  await shot(page, { path: 'test-results/serving-varlen.png', fullPage: true });
  // The share link reopens the packed run at the same step (once the link has caught up with it).
  await expect.poll(() => linkedServing(page)).toMatchObject({ layout: 'varlen', step: sq });
  const other = await context.newPage();
  const check2 = watchConsole(other);
  await other.goto(page.url());
  await expect(other.getByTestId('serving-step')).toHaveText(`Step ${sq + 1} of ${run.steps.length}`, { timeout: 20_000 });
  await expect(other.getByTestId('step-desc')).toContainText('sequence 1, head 0');
  await expect(other.getByTestId('seq-block-3')).toHaveCount(1);
  check2();
});

test('paged: block table and pool light the pages each step loads; splits on page boundaries; the link restores it', async ({
  page,
  context,
}) => {
  const form: ServingForm = {
    ...DEFAULT_SERVING_FORM,
    layout: 'paged',
    algorithm: 'flash-decoding',
    seqlensK: [70, 5, 33],
    pageSize: 16,
    splits: 3,
  };
  const run = runServing(generateServing(form), form.algorithm, { splits: 3 });
  await openServing(page);
  await expect(stepText(page)).toHaveText(/^Step 1 of/, { timeout: 20_000 });
  await sp(page).getByLabel('Paged K/V cache (block table)').check();
  await sp(page).getByLabel('Algorithm').selectOption('flash-decoding');
  await sp(page).getByLabel('Cache lengths').fill('70, 5, 33');
  await sp(page).getByLabel('Page size').fill('16');
  await sp(page).getByLabel('Splits (0 = heuristic)').fill('3');
  await sp(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(stepText(page)).toHaveText(`Step 1 of ${run.steps.length}`, { timeout: 20_000 });
  await expect(page.getByTestId('pages-touched')).toHaveText(String(run.pagesTouched));
  await expect(page.getByTestId('serving-error')).toHaveText(run.maxError.toExponential(2));
  // 70 tokens = 5 pages; 3 splits over 5 pages: 2 pages per split.
  await expect(page.getByTestId('split-pages')).toContainText('2 pages per split');
  // Upstream's FA3 and FA4 on the same paged problem: page size 16 below tile_n sends K/V through cp.async, the 3 splits reach both.
  await expect(page.getByTestId('serving-kernels')).toContainText('page size 16, seqused_k), Hq 2 / Hk 1');
  for (const k of run.hardware.kernels) {
    const card = page.getByTestId(`serving-kernel-${k.algorithm}`);
    await expect(card).toContainText('paged kv non tma true');
    await expect(card).toContainText('num splits 3');
    await expect(card.getByTestId('kernel-figures')).toContainText(/Simulated: [\d.]+ µs/);
  }
  const fa3 = page.getByTestId('serving-kernel-fa3');
  await fa3.getByText(/^Why this configuration/).click();
  await expect(fa3.getByText('hopper/flash_api.cpp@0251105a l. 415-424')).toBeVisible();
  // A K/V load of sequence 0: exactly its pages are lit, in the table and in the pool.
  const i = run.steps.findIndex((s) => s.kind === 'load' && s.b === 0 && s.pages && s.split === 1);
  const s = run.steps[i];
  await seek(page, i);
  for (const phys of s.pages!) {
    const j = run.blockTable!.slice(0, run.maxPages!).indexOf(phys);
    await expect(page.getByTestId(`bt-0-${j}`)).toHaveClass(/lit/);
    await expect(page.getByTestId(`bt-0-${j}`)).toContainText('split 1');
    await expect(page.getByTestId(`pool-${phys}`)).toHaveClass(/lit/);
  }
  await expect(page.locator('.block-table td.lit')).toHaveCount(s.pages!.length);
  // The two spare pool pages are free: never read.
  await expect(page.locator('.pool-page.free')).toHaveCount(2);
  await shot(page, { path: 'test-results/serving-paged.png', fullPage: true });
  // The share link reopens the same run at the same step (once the link has caught up with it).
  await expect.poll(() => linkedServing(page)).toEqual({ layout: 'paged', splits: 3, step: i });
  const url = page.url();
  const other = await context.newPage();
  const check2 = watchConsole(other);
  await other.goto(url);
  await expect(other.getByTestId('serving-page')).toBeVisible({ timeout: 20_000 });
  await expect(other.getByTestId('serving-step')).toHaveText(`Step ${i + 1} of ${run.steps.length}`, { timeout: 20_000 });
  await expect(other.getByTestId('pages-touched')).toHaveText(String(run.pagesTouched));
  check2();
});

test('varlen from files: int32 cu_seqlens load; bad offsets are refused by name and the shown run stays', async ({ page }) => {
  // Two sequences of 3 and 5 tokens, one head, d = 4, written with the engine's npy writer.
  const cq = [0, 3, 8];
  const q = Float32Array.from({ length: 8 * 4 }, (_, i) => Math.sin(i));
  const k = Float32Array.from({ length: 8 * 4 }, (_, i) => Math.cos(i * 0.7));
  const v = Float32Array.from({ length: 8 * 4 }, (_, i) => Math.sin(i * 0.3));
  const f = (name: string, data: ArrayLike<number>, shape: number[], dtype: 'float32' | 'int32' = 'float32') =>
    file(name, encodeNpy(data, shape, dtype));
  await openServing(page);
  await expect(stepText(page)).toHaveText(/^Step 1 of/, { timeout: 20_000 });
  await sp(page).getByText('Load tensors…').click();
  await sp(page)
    .getByLabel('q file', { exact: true })
    .setInputFiles(f('q.npy', q, [8, 1, 4]));
  await sp(page)
    .getByLabel('k file', { exact: true })
    .setInputFiles(f('k.npy', k, [8, 1, 4]));
  await sp(page)
    .getByLabel('v file', { exact: true })
    .setInputFiles(f('v.npy', v, [8, 1, 4]));
  await sp(page)
    .getByLabel('cu_seqlens_q file')
    .setInputFiles(f('cq.npy', cq, [3], 'int32'));
  await sp(page)
    .getByLabel('cu_seqlens_k file')
    .setInputFiles(f('ck.npy', cq, [3], 'int32'));
  await sp(page).getByRole('button', { name: 'Run on files' }).click();
  await expect(page.getByTestId('serving-summary')).toContainText('inputs from files', { timeout: 20_000 });
  await expect(page.getByTestId('serving-summary')).toContainText('2 sequences');
  const err = Number(await page.getByTestId('serving-error').textContent());
  expect(err).toBeLessThan(2e-5);
  await sp(page)
    .getByLabel('cu_seqlens_q file')
    .setInputFiles(f('bad.npy', [0, 5, 3], [3], 'int32'));
  await sp(page).getByRole('button', { name: 'Run on files' }).click();
  await expect(page.getByTestId('serving-error-msg')).toContainText('cu_seqlens_q[2]');
  await expect(page.getByTestId('serving-summary')).toContainText('2 sequences');
  await shot(page, { path: 'test-results/serving-files.png', fullPage: true });
});

test('paged fmha_v2: the SMEM view shows which pages and slots fill each K/V stage; looked at at 1440×900 and 1280×720', async ({
  page,
}) => {
  const form: ServingForm = { ...DEFAULT_SERVING_FORM, layout: 'paged', algorithm: 'fmha-v2', seqlensK: [70, 5, 33], pageSize: 16 };
  const run = runServing(generateServing(form), form.algorithm, { splits: 0 });
  await openServing(page);
  await expect(stepText(page)).toHaveText(/^Step 1 of/, { timeout: 20_000 });
  await sp(page).getByLabel('Paged K/V cache (block table)').check();
  await sp(page).getByLabel('Algorithm').selectOption('fmha-v2');
  await sp(page).getByLabel('Cache lengths').fill('70, 5, 33');
  await sp(page).getByLabel('Page size').fill('16');
  await sp(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(stepText(page)).toHaveText(`Step 1 of ${run.steps.length}`, { timeout: 20_000 });
  // The second K/V load of sequence 0 goes to stage 1 while stage 0 still holds keys 0…15.
  const loads = run.steps.map((s, i) => [s, i] as const).filter(([s]) => s.b === 0 && s.h === 0 && s.kind === 'load' && s.pages);
  const [second, i] = loads[1];
  const tile = run.blocks.blockN;
  await seek(page, i);
  const pageOf = (key: number) => run.blockTable![Math.floor(key / 16)];
  await expect(page.getByTestId('smem-sK-1')).toHaveClass(/loading/);
  await expect(page.getByTestId('smem-sK-1')).toContainText(`keys ${second.cols[0]}…${second.cols[1] - 1}`);
  await expect(page.getByTestId('smem-sK-1-page').first()).toHaveText(
    `← page ${pageOf(second.cols[0])} slots ${second.cols[0] % 16}…${(second.cols[1] - 1) % 16}`,
  );
  await expect(page.getByTestId('smem-sV-1')).toHaveClass(/loading/);
  await expect(page.getByTestId('smem-sK-0')).toContainText(`keys 0…${tile - 1}`);
  await expect(page.getByTestId('smem-sK-0-page').first()).toContainText(`← page ${pageOf(0)} slots 0…`);
  await expect(page.getByTestId('smem-sK-0')).not.toHaveClass(/loading/);
  // The block table lights the same page.
  await expect(page.getByTestId(`pool-${pageOf(second.cols[0])}`)).toHaveClass(/lit/);
  // Step on with the keyboard to the first qk: it reads stage 0.
  const qk = run.steps.findIndex((s) => s.b === 0 && s.h === 0 && s.kind === 'qk');
  await page.keyboard.press('Home');
  for (let k = 0; k < qk; k++) await page.keyboard.press('ArrowRight');
  await expect(stepText(page)).toHaveText(`Step ${qk + 1} of ${run.steps.length}`);
  await expect(page.getByTestId('smem-sK-0')).toHaveClass(/reading/);
  await expect(page.getByTestId('smem-sQ-0')).toHaveClass(/reading/);
  await seek(page, i);
  await shot(page, { path: 'test-results/serving-smem-1440.png', fullPage: true });
  await page.setViewportSize({ width: 1280, height: 720 });
  await expect(page.getByTestId('smem-view')).toBeVisible();
  await shot(page, { path: 'test-results/serving-smem-1280.png', fullPage: true });
});

test('paged from files: a NaN pool, int32 block table and cache lengths; a needed entry out of range is refused by name', async ({
  page,
}) => {
  // Two sequences of 6 and 3 tokens in pages of 4; one head, d = 4; pool pages 0 and 3 belong to nobody (NaN).
  const PS = 4;
  const table = [2, 1, 4, -1];
  const lens = [6, 3];
  const pool = new Float32Array(5 * PS * 4).fill(NaN);
  const vpool = new Float32Array(5 * PS * 4).fill(NaN);
  lens.forEach((L, b) => {
    for (let j = 0; j < L; j++) {
      const slot = table[b * 2 + Math.floor(j / PS)] * PS + (j % PS);
      for (let c = 0; c < 4; c++) {
        pool[slot * 4 + c] = Math.sin(b * 7 + j + c);
        vpool[slot * 4 + c] = Math.cos(b * 3 + j * 0.5 + c);
      }
    }
  });
  const q = Float32Array.from({ length: 2 * 4 }, (_, i) => Math.sin(i * 0.9));
  const f = (name: string, data: ArrayLike<number>, shape: number[], dtype: 'float32' | 'int32' = 'float32') =>
    file(name, encodeNpy(data, shape, dtype));
  await openServing(page);
  await expect(stepText(page)).toHaveText(/^Step 1 of/, { timeout: 20_000 });
  await sp(page).getByLabel('Paged K/V cache (block table)').check();
  await sp(page).getByLabel('Algorithm').selectOption('flash-decoding');
  await sp(page).getByText('Load tensors…').click();
  await sp(page)
    .getByLabel('q file', { exact: true })
    .setInputFiles(f('q.npy', q, [2, 1, 1, 4]));
  await sp(page)
    .getByLabel('k_cache file')
    .setInputFiles(f('kc.npy', pool, [5, PS, 1, 4]));
  await sp(page)
    .getByLabel('v_cache file')
    .setInputFiles(f('vc.npy', vpool, [5, PS, 1, 4]));
  await sp(page)
    .getByLabel('block_table file')
    .setInputFiles(f('bt.npy', table, [2, 2], 'int32'));
  await sp(page)
    .getByLabel('cache_seqlens file')
    .setInputFiles(f('cs.npy', lens, [2], 'int32'));
  await sp(page).getByRole('button', { name: 'Run on files' }).click();
  await expect(page.getByTestId('serving-summary')).toContainText('inputs from files', { timeout: 20_000 });
  await expect(page.getByTestId('serving-summary')).toContainText('paged K/V cache of 2 sequences');
  await expect(page.getByTestId('pages-touched')).toHaveText('3');
  await expect(page.getByTestId('files-note')).toBeVisible();
  // Within float64's reach: no NaN slot was read.
  expect(Number(await page.getByTestId('serving-error').textContent())).toBeLessThan(2e-5);
  await expect(page.getByTestId('pool-0')).toHaveClass(/free/);
  await expect(page.getByTestId('pool-3')).toHaveClass(/free/);
  await expect(page.getByTestId('bt-0-1')).toContainText('→ 1');
  await sp(page)
    .getByLabel('block_table file')
    .setInputFiles(f('bad.npy', [2, 7, 4, -1], [2, 2], 'int32'));
  await sp(page).getByRole('button', { name: 'Run on files' }).click();
  await expect(page.getByTestId('serving-error-msg')).toContainText('block_table[0, 1]');
  await expect(page.getByTestId('serving-error-msg')).toContainText('page 7 is out of range');
  await expect(page.getByTestId('pages-touched')).toHaveText('3');
  await shot(page, { path: 'test-results/serving-paged-files.png', fullPage: true });
});

test("the debugger's Load tensors dialog hands integer offsets to the Serving tab", async ({ page }) => {
  const cq = [0, 3, 8];
  const f = (name: string, data: ArrayLike<number>, shape: number[], dtype: 'float32' | 'int32' = 'float32') =>
    file(name, encodeNpy(data, shape, dtype));
  const t = (s: number) => Float32Array.from({ length: 8 * 2 * 4 }, (_, i) => Math.sin(i * s));
  await openApp(page);
  await page.getByRole('button', { name: 'Load tensors…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Load tensors' });
  await dialog
    .getByLabel('Tensor files')
    .setInputFiles([
      f('q.npy', t(0.3), [8, 2, 4]),
      f('k.npy', t(0.7), [8, 2, 4]),
      f('v.npy', t(1.1), [8, 2, 4]),
      f('cu_seqlens_q.npy', cq, [3], 'int32'),
    ]);
  await expect(dialog.getByTestId('serving-handoff')).toBeVisible();
  // One offsets file short: the dialog names it and stays.
  await dialog.getByRole('button', { name: 'Run them on the Serving tab' }).click();
  await expect(dialog.getByTestId('serving-handoff').getByRole('alert')).toContainText('missing: cu_seqlens_k.npy');
  await shot(page, { path: 'test-results/serving-handoff.png' });
  await dialog.getByLabel('Tensor files').setInputFiles([f('cu_seqlens_k.npy', cq, [3], 'int32')]);
  await dialog.getByRole('button', { name: 'Run them on the Serving tab' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(page.getByRole('tab', { name: 'Serving' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('serving-summary')).toContainText('packed varlen batch of 2 sequences', { timeout: 20_000 });
  await expect(page.getByTestId('serving-summary')).toContainText('inputs from files');
  expect(Number(await page.getByTestId('serving-error').textContent())).toBeLessThan(2e-5);
});
