import { readFileSync } from 'node:fs';
import { expect, test, type Page } from './fixtures.ts';
import { DEFAULT_FORM, type ProblemForm } from '../app/store/problem-form.ts';
import { formForAlgorithm } from '../app/defaults/form-defaults.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

async function loadProblem(page: Page, form: Partial<ProblemForm>): Promise<void> {
  const panel = page.getByRole('region', { name: 'Problem' });
  if (form.algorithm) await panel.getByLabel('Algorithm').selectOption(form.algorithm);
  for (const [label, key] of [
    ['Nq', 'nq'],
    ['Nk', 'nk'],
    ['d', 'd'],
    ['dv', 'dv'],
    ['Br', 'blockM'],
    ['Bc', 'blockN'],
  ] as const) {
    const v = form[key];
    if (v !== undefined) await panel.getByLabel(label, { exact: true }).fill(String(v));
  }
  if (form.dtype) await panel.getByLabel('dtype').selectOption(form.dtype);
  await panel.getByRole('button', { name: 'Load problem' }).click();
}

const memoryMap = (page: Page) => page.getByRole('region', { name: 'Memory map' });
const timeline = (page: Page) => page.getByRole('region', { name: 'Warp-role timeline' });

const FA4: Partial<ProblemForm> = {
  algorithm: 'fa4',
  nq: '256',
  nk: '768',
  d: '192',
  dv: '128',
  blockM: '128',
  blockN: '128',
  dtype: 'bf16',
};

test('FA4 d=192, dv=128: the first eight loads land where the Large-Small-Large ring puts them', async ({ page }) => {
  const { s } = await engineSession(FA4);
  const ev = s.events();
  await openApp(page);
  await loadProblem(page, FA4);
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 30_000 });
  await expect(memoryMap(page).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });

  // SMEM layout of FA4 at d = 192, dv = 128, bf16 (flash_fwd_sm100.py@0251105a; Nq = 256 is one
  // CTA, not a 2-CTA pair, and sO shares sQ at d = 192): barriers + sScale, then two
  // Q tiles of 128×192×2 = 48 KB from byte 3072, then the K/V ring from byte 101376.
  // K tiles are Large (48 KB = 49152 B), V tiles Small (32 KB = 32768 B); stage stride
  // (L+S)/2 = 40960 B; the middle stage sits (L−S)/2 = 8192 B right of its base while it
  // holds V (Large-Small-Large) and 8192 B left when it holds K (Small-Large-Small).
  // The kernel visits K/V blocks from the last (5) down; the load warp issues K before Q0.
  const expected = [
    { tile: 'K5', offset: 101376, bytes: 49152, label: 'K5 s0' },
    { tile: 'Q0', offset: 3072, bytes: 49152, label: 'Q0' },
    { tile: 'Q1', offset: 52224, bytes: 49152, label: 'Q1' },
    { tile: 'V5', offset: 101376 + 40960 + 8192, bytes: 32768, label: 'V5 s1' },
    { tile: 'K4', offset: 101376 + 2 * 40960, bytes: 49152, label: 'K4 s2' },
    { tile: 'V4', offset: 101376, bytes: 32768, label: 'V4 s0' },
    { tile: 'K3', offset: 101376 + 40960 - 8192, bytes: 49152, label: 'K3 s1' },
    { tile: 'V3', offset: 101376 + 2 * 40960, bytes: 32768, label: 'V3 s2' },
  ];
  const capacity = 232448; // B200: 227 KB per CTA
  const loads = ev.map((e, i) => [e, i] as const).filter(([e]) => e.kind === 'load');
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  let at = 0;
  for (let k = 0; k < 8; k++) {
    const [e, step] = loads[k];
    while (at < step) {
      await fwd.click();
      at++;
    }
    await expect(counter(page)).toHaveText(`Step ${step + 1} of ${ev.length}`);
    expect(e.kind === 'load' && e.tensors.join('')).toBe(expected[k].tile[0]);
    const block = memoryMap(page).locator(`[data-testid="smem-block"][data-tile="${expected[k].tile}"]`);
    await expect(block).toHaveCount(1);
    await expect(block).toHaveAttribute('data-offset', String(expected[k].offset));
    await expect(block).toHaveAttribute('data-bytes', String(expected[k].bytes));
    await expect(block).toHaveAttribute('data-state', 'ready');
    await expect(block.locator('text')).toHaveText(expected[k].label);
    // Drawn at its byte offset on the 1000-unit strip.
    expect(Number(await block.locator('rect').getAttribute('x'))).toBeCloseTo((expected[k].offset / capacity) * 1000, 3);
    // The cursor is the end of this tile's TMA copy.
    await expect(memoryMap(page).getByTestId('hw-status')).toContainText(`tma ${expected[k].tile} (load)`);
  }
  // After V3 lands the ring holds V4 (left), K3 (middle, shifted left), V3 (right) beside Q0, Q1.
  const tiles = await memoryMap(page)
    .locator('[data-testid="smem-block"]')
    .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.tile).sort());
  expect(tiles).toEqual(expect.arrayContaining(['K3', 'Q0', 'Q1', 'V3', 'V4']));
  // TMEM: P of some block sits over the second half of S (columns 64-127 or 192-255).
  const p = memoryMap(page).locator('[data-testid="tmem-block"][data-tile^="P"]').first();
  if ((await p.count()) > 0) expect([64, 192]).toContain(Number(await p.getAttribute('data-column')));
  // Registers at d = 192 on one CTA: no _TUNING_CONFIG row, so 192 for softmax and 80 for correction.
  // The softmax warpgroups are the consumers; the row keeps the kernel's name beside ours.
  await expect(memoryMap(page).locator('[data-role="consumer0"]')).toHaveAttribute('data-registers', '192');
  await expect(memoryMap(page).locator('[data-role="consumer0"] th')).toHaveText('consumer0 (softmax0)');
  await expect(memoryMap(page).locator('[data-role="consumer1"] th')).toHaveText('consumer1 (softmax1)');
  await expect(memoryMap(page).locator('[data-role="correction"]')).toHaveAttribute('data-registers', '80');
  await expect(memoryMap(page).getByTestId('cta-pair')).toHaveCount(0);
  // The hardware explanation follows the step kind.
  await expect(page.getByTestId('hw-step-text')).toHaveAttribute('data-kind', 'load');
  await shot(page, { path: 'test-results/hardware-fa4-loads.png', fullPage: true });
});

test('FA4 2-CTA mode (d = 128, Nq = 512, not causal): the memory map shows what each CTA of the pair holds, the timeline marks the pair MMAs', async ({
  page,
}) => {
  const form: Partial<ProblemForm> = {
    algorithm: 'fa4',
    nq: '512',
    nk: '512',
    d: '128',
    dv: '128',
    blockM: '128',
    blockN: '128',
    dtype: 'bf16',
  };
  const { s } = await engineSession(form);
  const ev = s.events();
  await openApp(page);
  await loadProblem(page, form);
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 30_000 });
  await expect(memoryMap(page).getByTestId('hw-status')).toBeVisible({ timeout: 30_000 });
  const pair = memoryMap(page).getByTestId('cta-pair');
  await expect(pair).toBeVisible();
  await expect(pair.getByTestId('pair-cta')).toHaveCount(2);
  await expect(pair.locator('[data-cta="0"]')).toContainText('leader');
  await expect(pair.locator('[data-cta="1"]')).toContainText('rows 64–127 of a 128-row K or V tile');
  // Six K/V stages of half a tile (64 × 128 × 2 B = 16 KB) each, instead of three full ones.
  await expect(pair.locator('[data-cta="0"]')).toContainText('6 stages of 16 KiB');
  // _TUNING_CONFIG (2-CTA, d 128): 176 registers for softmax, 88 for correction.
  await expect(memoryMap(page).locator('[data-role="consumer0"]')).toHaveAttribute('data-registers', '176');
  await expect(memoryMap(page).locator('[data-role="correction"]')).toHaveAttribute('data-registers', '88');
  await expect(timeline(page).getByTestId('timeline-pair')).toContainText('(cta_group::2)');
  // Step to the first S = QKᵀ: the op under the cursor is a pair MMA.
  const qk = ev.findIndex((e) => e.kind === 'qk');
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < qk; i++) await fwd.click();
  await expect(counter(page)).toHaveText(`Step ${qk + 1} of ${ev.length}`);
  await expect(memoryMap(page).getByTestId('hw-status')).toContainText('(cta_group::2)');
  await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${qk + 2} of ${ev.length}`);
  await shot(page, { path: 'test-results/hardware-fa4-2cta.png', fullPage: true });
});

test('FA3: switching ping-pong off re-runs the schedule and the timeline changes; a mask_mod is noted as a what-if', async ({ page }) => {
  await openApp(page);
  await loadProblem(page, { algorithm: 'fa3', nq: '128', nk: '1024', d: '128', dv: '128', blockM: '64', blockN: '128', dtype: 'fp16' });
  const canvas = timeline(page).getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-ops', /\d+/, { timeout: 30_000 });
  // Producer, two consumers, and the split-KV combine kernel (upstream splits one 128-row tile over 1024 keys).
  await expect(canvas).toHaveAttribute('data-lanes', '4');
  const before = { ops: await canvas.getAttribute('data-ops'), cycles: await canvas.getAttribute('data-cycles') };
  const tensorBefore = Number(await timeline(page).locator('[data-family="tensor"]').getAttribute('data-value'));
  await timeline(page).getByLabel('ping-pong').uncheck();
  await expect(canvas).not.toHaveAttribute('data-cycles', before.cycles!);
  expect(await canvas.getAttribute('data-ops')).not.toBe(before.ops);
  // Without the hand-off the consumers' softmaxes coincide: the tensor cores idle more.
  await expect
    .poll(async () => Number(await timeline(page).locator('[data-family="tensor"]').getAttribute('data-value')))
    .toBeLessThan(tensorBefore);
  await timeline(page).getByLabel('ping-pong').check();
  await expect(canvas).toHaveAttribute('data-cycles', before.cycles!);
  await shot(page, { path: 'test-results/hardware-fa3-timeline.png', fullPage: true });

  // A mask_mod on FA3 is FlashScope's what-if (hopper/ takes none): the memory map's notes and upstream's why list say so.
  const panel = page.getByRole('region', { name: 'Problem' });
  await panel.getByLabel('mask_mod text', { exact: true }).fill('document:300');
  await panel.getByRole('button', { name: 'Load problem' }).click();
  await expect(memoryMap(page).locator('.hw-notes')).toContainText("FA3's kernel takes no mask_mod (hopper/flash_api.cpp mha_fwd)", {
    timeout: 30_000,
  });
  const why = memoryMap(page).getByTestId('hw-upstream');
  await why.locator('summary').focus();
  await page.keyboard.press('Enter');
  await expect(why.locator('li', { hasText: 'mha_fwd takes no mask_mod' })).toContainText('hopper/flash_api.cpp@0251105a l. 672-708');
  await shot(memoryMap(page), { path: 'test-results/hardware-fa3-mask-mod-note.png' });
});

test('FA3 at d = 256 (fp16) has no scheduler barrier: the pseudo-code says why its warpgroups run side by side, the timeline shows ping-pong disabled, and upstream’s configuration is explained', async ({
  page,
}) => {
  const form = { ...formForAlgorithm(DEFAULT_FORM, 'fa3').form, dtype: 'fp16' as const, d: '256', dv: '256', blockM: '128', blockN: '80' };
  const { s } = await engineSession(form);
  const ev = s.events();
  await openApp(page);
  const problem = page.getByRole('region', { name: 'Problem', exact: true });
  await problem.getByLabel('Algorithm').selectOption('fa3');
  await problem.getByLabel('dtype').selectOption('fp16');
  await problem.getByLabel('d', { exact: true }).fill('256');
  await problem.getByLabel('dv', { exact: true }).fill('256');
  await problem.getByRole('button', { name: 'Load problem' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${ev.length}`, { timeout: 20_000 });
  await expect(page.getByTestId('schedule-note')).toContainText(
    'No ping-pong: the kernel has no scheduler barrier for 16-bit inputs at d > 128 (UseSchedulerBarrier, hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a)',
  );
  const canvas = timeline(page).getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-ops', /\d+/, { timeout: 30_000 });
  const pp = timeline(page).getByLabel('ping-pong');
  await expect(pp).toBeDisabled();
  await expect(pp).not.toBeChecked();
  await expect(timeline(page).getByText('(not in this kernel)')).toBeVisible();
  await expect(pp).toHaveAttribute('aria-description', /UseSchedulerBarrier/);
  // The overlap switch the kernel does have stays live.
  await expect(timeline(page).getByLabel('intra-warpgroup overlap')).toBeEnabled();
  await shot(page, { path: 'test-results/hardware-fa3-d256-switches.png', fullPage: true });

  // Why upstream picks this configuration: each decision with the file and lines that make it.
  const why = memoryMap(page).getByTestId('hw-upstream');
  await why.locator('summary').focus();
  await page.keyboard.press('Enter');
  await expect(why.locator('.hw-upstream-config')).toContainText('block m 128 · block n 80');
  const tile = why.locator('li', { hasText: 'hopper/tile_size.h@0251105a l.' });
  await expect(tile).toContainText('128×80');
  await shot(why, { path: 'test-results/hardware-fa3-d256-why.png' });

  // Warpgroup 0's first row sum is followed by warpgroup 1's softmax, not by warpgroup 0's next GEMMs.
  const sum0 = ev.findIndex((e) => e.kind === 'rowsum' && e.warpgroup === 0);
  const target = sum0 + 1;
  expect(ev[target]).toMatchObject({ kind: 'rowmax', warpgroup: 1 });
  const fwd = page.getByRole('button', { name: 'Step forward', exact: true });
  for (let i = 0; i < sum0; i++) await fwd.click();
  await expect(page.getByTestId('where')).toContainText(/^Running sum ℓ of rows .* · fa3\.rowsum$/);
  await expect(page.getByTestId('where')).toContainText('warpgroup 0');
  // The rest by keyboard: the transport's arrow key steps forward.
  await fwd.focus();
  await page.keyboard.press('ArrowRight');
  await expect(counter(page)).toHaveText(`Step ${target + 1} of ${ev.length}`);
  await expect(page.getByTestId('where')).toContainText(/^Running max m of rows .* · fa3\.rowmax$/);
  await expect(page.getByTestId('where')).toContainText('warpgroup 1');
  await expect(page.locator('ol.code li.current')).toContainText('m_new = max(m, rowmax(S_next))');
  await shot(page, { path: 'test-results/fa3-d256-side-by-side.png', fullPage: true });
});

test('export: Chrome trace JSON with one track per role, and JSONL; clicking the timeline seeks the debugger; the cursor follows the step', async ({
  page,
}) => {
  await openApp(page);
  await loadProblem(page, FA4);
  const canvas = timeline(page).getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-ops', /\d+/, { timeout: 30_000 });
  const lanes = Number(await canvas.getAttribute('data-lanes'));
  const ops = Number(await canvas.getAttribute('data-ops'));

  const [chrome] = await Promise.all([
    page.waitForEvent('download'),
    timeline(page).getByRole('button', { name: 'Export Chrome trace' }).click(),
  ]);
  expect(chrome.suggestedFilename()).toBe('flashscope-fa4-b200-sm.trace.json');
  const trace = JSON.parse(readFileSync((await chrome.path())!, 'utf8')) as {
    traceEvents: { ph: string; name: string; tid: number; args?: { name?: string } }[];
  };
  const tracks = trace.traceEvents.filter((e) => e.name === 'thread_name');
  // Every role is a track (the idle "empty" warp included), each with its own thread id.
  expect(tracks.map((t) => t.args!.name!.split(' ')[0])).toEqual([
    'load',
    'mma',
    'softmax0',
    'softmax1',
    'correction',
    'epilogue',
    'empty',
  ]);
  expect(new Set(tracks.map((t) => t.tid)).size).toBe(tracks.length);
  const x = trace.traceEvents.filter((e) => e.ph === 'X');
  expect(x.length).toBe(ops);
  expect(new Set(x.map((e) => e.tid)).size).toBe(lanes);

  const [jsonl] = await Promise.all([page.waitForEvent('download'), timeline(page).getByRole('button', { name: 'Export JSONL' }).click()]);
  expect(jsonl.suggestedFilename()).toBe('flashscope-fa4-b200-sm.jsonl');
  const lines = readFileSync((await jsonl.path())!, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string });
  expect(lines[0].type).toBe('hw.header');
  expect(lines.filter((l) => l.type === 'hw.timeline').length).toBe(ops);
  expect(lines.some((l) => l.type === 'hw.memory')).toBe(true);
  expect(lines.some((l) => l.type === 'hw.step')).toBe(true);

  // The cursor waits for the step ↔ cycle map, which can land after the schedule on a busy machine.
  await expect(canvas).toHaveAttribute('data-cursor', /\d+/, { timeout: 30_000 });
  const c0 = Number(await canvas.getAttribute('data-cursor'));
  const box = (await canvas.boundingBox())!;
  // Middle of the mma lane (second lane, 24 px each), two thirds along the time axis.
  await canvas.click({ position: { x: box.width * 0.66, y: 24 + 8 } });
  await expect(counter(page)).not.toHaveText(/^Step 1 of/);
  const c1 = Number(await canvas.getAttribute('data-cursor'));
  expect(c1).toBeGreaterThan(c0);
  // Keyboard zoom on the focused timeline: + halves the window, 0 fits the whole kernel.
  const span = async () => {
    const [a, b] = (await canvas.getAttribute('data-window'))!.split(',').map(Number);
    return b - a;
  };
  const cycles = Number(await canvas.getAttribute('data-cycles'));
  await timeline(page).getByRole('button', { name: 'Fit' }).click();
  await expect.poll(span).toBe(cycles);
  await canvas.focus();
  await page.keyboard.press('+');
  await expect.poll(span).toBeLessThan(cycles * 0.6);
  await page.keyboard.press('0');
  await expect.poll(span).toBe(cycles);
  // Folding a view removes its content; unfolding brings it back at the current step.
  await memoryMap(page).getByRole('button', { name: 'Hide memory map' }).click();
  await expect(memoryMap(page).getByTestId('hw-status')).toHaveCount(0);
  await memoryMap(page).getByRole('button', { name: 'Show memory map' }).click();
  await expect(memoryMap(page).getByTestId('hw-status')).toHaveAttribute('data-cycle', String(c1));
  // Keyboard stepping moves the cursor too.
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  const text = await counter(page).textContent();
  await page.keyboard.press('ArrowRight');
  await expect(counter(page)).not.toHaveText(text!);
});

test('a kernel that does not fit says why and keeps the debugger working', async ({ page }) => {
  await openApp(page);
  // FA4 takes 16-bit inputs: an fp32 problem has no FA4 schedule.
  await loadProblem(page, { ...FA4, dtype: 'fp32' });
  await expect(memoryMap(page).getByTestId('hw-error')).toContainText('dtype: FA4 takes fp16 or bf16 inputs', { timeout: 30_000 });
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  await expect(counter(page)).toHaveText(/^Step 2 of/);
  // HBM traffic works for every algorithm: FA1 rewrites O once per K/V block, FA2 once.
  const oWritten = async (algorithm: string) => {
    await loadProblem(page, { algorithm, nq: '64', nk: '64', d: '32', dv: '32', blockM: '16', blockN: '16', dtype: 'fp32' });
    await expect(counter(page)).toHaveText(/^Step 1 of/);
    await page.getByRole('button', { name: 'End', exact: true }).click();
    await expect(counter(page)).toHaveText(/^Step (\d+) of \1$/);
    return Number(
      await page.getByRole('region', { name: 'HBM traffic' }).locator('[data-tensor="O"][data-dir="written"]').getAttribute('data-bytes'),
    );
  };
  const oBytes = 64 * 32 * 4;
  expect(await oWritten('fa2')).toBe(oBytes);
  await expect(page.getByRole('region', { name: 'Memory map' })).toHaveCount(0);
  expect(await oWritten('fa1')).toBeGreaterThanOrEqual(4 * oBytes);
});

test('fmha_v2 on the RTX 4060: four warp lanes plus the copy engine, double-buffered K/V in SMEM', async ({ page }) => {
  await openApp(page);
  await loadProblem(page, { algorithm: 'fmha-v2', nq: '128', nk: '512', d: '64', dv: '64', blockM: '32', blockN: '128', dtype: 'fp16' });
  const canvas = timeline(page).getByTestId('timeline-canvas');
  await expect(canvas).toHaveAttribute('data-lanes', '5', { timeout: 30_000 });
  await expect(timeline(page).getByLabel('GPU')).toHaveValue('rtx4060');
  // Step to the second K/V load: the next block lands in the other buffer while block 0 is in use.
  const { s } = await engineSession({
    algorithm: 'fmha-v2',
    nq: '128',
    nk: '512',
    d: '64',
    dv: '64',
    blockM: '32',
    blockN: '128',
    dtype: 'fp16',
  });
  const second = s.events().findIndex(
    (e, i) =>
      e.kind === 'load' &&
      e.tensors.includes('K') &&
      s
        .events()
        .slice(0, i)
        .some((x) => x.kind === 'load' && x.tensors.includes('K')),
  );
  await page.getByLabel('Scrubber').fill(String(second));
  await page.getByLabel('Scrubber').press('Shift');
  await expect(counter(page)).toHaveText(new RegExp(`^Step ${second + 1} of`));
  const stages = await memoryMap(page)
    .locator('[data-testid="smem-block"][data-buffer="sK"]')
    .evaluateAll((els) => els.map((e) => `${(e as HTMLElement).dataset.tile}@${(e as HTMLElement).dataset.stage}`).sort());
  expect(stages).toEqual(['K0@0', 'K1@1']);
});
