// The WebGPU panel: adapter shown, a full run on the GPU (SwiftShader here) with its result
// view checked against the CPU reference, the CPU toggle, a bad value that keeps
// everything, and the hand-off to the step debugger.

import { expect, test } from './fixtures.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

test.describe.configure({ timeout: 180_000 });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

test('toggle the backend, run a problem, read the result view', async ({ page }) => {
  // A short window keeps the panel well below the debugger while the page fills in.
  await page.setViewportSize({ width: 1440, height: 600 });
  await openApp(page);
  const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
  // Below the debugger, the panel starts its worker and looks for an adapter only once reached.
  const gpuWorkers = () => page.workers().filter((w) => w.url().includes('webgpu.worker')).length;
  await expect(panel.getByRole('status', { name: 'adapter' })).toHaveText('Looking for a WebGPU adapter…');
  await page.waitForTimeout(500);
  expect(gpuWorkers()).toBe(0);
  await panel.scrollIntoViewIfNeeded();
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('swiftshader', { timeout: 30_000 });
  expect(gpuWorkers()).toBe(1);
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('subgroups');
  // what one binding holds, and what happens past it
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText(
    /limits: .* per binding \(larger tensors run in windows of batches or heads\), .* per buffer/,
  );

  const set = async (label: string, value: string) => panel.getByLabel(label, { exact: true }).fill(value);
  await set('B', '1');
  await set('Hq', '2');
  await set('Hk', '1');
  await set('Nq', '150');
  await set('Nk', '230');
  await set('d', '32');
  await set('dv', '16');
  await panel.getByLabel('causal').check();
  await panel.getByLabel('kernel path').selectOption('flash-subgroups');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();

  const check = panel.getByTestId('wg-check');
  await expect(check).toContainText('sampled rows vs float64 CPU reference', { timeout: 120_000 });
  const err = Number((await check.textContent())!.match(/max \|ΔO\| = ([0-9.e+-]+)/)![1]);
  expect(err).toBeLessThan(1e-5);
  // Timed as the benchmark times: warm-up, then the median of back-to-back repetitions (steady-timing.ts).
  await expect(panel.getByTestId('wg-time')).toHaveText(
    /ms \(GPU timestamps, median of 5 (× \d+ runs back to back|runs) after \d+ ms of warm-up\)$/,
  );
  await expect(panel.getByRole('img', { name: 'output heatmap' })).toBeVisible();
  await expect(panel.getByRole('img', { name: 'LSE per row' })).toBeVisible();
  await expect(panel.locator('figcaption').first()).toContainText('75×16 cells, each the mean of a 2×1 block'); // 150 rows > 128 cells: pairs of rows averaged;
  await expect(panel.getByLabel('result')).toContainText('f32 + subgroup row reductions');
  // d = 32 runs the row kernel; the result names the kernel configuration that ran
  await expect(panel.getByLabel('result')).toContainText('row kernel: 2 rows per 2 lanes (subgroup shuffles)');
  await shot(panel, { path: 'test-results/webgpu-panel.png' });

  // A bad value: clear message naming the field; the typed text and the last result stay.
  await set('Nq', 'abc');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  await expect(panel.getByRole('alert')).toContainText('nq: must be a whole number, got "abc"');
  await expect(panel.getByLabel('Nq', { exact: true })).toHaveValue('abc');
  await expect(check).toBeVisible();

  // The CPU toggle runs the FA2 step engine on the same problem.
  await set('Nq', '150');
  await panel.getByRole('radio', { name: 'CPU (FA2 step engine)' }).check();
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  await expect(panel.getByLabel('result')).toContainText('CPU (FA2 step engine)', { timeout: 60_000 });
  const cpuErr = Number((await check.textContent())!.match(/max \|ΔO\| = ([0-9.e+-]+)/)![1]);
  expect(cpuErr).toBeLessThan(1e-5);

  // Hand-off to the step debugger at a size that steps.
  await panel.getByRole('button', { name: 'Open in step debugger' }).click();
  await expect(panel.getByText(/Copied to the step debugger's problem form at B=1, H=1, Nq=128, Nk=128/)).toBeVisible();
  // The problem panel shows the problem handed over, scaled down.
  const problem = page.getByRole('complementary', { name: 'Problem and breakpoints' }).first();
  await expect(problem.getByLabel('Nq', { exact: true })).toHaveValue('128');
  await expect(problem.getByLabel('Nk', { exact: true })).toHaveValue('128');
  await expect(problem.getByLabel('Hq', { exact: true })).toHaveValue('1');
});

test('a kernel path brings its own shape, and standard attention past one binding names the fix; a preset fills in a benchmark shape, clears the modifiers and picks the decoding kernel for decoding shapes', async ({
  page,
}) => {
  await openApp(page);
  const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
  await panel.scrollIntoViewIfNeeded();
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('swiftshader', { timeout: 30_000 });
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('limits:');
  const field = (label: string) => panel.getByLabel(label, { exact: true });
  await panel.getByLabel('kernel path').selectOption('decode');
  await expect(field('Nq')).toHaveValue('1');
  await expect(field('Nk')).toHaveValue('32768');
  await expect(field('d')).toHaveValue('128');
  await field('Hq').fill('32');
  await panel.getByLabel('kernel path').selectOption('flash-f32');
  await expect(field('Nq')).toHaveValue('4096');
  await expect(field('Hq')).toHaveValue('32');
  await panel.getByLabel('kernel path').selectOption('standard');
  await field('Nq').fill('65536');
  await field('Nk').fill('65536');
  const fit = panel.getByTestId('wg-fit');
  await expect(fit).toContainText("binds one head's 65536×65536 fp32 score matrix");
  const button = fit.getByRole('button');
  const [, nq] = /Set Nq to (\d+)/.exec((await button.textContent()) ?? '') ?? [];
  await button.click();
  await expect(field('Nq')).toHaveValue(nq);
  await expect(field('Nk')).toHaveValue(nq);
  await expect(fit).toHaveCount(0);

  // Presets: a benchmark shape replaces the modifiers set here.
  await panel.getByLabel('causal').check();
  await panel.getByLabel('softcap', { exact: true }).fill('30');

  const preset = panel.getByLabel('preset', { exact: true });
  await preset.focus();
  await preset.selectOption({ label: 'GQA decoding: B=1 Hq=32 Hk=8 Nq=1 Nk=131072 d=128' });
  for (const [label, value] of [
    ['B', '1'],
    ['Hq', '32'],
    ['Hk', '8'],
    ['Nq', '1'],
    ['Nk', '131072'],
    ['d', '128'],
    ['dv', '128'],
    ['softcap', ''],
  ]) {
    await expect(panel.getByLabel(label, { exact: true })).toHaveValue(value);
  }
  await expect(panel.getByLabel('causal')).not.toBeChecked();
  await expect(panel.getByLabel('kernel path')).toHaveValue('decode');

  // A non-decoding preset keeps the kernel the person picked, and the select returns to its prompt.
  await panel.getByLabel('kernel path').selectOption('flash-subgroups');
  await preset.selectOption({ label: 'one batch of 128 heads: B=1 H=128 N=65536 d=64 (windows of heads)' });
  await expect(panel.getByLabel('Hq', { exact: true })).toHaveValue('128');
  await expect(panel.getByLabel('Nq', { exact: true })).toHaveValue('65536');
  await expect(panel.getByLabel('kernel path')).toHaveValue('flash-subgroups');
  await expect(preset).toHaveValue('');

  // From the keyboard: the arrow key on the focused select applies the first preset.
  await preset.focus();
  await page.keyboard.press('ArrowDown');
  await expect(panel.getByLabel('B', { exact: true })).toHaveValue('4');
  await expect(panel.getByLabel('Nq', { exact: true })).toHaveValue('4096');
  await expect(panel.getByLabel('d', { exact: true })).toHaveValue('64');
  await shot(panel, { path: 'test-results/webgpu-presets.png' });
});

test('Backward: the forward and the backward kernels run on the GPU, dQ rows checked against float64; the CPU choice waits', async ({
  page,
}) => {
  await openApp(page);
  const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
  await panel.scrollIntoViewIfNeeded();
  await expect(panel.getByRole('status', { name: 'adapter' })).toContainText('swiftshader', { timeout: 30_000 });
  const set = async (label: string, value: string) => panel.getByLabel(label, { exact: true }).fill(value);
  for (const [label, value] of [
    ['B', '1'],
    ['Hq', '4'],
    ['Hk', '2'],
    ['Nq', '70'],
    ['Nk', '90'],
    ['d', '16'],
    ['dv', '8'],
    ['softcap', '4'],
  ] as const)
    await set(label, value);
  await panel.getByLabel('causal').check();
  // Keyboard: the pass radios are reached and chosen like any radio group.
  await panel.getByRole('radio', { name: 'Forward' }).focus();
  await page.keyboard.press('ArrowRight');
  await expect(panel.getByRole('radio', { name: 'Backward' })).toBeChecked();
  await expect(panel.getByTestId('wg-pass-note')).toContainText('2.5 × the forward');
  // The backward's kernels: f32 here; SwiftShader has no f16 subgroup matrices, so that one is named but not offered.
  const bwdKernel = panel.getByLabel('backward kernel');
  await expect(bwdKernel).toHaveValue('flash-f32');
  await expect(bwdKernel.locator('option[value="flash-matrix"]')).toBeDisabled();
  await expect(bwdKernel.locator('option[value="flash-matrix"]')).toHaveText(
    'f16 subgroup matrices (tensor cores): not offered by this adapter',
  );
  await expect(panel.getByTestId('wg-pass-note')).toContainText('f32, no atomics');
  await expect(panel.getByRole('radio', { name: 'CPU (FA2 step engine)' })).toBeDisabled();
  await expect(panel.getByLabel('kernel path')).toHaveCount(0);
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  const grad = panel.getByTestId('wg-grad-check');
  await expect(grad).toContainText('4 sampled dQ rows vs float64', { timeout: 120_000 });
  expect(Number((await grad.textContent())!.match(/max \|ΔdQ\| = ([0-9.e+-]+)/)![1])).toBeLessThan(1e-5);
  await expect(panel.getByLabel('result')).toContainText('backward, f32 (after the flash-f32 forward)');
  await expect(panel.getByLabel('result')).toContainText('dK, dV');
  await expect(panel.locator('figcaption').first()).toContainText('dQ of batch 0, head 0');
  await shot(panel, { path: 'test-results/webgpu-panel-backward.png' });
  // Back to the forward: the kernel choice and the CPU engine return.
  await panel.getByRole('radio', { name: 'Forward' }).check();
  await expect(panel.getByLabel('kernel path')).toBeVisible();
  await expect(panel.getByRole('radio', { name: 'CPU (FA2 step engine)' })).toBeEnabled();
});

test('the form takes a mask: a mistake is pointed at and runs nothing; a document mask runs on the CPU engine against float64', async ({
  page,
}) => {
  await openApp(page);
  const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
  await panel.scrollIntoViewIfNeeded();
  const set = async (label: string, value: string) => panel.getByLabel(label, { exact: true }).fill(value);
  await set('B', '1');
  await set('Hq', '2');
  await set('Hk', '2');
  await set('Nq', '96');
  await set('Nk', '96');
  await set('d', '16');
  await set('dv', '16');
  const sparse = panel.getByLabel('block-sparse');
  await expect(sparse).toBeDisabled();
  const text = panel.getByLabel('mask_mod text', { exact: true });
  await text.fill('kv_idx <= foo');
  await expect(panel.getByText("mask_mod: column 11: unknown name 'foo'")).toBeVisible();
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  await expect(panel.getByRole('alert')).toContainText("unknown name 'foo'");
  await expect(panel.getByTestId('wg-check')).toHaveCount(0);

  await panel.getByLabel('mask_mod preset', { exact: true }).selectOption('document');
  await expect(panel.getByText('runs as')).toContainText('doc[q_idx + (nk - nq)] == doc[kv_idx]');
  await expect(sparse).toBeEnabled();
  await sparse.check();
  // The CPU engine compiles no kernel: the FA2 stepper walks the same mask.
  await panel.getByRole('radio', { name: 'CPU (FA2 step engine)' }).check();
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  const check = panel.getByTestId('wg-check');
  await expect(check).toContainText('sampled rows vs float64 CPU reference', { timeout: 60_000 });
  expect(Number((await check.textContent())!.match(/max \|ΔO\| = ([0-9.e+-]+)/)![1])).toBeLessThan(1e-5);
  await shot(page, { path: test.info().outputPath('webgpu-mask.png'), fullPage: true });
  // Flash-decoding takes the mask as well and always walks the block list (engine/webgpu/mask-gpu.test.ts runs it).
  await panel.getByRole('radio', { name: 'WebGPU' }).check();
  await panel.getByLabel('kernel path').selectOption('decode');
  await expect(sparse).toBeChecked();
  await expect(sparse).toBeDisabled();
  await expect(panel.getByTitle(/flash-decoding with a mask always walks the block list/)).toBeVisible();
  await shot(panel, { path: test.info().outputPath('webgpu-mask-decode.png') });
});
