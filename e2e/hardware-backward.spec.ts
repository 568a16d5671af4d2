// The hardware views on a backward run: the FA3 backward schedule on the SM of the step's
// column block, the cursor where the engine's step map puts it (computed here in Node from
// the same trace), the dQ add on the dQ writer, the preprocessing step off this kernel,
// clicking the timeline to seek, the FA2 backward on the A100, and FA4's on the B200.

import { expect, test, type Page } from './fixtures.ts';
import { DEFAULT_FORM, type ProblemForm } from '../app/store/problem-form.ts';
import { defaultSharedState, encodeState } from '../app/share/url-state.ts';
import { DEFAULT_VIEWS } from '../app/views/registry.ts';
import { smScheduleFor } from '../engine/algorithms/schedule-registry.ts';
import { counter, engineSession, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

const timeline = (page: Page) => page.getByRole('region', { name: 'Warp-role timeline' });
const memoryMap = (page: Page) => page.getByRole('region', { name: 'Memory map' });

const FA3: Partial<ProblemForm> = {
  algorithm: 'fa3',
  pass: 'backward',
  nq: '160',
  nk: '256',
  d: '128',
  dv: '128',
  blockM: '80',
  blockN: '128',
  dtype: 'fp16',
};

async function openAt(page: Page, form: Partial<ProblemForm>, step: number) {
  const s = defaultSharedState(DEFAULT_VIEWS);
  s.form = { ...DEFAULT_FORM, ...form };
  s.step = step;
  await page.goto(`/${encodeState(s)}`);
}

test("FA3 backward: the SM of the step's column block, the dQ add on the dQ writer, the cursor of the engine's map", async ({ page }) => {
  const { s, req } = await engineSession(FA3);
  const ev = s.events();
  const step = ev.findIndex((e) => e.kind === 'dq' && e.tile.cols[0] === 128 && e.tile.rows[0] === 80);
  expect(step).toBeGreaterThan(0);
  const want = smScheduleFor({ algorithm: 'fa3', gpu: 'h100', problem: req.problem, features: {}, step, pass: 'backward' }, ev);
  // reverseKv, set as on a forward, is the forward kernel's switch: the backward loads without it and the panel says so.
  await openAt(page, { ...FA3, switches: { reverseKv: false } }, step);
  await expect(counter(page)).toHaveText(`Step ${step + 1} of ${ev.length}`, { timeout: 30_000 });
  await expect(page.getByTestId('forward-only-switches')).toContainText('reverseKv');
  await expect(page.getByTestId('forward-only-switches')).toContainText('the backward runs without them');

  const status = timeline(page).getByTestId('hw-status');
  await expect(status).toBeVisible({ timeout: 30_000 });
  await expect(status).toContainText('NVIDIA H100');
  await expect(status).toContainText('CTA 2 of 2 (b0 h0 keys 128–255, rows 0–159)');
  await expect(status).toContainText(`Step ${step + 1} (dq) → ends with tma reduce-add dQ1.1 (dq_writer)`);
  await expect(status).toHaveAttribute('data-how', 'op');
  await expect(status).toHaveAttribute('data-cycle', String(Math.round(want.view.map.stepCycle[step])));
  const canvas = timeline(page).getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-lanes', String(want.view.roles.length));
  expect(want.view.roles.map((r) => r.name)).toEqual(['producer', 'dq_writer', 'consumer0', 'consumer1']);
  // Only SM90 GPUs run the FA3 backward.
  await expect(timeline(page).getByLabel('GPU').locator('option')).toHaveText(['NVIDIA H100 SXM5 80GB', 'NVIDIA H200 SXM 141GB']);
  // The memory map draws the backward's SMEM at the cursor: the dS tile of row block 1 is there.
  await expect(memoryMap(page).getByTestId('hw-status')).toHaveAttribute('data-cycle', String(Math.round(want.view.map.stepCycle[step])));
  expect(await memoryMap(page).locator('[data-testid="smem-block"]').count()).toBeGreaterThan(0);
  await shot(page, { path: 'test-results/hardware-backward-fa3.png', fullPage: true });

  // Step 1 is D = rowsum(dO ∘ O): a kernel of its own, before this one.
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('Home');
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`);
  const dsum = ev.findIndex((e) => e.kind === 'dsum');
  await page.keyboard.press('ArrowRight');
  for (let i = 1; i < dsum; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${dsum + 1} of ${ev.length}`);
  await expect(status).toContainText('the preprocessing kernel, launched before this one');

  // Clicking an op of the timeline seeks to a backward step of this SM's column block.
  const box = (await canvas.boundingBox())!;
  await canvas.click({ position: { x: box.width * 0.5, y: 24 + 8 } });
  await expect(counter(page)).not.toHaveText(`Step ${dsum + 1} of ${ev.length}`);
  const now = Number(/Step (\d+)/.exec((await counter(page).textContent())!)![1]) - 1;
  expect(ev[now].tile.cols[0]).toBeGreaterThanOrEqual(0);
  await expect(status).toHaveAttribute('data-how', /op|approx|before/);
});

test('FA2 backward starts on the A100 and shows its eight warps with the dQ atomics', async ({ page }) => {
  const form: Partial<ProblemForm> = {
    algorithm: 'fa2',
    pass: 'backward',
    nq: '128',
    nk: '128',
    d: '64',
    dv: '64',
    blockM: '64',
    blockN: '64',
    dtype: 'fp16',
  };
  const { s } = await engineSession(form);
  const ev = s.events();
  const step = ev.findIndex((e) => e.kind === 'dq' && e.tile.rows[0] === 64 && e.tile.cols[0] === 64);
  await openAt(page, form, step);
  await expect(counter(page)).toHaveText(`Step ${step + 1} of ${ev.length}`, { timeout: 30_000 });
  const status = timeline(page).getByTestId('hw-status');
  await expect(status).toContainText('NVIDIA A100', { timeout: 30_000 });
  await expect(timeline(page).getByLabel('GPU')).toHaveValue('a100');
  // 128×128 kernel tiles at d = 64: one CTA holds both numeric 64-key blocks; the add of row block 0 ends the step.
  await expect(status).toContainText('(b0 h0 keys 0–127, rows 0–127)');
  await expect(status).toContainText(/→ ends with atomicAdd dQ0 \(warp\d\)/);
  // Eight warp lanes and the lane the chart adds for copies when no role only loads.
  await expect(timeline(page).getByTestId('timeline-canvas')).toHaveAttribute('data-lanes', '9');
  // Choosing the H100 re-runs the same kernel there.
  await timeline(page).getByLabel('GPU').selectOption('h100');
  await expect(status).toContainText('NVIDIA H100', { timeout: 30_000 });
});

test('Backward from the default page lands on a dtype the FA2 backward kernel takes, a typed fp32 gets the fix offered, FA4 then its B200 backward', async ({
  page,
}) => {
  await page.goto('/');
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/, { timeout: 30_000 });
  const problem = page.getByRole('region', { name: 'Problem', exact: true });
  await problem.getByRole('radio', { name: 'Backward' }).click();
  await expect(problem.getByLabel('dtype')).toHaveValue('fp16');
  await expect(memoryMap(page).getByTestId('hw-status')).toContainText('NVIDIA A100', { timeout: 30_000 });
  await expect(timeline(page).getByTestId('hw-status')).toBeVisible();
  await expect(page.getByTestId('hw-error')).toHaveCount(0);
  await shot(page, { path: 'test-results/backward-default.png' });
  // Back to the forward: its own fp32 again.
  await problem.getByRole('radio', { name: 'Forward' }).click();
  await expect(problem.getByLabel('dtype')).toHaveValue('fp32');
  // fp32 typed by the person stays theirs: the views say why not, and one click changes it.
  await problem.getByLabel('dtype').selectOption('fp32');
  await problem.getByRole('radio', { name: 'Backward' }).click();
  await expect(problem.getByLabel('dtype')).toHaveValue('fp32');
  await expect(timeline(page).getByTestId('hw-error')).toContainText('the FA2 backward takes fp16 or bf16', { timeout: 30_000 });
  const fix = timeline(page).getByTestId('hw-fix');
  await expect(fix).toContainText('To draw it, set dtype to fp16.');
  await fix.getByRole('button', { name: 'Set dtype to fp16 and reload' }).click();
  await expect(problem.getByLabel('dtype')).toHaveValue('fp16');
  await expect(memoryMap(page).getByTestId('hw-status')).toContainText('NVIDIA A100', { timeout: 30_000 });
  await expect(timeline(page).getByTestId('hw-error')).toHaveCount(0);
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);

  // FA4 with the backward still chosen: the B200, flash_bwd_sm100.py's warp roles and TMEM.
  await problem.getByLabel('Algorithm').selectOption('fa4');
  await page.getByRole('button', { name: 'Load problem' }).click();
  await expect(problem.getByRole('radio', { name: 'Backward' })).toHaveAttribute('aria-checked', 'true');
  const status = timeline(page).getByTestId('hw-status');
  await expect(status).toContainText('NVIDIA B200', { timeout: 30_000 });
  await expect(timeline(page).getByLabel('GPU')).toHaveValue('b200');
  await expect(timeline(page).getByTestId('hw-error')).toHaveCount(0);
  // The problem the panel now holds, run in Node for the step of the first dQ add.
  const field = (label: string) => problem.getByLabel(label, { exact: true }).inputValue();
  const fa4: Partial<ProblemForm> = {
    algorithm: 'fa4',
    pass: 'backward',
    nq: await field('Nq'),
    nk: await field('Nk'),
    d: await field('d'),
    dv: await field('dv'),
    dtype: (await problem.getByLabel('dtype').inputValue()) as ProblemForm['dtype'],
    blockM: '',
    blockN: '',
  };
  expect(fa4.d).toBe('128');
  const ev = (await engineSession(fa4)).s.events();
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 30_000 });
  // d = 128: one CTA of a 2-CTA pair: load, mma, two compute warpgroups, the relay warp, the reduce warps.
  await expect(timeline(page).getByTestId('timeline-canvas')).toHaveAttribute('data-lanes', '6');
  await expect(memoryMap(page).getByTestId('hw-status')).toContainText('NVIDIA B200');
  await expect(memoryMap(page).locator('[data-testid="reg-role"][data-role="reduce"]')).toHaveAttribute('data-registers', '136');
  // Stepping to the first dQ add puts the cursor on the reduce warps' last TMA reduce-add of row block 0.
  const dq = ev.findIndex((e) => e.kind === 'dq');
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('Home');
  for (let i = 0; i < dq; i++) await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${dq + 1} of ${ev.length}`);
  await expect(status).toContainText(new RegExp(`Step ${dq + 1} \\(dq\\) → ends with tma reduce-add dQ0\\[\\d+\\] \\(reduce\\)`));
  // There the memory map holds the CTA's TMEM accumulators (dV, dK live for the whole loop).
  await expect(memoryMap(page).getByTestId('tmem-block').first()).toBeVisible();
  await shot(page, { path: 'test-results/hardware-backward-fa4.png', fullPage: true });
});
