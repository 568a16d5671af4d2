import { expect, test, type Page } from './fixtures.ts';
import { ALGORITHMS } from '../engine/algorithms/registry.ts';
import { hasHardwareModel } from '../engine/algorithms/schedule-registry.ts';
import { formForAlgorithm, formForPass } from '../app/defaults/form-defaults.ts';
import { BACKWARD_ALGORITHMS } from '../engine/algorithms/backward-registry.ts';
import { defaultGpu } from '../app/store/gpus.ts';
import { gpuById } from '../engine/hw/gpus/index.ts';
import { DEFAULT_FORM } from '../app/store/problem-form.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

// Choosing an algorithm brings its kernel's configuration (engine/defaults): a newcomer who
// picks one from the default page sees its headline views drawn, not "No hardware schedule".

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const panel = (page: Page) => page.getByRole('region', { name: 'Problem', exact: true });
const memoryMap = (page: Page) => page.getByRole('region', { name: 'Memory map' });
const timeline = (page: Page) => page.getByRole('region', { name: 'Warp-role timeline' });

test('FA4 with d = 192, dv = 128 from the default page draws its Large-Small-Large ring', async ({ page }) => {
  await openApp(page);
  await panel(page).getByLabel('Algorithm').selectOption('fa4');
  await panel(page).getByLabel('d', { exact: true }).fill('192');
  await panel(page).getByLabel('dv', { exact: true }).fill('128');
  // Up to 256 query rows the kernel runs one CTA with the uneven ring; above, it pairs CTAs
  // (2-CTA mode, half of each K/V tile per CTA: e2e/hardware.spec.ts).
  await panel(page).getByLabel('Nq', { exact: true }).fill('256');
  await expect(panel(page).getByLabel('dtype')).toHaveValue('bf16');
  // The tile is the kernel's own: the fields stay empty and the loaded run says which it is.
  await expect(panel(page).getByLabel('Br', { exact: true })).toHaveValue('');
  await expect(panel(page).getByLabel('Bc', { exact: true })).toHaveValue('');
  await expect(panel(page).getByTestId('fit-hint')).toHaveCount(0);
  await panel(page).getByRole('button', { name: 'Load problem' }).click();
  const { s } = await engineSession(formForAlgorithm({ ...DEFAULT_FORM, d: '192', dv: '128', nq: '256' }, 'fa4', ['d', 'dv', 'nq']).form);
  await expect(counter(page)).toHaveText(`Step 1 of ${s.events().length}`, { timeout: 30_000 });
  await expect(panel(page).getByTestId('run-tile')).toContainText('Br × Bc = 128 × 128');
  await expect(memoryMap(page).getByTestId('hw-status')).toContainText('NVIDIA B200', { timeout: 30_000 });
  await expect(page.getByTestId('hw-error')).toHaveCount(0);
  // The uneven ring once the first K and V tiles have landed: Large K slots (128 × 192 × 2
  // bytes) beside Small V slots (128 × 128 × 2).
  const firstV = s.events().findIndex((e) => e.kind === 'load' && e.tensors.includes('V'));
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < firstV; i++) await fwd.click();
  await expect(memoryMap(page).locator('[data-testid="smem-block"][data-tile^="K"]').first()).toHaveAttribute('data-bytes', '49152');
  await expect(memoryMap(page).locator('[data-testid="smem-block"][data-tile^="V"]').first()).toHaveAttribute('data-bytes', '32768');
  await shot(page, { path: 'test-results/defaults-fa4-192.png', fullPage: false });
});

test('a configuration the kernel cannot take says which field to change, and one click fixes it', async ({ page }) => {
  await openApp(page);
  await panel(page).getByLabel('Algorithm').selectOption('fa4');
  await panel(page).getByLabel('dtype').selectOption('fp32');
  const hint = panel(page).getByTestId('fit-hint');
  await expect(hint).toContainText('dtype: FA4 takes fp16 or bf16 inputs');
  await expect(hint).toContainText('set dtype to bf16');
  // Loaded anyway: the hardware views say the same and offer the fix with a reload.
  await panel(page).getByRole('button', { name: 'Load problem' }).click();
  await expect(memoryMap(page).getByTestId('hw-error')).toContainText('dtype: FA4 takes fp16 or bf16', { timeout: 30_000 });
  await memoryMap(page).getByRole('button', { name: 'Set dtype to bf16 and reload' }).click();
  await expect(panel(page).getByLabel('dtype')).toHaveValue('bf16');
  await expect(memoryMap(page).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('hw-error')).toHaveCount(0);
  await expect(hint).toHaveCount(0);
  // A typed value the next algorithm cannot take is replaced, and the panel says so.
  await panel(page).getByLabel('d', { exact: true }).fill('192');
  await panel(page).getByLabel('dv', { exact: true }).fill('192');
  await expect(hint).toContainText('set dv to 128');
  await hint.getByRole('button', { name: 'Set dv to 128' }).click();
  await expect(panel(page).getByLabel('dv', { exact: true })).toHaveValue('128');
  await expect(hint).toHaveCount(0);
  // Back to FA2: the person's dtype and head dims stay, the rest is FA2's own.
  await panel(page).getByLabel('Algorithm').selectOption('fa2');
  await expect(panel(page).getByLabel('dtype')).toHaveValue('bf16');
  await expect(panel(page).getByLabel('d', { exact: true })).toHaveValue('192');
  await expect(panel(page).getByLabel('Br', { exact: true })).toHaveValue('16');
  await expect(panel(page).getByLabel('Nq', { exact: true })).toHaveValue('64');
});

for (const algo of ALGORITHMS) {
  test(`from the default page: ${algo.id} loads, steps and draws its views without an error`, async ({ page }) => {
    await openApp(page);
    await panel(page).getByLabel('Algorithm').selectOption(algo.id);
    await panel(page).getByRole('button', { name: 'Load problem' }).click();
    const { s } = await engineSession(formForAlgorithm(DEFAULT_FORM, algo.id).form);
    const total = s.events().length;
    await expect(counter(page)).toHaveText(`Step 1 of ${total}`, { timeout: 30_000 });
    const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
    for (let i = 0; i < 5; i++) await fwd.click();
    await expect(counter(page)).toHaveText(`Step 6 of ${total}`);
    await page.getByRole('button', { name: 'Next iteration', exact: true }).click();
    await expect(page.getByRole('img', { name: /^Q heatmap/ })).toBeVisible();
    await expect(page.getByRole('region', { name: 'Running statistics' })).toBeVisible();
    await expect(page.locator('ol.code li.current')).toBeVisible();
    if (hasHardwareModel(algo.id)) {
      await expect(timeline(page).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
      await expect(timeline(page).getByTestId('timeline-canvas')).toBeVisible();
      await expect(memoryMap(page).getByTestId('hw-status')).toBeVisible();
      await expect(memoryMap(page).locator('[data-testid="smem-block"]').first()).toBeAttached();
    } else {
      await expect(timeline(page)).toHaveCount(0);
    }
    await expect(page.getByRole('region', { name: 'HBM traffic' })).toBeVisible();
    await expect(page.locator('.error:visible, [role="alert"]:visible')).toHaveCount(0);
    await expect(page.getByText(/No hardware schedule/)).toHaveCount(0);

    // To the last step and back: the pane shows the line the engine ends on.
    await page.getByRole('button', { name: 'End' }).click();
    await expect(counter(page)).toHaveText(`Step ${total} of ${total}`);
    await expect(page.getByTestId('where')).toContainText(s.events()[total - 1].line);
    await page.keyboard.press('Shift+ArrowLeft');
    await expect(counter(page)).not.toHaveText(`Step ${total} of ${total}`);

    // The kernels that model hardware, with a causal mask: the first Q·Kᵀ names this kernel's pseudo-code line.
    if (!hasHardwareModel(algo.id)) return;
    const causal = (await engineSession({ ...formForAlgorithm(DEFAULT_FORM, algo.id).form, causal: true })).s.events();
    await panel(page).getByLabel('Causal').check();
    await panel(page).getByRole('button', { name: 'Load problem' }).click();
    await expect(counter(page)).toHaveText(`Step 1 of ${causal.length}`, { timeout: 30_000 });
    const qk = causal.findIndex((e) => e.kind === 'qk');
    for (let i = 0; i < qk; i++) await fwd.click();
    await expect(counter(page)).toHaveText(`Step ${qk + 1} of ${causal.length}`);
    await expect(page.getByTestId('where')).toContainText(
      `S = Q·Kᵀ for Q tile ${causal[qk].tile.qBlock} × K block ${causal[qk].tile.kvBlock}`,
    );
    await expect(page.getByTestId('where')).toContainText(`${algo.id}.qk`);
    await expect(page.locator('ol.code li.current')).toBeVisible();
    await expect(page.getByLabel('Step explanation')).not.toBeEmpty();
  });
}

const gpuName = (id: string) => gpuById(id as Parameters<typeof gpuById>[0]).name;
const noErrorShown = async (page: Page) => {
  await expect(page.locator('.error:visible, [role="alert"]:visible')).toHaveCount(0);
  await expect(page.getByText(/No hardware schedule/)).toHaveCount(0);
};

for (const algo of BACKWARD_ALGORITHMS) {
  const toFa1 = hasHardwareModel(algo.id, 'backward')
    ? '; then FA1 (no hardware schedule) on the backward pass steps without an error'
    : '';
  test(`from the default page: ${algo.id}, then Backward, loads and draws its views without an error${toFa1}`, async ({ page }) => {
    await openApp(page);
    await panel(page).getByLabel('Algorithm').selectOption(algo.id);
    await panel(page).getByRole('radio', { name: 'Backward' }).click();
    const { s } = await engineSession(formForPass(formForAlgorithm(DEFAULT_FORM, algo.id).form, 'backward'));
    const total = s.events().length;
    await expect(counter(page)).toHaveText(`Step 1 of ${total}`, { timeout: 30_000 });
    for (let i = 0; i < 3; i++) await page.getByRole('button', { name: 'Step forward', exact: true }).click();
    await expect(counter(page)).toHaveText(`Step 4 of ${total}`);
    await expect(page.locator('figure[data-matrix="dQ"]')).toBeVisible();
    if (hasHardwareModel(algo.id, 'backward')) {
      await expect(timeline(page).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
      await expect(memoryMap(page).getByTestId('hw-status')).toBeVisible();
    }
    await noErrorShown(page);
    if (!toFa1) return;
    // The hardware views step aside for a kernel without a schedule; the pass stays backward.
    await panel(page).getByLabel('Algorithm').selectOption('fa1');
    await panel(page).getByRole('button', { name: 'Load problem' }).click();
    await expect(counter(page)).not.toHaveText(`Step 4 of ${total}`, { timeout: 20_000 });
    await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
    await page.getByRole('button', { name: 'Step forward', exact: true }).click();
    await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
    await expect(panel(page).getByRole('radio', { name: 'Backward' })).toHaveAttribute('aria-checked', 'true');
    await expect(timeline(page)).toHaveCount(0);
    await noErrorShown(page);
  });
}

test('compare: every algorithm a pane can pick, on both passes, loads its defaults without an error', async ({ page }) => {
  test.setTimeout(180_000);
  const pane2 = page.locator('[data-pane="cmp1"]');
  const pick = pane2.getByLabel('Pane 2 algorithm');
  // Each pass from a fresh default page: a kernel picked earlier changes the shared dtype for the next.
  for (const pass of ['backward', 'forward'] as const) {
    await openApp(page);
    await page.getByRole('tab', { name: 'Compare' }).click();
    if (pass === 'backward') {
      await page.getByRole('radiogroup', { name: 'Pass of every pane' }).getByRole('radio', { name: 'Backward' }).click();
      await expect(page.getByTestId('shared-problem')).toContainText('backward pass', { timeout: 30_000 });
    }
    const ids = pass === 'forward' ? ALGORITHMS.map((a) => a.id) : BACKWARD_ALGORITHMS.map((a) => a.id);
    for (const id of ids) {
      await pick.selectOption(id);
      await expect(pane2.getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
      await expect(page.locator('[data-pane="cmp0"]').getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
      if (hasHardwareModel(id, pass)) {
        const view = pane2.getByLabel('Pane 2 view Warp-role timeline');
        if (!(await view.isChecked())) await view.check();
        await expect(pane2.getByTestId('hw-status')).toContainText(gpuName(defaultGpu(id, pass)), { timeout: 30_000 });
      }
      await noErrorShown(page);
    }
  }
});

test("serving: every algorithm of the page's picker, varlen and paged, runs its defaults without an error", async ({ page }) => {
  test.setTimeout(180_000);
  await openApp(page);
  await page.getByRole('tab', { name: 'Serving' }).click();
  const form = page.getByRole('form', { name: 'Serving problem' });
  const step = page.getByTestId('serving-step');
  for (const layout of ['Packed varlen (cu_seqlens)', 'Paged K/V cache (block table)']) {
    await form.getByRole('radio', { name: layout }).check();
    for (const a of ALGORITHMS) {
      await form.getByLabel('Algorithm').selectOption(a.id);
      await form.getByRole('button', { name: 'Load problem' }).click();
      await expect(form.getByRole('button', { name: 'Load problem' })).toBeEnabled({ timeout: 60_000 });
      await expect(step).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
      await noErrorShown(page);
    }
  }
});

test('a compare pane that picks FA4 runs its kernel tile, and the shared problem the dtype its tensor cores take', async ({ page }) => {
  await openApp(page);
  await page.getByRole('tab', { name: 'Compare' }).click();
  const pane2 = page.locator('[data-pane="cmp1"]');
  await pane2.getByLabel('Pane 2 algorithm').selectOption('fa4');
  // Br and Bc stay empty (the kernel's own tile); the pane shows the tile its load resolved.
  await expect(pane2.getByLabel('Pane 2 Br')).toHaveValue('');
  await expect(pane2.getByLabel('Pane 2 Bc')).toHaveValue('');
  await expect(pane2.getByTestId('run-tile')).toContainText('Br × Bc = 128 × 128', { timeout: 30_000 });
  await expect(page.getByTestId('shared-problem')).toContainText('bf16', { timeout: 30_000 });
  await pane2.getByLabel('Pane 2 view Warp-role timeline').check();
  await expect(pane2.getByTestId('hw-status')).toContainText('NVIDIA B200', { timeout: 30_000 });
  await expect(page.getByTestId('hw-error')).toHaveCount(0);
  // Pane 1 (FA1) runs on the same bf16 inputs.
  await expect(page.locator('[data-pane="cmp0"]').getByTestId('step-counter')).toHaveText(/^Step 1 of \d+$/);
  await expect(page.locator('.error:visible')).toHaveCount(0);
});
