// Bringing your own tensors: files made here in the test are picked or dropped, their
// tensors listed, Q/K/V and the layout chosen, and the run stepped is the engine's run on
// exactly those values. Every malformed file and bad choice gets its message and leaves
// the loaded run as it was.

import { writeFileSync, mkdirSync, openSync, closeSync, ftruncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test, type Page } from './fixtures.ts';
import { DebuggerSession } from '../engine/debugger/session.ts';
import type { LoadRequest } from '../engine/request.ts';
import { encodeNpy } from '../engine/io/npy.ts';
import { DEFAULT_FORM, formToRequest } from '../app/store/problem-form.ts';
import { counter, openApp, shot, watchConsole } from './helpers.ts';
import { file, npy, npyWithHeader, qkvSafetensors, safetensorsWithHeader, values, type TestFile } from './tensor-files.ts';

/** The debugger's problem panel (other panels, e.g. WebGPU, have fields with the same names). */
const problem = (p: Page) => p.getByRole('region', { name: 'Problem' });

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

async function openDialog(page: Page) {
  await page.getByRole('button', { name: 'Load tensors…' }).click();
  return page.getByRole('dialog', { name: 'Load tensors' });
}

/** Drops files on the drop zone with a real DataTransfer, as a person dragging them from the desktop would. */
async function drop(page: Page, files: TestFile[]) {
  await page.getByTestId('dropzone').evaluate(
    (el, list) => {
      const dt = new DataTransfer();
      for (const f of list) dt.items.add(new File([new Uint8Array(f.bytes)], f.name));
      el.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      el.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    },
    files.map((f) => ({ name: f.name, bytes: Array.from(f.buffer) })),
  );
}

/** The request a pane sends for these files, for the engine run the page is compared with. */
async function engineRunRequest(
  files: TestFile[],
  choice: { layout: 'BHND' | 'BNHD'; batch: number; head: number },
  tensors = { q: '', k: '', v: '' },
  roles = { q: 0, k: 0, v: 0 },
): Promise<LoadRequest> {
  const names = files.map((f) => f.name);
  return {
    ...formToRequest(DEFAULT_FORM),
    tensors: {
      files: files.map((f) => new Blob([new Uint8Array(f.buffer)])),
      names,
      q: { file: roles.q, tensor: tensors.q || names[roles.q] },
      k: { file: roles.k, tensor: tensors.k || names[roles.k] },
      v: { file: roles.v, tensor: tensors.v || names[roles.v] },
      ...choice,
    },
  };
}

async function engineRun(
  files: TestFile[],
  choice: { layout: 'BHND' | 'BNHD'; batch: number; head: number },
  roles = { q: 0, k: 1, v: 2 },
  tensors = { q: '', k: '', v: '' },
) {
  const s = new DebuggerSession();
  await s.load(await engineRunRequest(files, choice, tensors, roles));
  return s;
}

test('picked .npy files (BNHD, GQA): tensors listed, layout detected, the chosen head stepped', async ({ page }) => {
  // Q [1, 40, 8, 16] and K/V [1, 24, 2, 16]: only BNHD fits (under BHND, 40 % 24 ≠ 0... and K/V lengths differ).
  const files = [npy('q.npy', [1, 40, 8, 16]), npy('k.npy', [1, 24, 2, 16], 0.7), npy('v.npy', [1, 24, 2, 16], 1.1)];
  const s = await engineRun(files, { layout: 'BNHD', batch: 0, head: 5 });
  await openApp(page);
  const dialog = await openDialog(page);
  await dialog.getByLabel('Tensor files').setInputFiles(files);
  await expect(dialog.getByRole('list', { name: 'Files found' })).toContainText('q.npy (');
  await expect(dialog.getByRole('list', { name: 'Files found' })).toContainText('q.npy · float32 [1, 40, 8, 16]');
  await expect(dialog.getByLabel('Tensor for Q')).toHaveValue('0/q.npy');
  await expect(dialog.getByLabel('Tensor for V')).toHaveValue('2/v.npy');
  await expect(dialog.getByTestId('layout-detection')).toContainText('Detected BNHD');
  await dialog.getByLabel('Import head').fill('5');
  await shot(page, { path: 'test-results/import-dialog.png' });
  await dialog.getByRole('button', { name: 'Load these tensors' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(counter(page)).toHaveText(`Step 1 of ${s.events().length}`);
  await expect(page.getByTestId('imported-inputs')).toContainText('q.npy · k.npy · v.npy, batch 0, head 5 (BNHD)');
  await expect(problem(page).getByLabel('Nq', { exact: true })).toHaveValue('40');
  await expect(problem(page).getByLabel('Nk', { exact: true })).toHaveValue('24');
  // The Q the worker steps through is head 5 of the file: row 0 of the tile numbers, value for value.
  const q = values(40 * 8 * 16, 0.3);
  await page
    .locator('figure[data-matrix="Q"] canvas')
    .first()
    .click({ position: { x: 3, y: 3 } });
  const row0 = page.locator('.tile-zoom tbody tr').first().locator('td');
  await expect(row0).toHaveText(Array.from({ length: 16 }, (_, c) => Number(q[(0 * 8 + 5) * 16 + c].toPrecision(4)).toString()));
  // "Use random inputs" goes back to the seeded problem.
  await page.getByRole('button', { name: 'Use random inputs' }).click();
  await expect(page.getByTestId('imported-inputs')).toHaveCount(0);
});

test('a dropped .safetensors file with q, k, v: names picked, both layouts fit, run matches the engine', async ({ page }) => {
  const f = qkvSafetensors('layer3.safetensors', { q: [2, 2, 32, 8], k: [2, 2, 32, 8], v: [2, 2, 32, 8] });
  const s = await engineRun([f], { layout: 'BHND', batch: 1, head: 1 }, { q: 0, k: 0, v: 0 }, { q: 'q', k: 'k', v: 'v' });
  await openApp(page);
  const dialog = await openDialog(page);
  await drop(page, [f]);
  await expect(dialog.getByRole('list', { name: 'Files found' })).toContainText('v · float32 [2, 2, 32, 8]');
  await expect(dialog.getByTestId('layout-detection')).toContainText('Both layouts fit');
  await dialog.getByLabel('Import batch').fill('1');
  await dialog.getByLabel('Import head').fill('1');
  await dialog.getByRole('button', { name: 'Load these tensors' }).click();
  await expect(counter(page)).toHaveText(`Step 1 of ${s.events().length}`);
  await page.getByRole('button', { name: 'End' }).click();
  const last = await s.seek(s.events().length - 1);
  await expect(counter(page)).toHaveText(`Step ${last.step + 1} of ${last.total}`);

  // Compare mode runs every pane on the same imported tensors.
  const fa1 = new DebuggerSession();
  await fa1.load({ ...(await engineRunRequest([f], { layout: 'BHND', batch: 1, head: 1 }, { q: 'q', k: 'k', v: 'v' })), algorithm: 'fa1' });
  await page.getByRole('tab', { name: 'Compare' }).click();
  await expect(page.getByTestId('shared-problem')).toContainText('inputs from layer3.safetensors, batch 1, head 1 (BHND)');
  await expect(page.locator('[data-pane="cmp0"]').getByTestId('step-counter')).toHaveText(`Step 1 of ${fa1.events().length}`, {
    timeout: 20_000,
  });
  const d = await fa1.compareData('h100');
  await expect(page.locator('tr[data-metric="max |error| vs float64"] td').first()).toHaveText(d.error.maxAbs.toExponential(3));
});

test('a 1.9 GB .npy is handled by reading its header and one head', async ({ page }) => {
  // Sparse file: 30720 heads × 256 × 128 fp16 = 2 013 265 920 bytes of data, zeros except head 12345.
  const dir = test.info().outputPath('big');
  mkdirSync(dir, { recursive: true });
  const shape = [1, 30720, 256, 128];
  let dict = `{'descr': '<f2', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  dict += ' '.repeat((64 - ((10 + dict.length + 1) % 64)) % 64) + '\n';
  const header = Buffer.alloc(10 + dict.length);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(header);
  header.writeUInt16LE(dict.length, 8);
  header.write(dict, 10, 'latin1');
  const head = 12345;
  const headBytes = 256 * 128 * 2;
  // The head's values as fp16 bytes: the data part of a small .npy of the same values.
  const encoded = encodeNpy(values(256 * 128, 0.01), [256 * 128], 'float16');
  const path = join(dir, 'big_q.npy');
  const fd = openSync(path, 'w');
  writeSync(fd, header, 0, header.length, 0);
  writeSync(fd, encoded, encoded.length - headBytes, headBytes, header.length + head * headBytes);
  ftruncateSync(fd, header.length + 2 * shape.reduce((a, b) => a * b, 1));
  closeSync(fd);
  const k = npy('k.npy', [1, 1, 256, 128], 0.7, 'float16');
  const v = npy('v.npy', [1, 1, 256, 128], 1.1, 'float16');
  writeFileSync(join(dir, 'k.npy'), k.buffer);
  writeFileSync(join(dir, 'v.npy'), v.buffer);

  await openApp(page);
  await problem(page).getByLabel('Br', { exact: true }).fill('64');
  await problem(page).getByLabel('Bc', { exact: true }).fill('64');
  const dialog = await openDialog(page);
  await dialog.getByLabel('Tensor files').setInputFiles([path, join(dir, 'k.npy'), join(dir, 'v.npy')]);
  await expect(dialog.getByRole('list', { name: 'Files found' })).toContainText('big_q.npy (1.88 GB, npy)');
  await expect(dialog.getByLabel('Tensor for Q')).toHaveValue('0/big_q.npy');
  await dialog.getByLabel('Import head').fill(String(head));
  await dialog.getByRole('button', { name: 'Load these tensors' }).click();
  await expect(page.getByTestId('imported-inputs')).toContainText(`head ${head} (BHND)`, { timeout: 20_000 });
  await expect(counter(page)).toHaveText(/^Step 1 of \d+$/);
  await expect(problem(page).getByLabel('dtype')).toHaveValue('fp16');
  await expect(problem(page).getByLabel('d', { exact: true })).toHaveValue('128');
});

// ——— Bad files and bad choices: each with the message a person sees. ———

const goodQ = () => npy('q.npy', [1, 2, 8, 4]);
const goodK = () => npy('k.npy', [1, 2, 8, 4], 0.7);
const goodV = () => npy('v.npy', [1, 2, 8, 4], 1.1);
const truncated = (f: TestFile, keep: number) => file(f.name, f.buffer.subarray(0, keep));

/** Files rejected when listed: [case, file, message]. */
const BAD_FILES: [string, TestFile, RegExp][] = [
  [
    'wrong magic',
    file('q.npy', new TextEncoder().encode('this is a text file, not a tensor')),
    /q\.npy: not a \.npy file \(wrong magic: found bytes 74 68 69 73 20 69/,
  ],
  ['too short for a header', file('q.npy', new Uint8Array([0x93, 0x4e, 0x55])), /only 3 bytes, too short for a \.npy header/],
  ['data truncated', truncated(npy('q.npy', [1, 2, 8, 4]), 128 + 100), /needs 256 bytes of data but the file holds 100 \(truncated\)/],
  [
    'header longer than the file',
    truncated(npy('q.npy', [1, 2, 8, 4]), 60),
    /header claims 118 bytes but the file ends after 50 \(truncated\)/,
  ],
  [
    'big-endian floats',
    npyWithHeader('q.npy', "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24),
    /big-endian float \(4 bytes\) dtype '>f4' is not supported/,
  ],
  [
    'Fortran order',
    npyWithHeader('q.npy', "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
    /Fortran-order \(column-major\) arrays are not supported/,
  ],
  ['unparseable header', npyWithHeader('q.npy', "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", 24), /malformed header/],
  [
    'unknown format version',
    npyWithHeader('q.npy', "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, 7),
    /unsupported \.npy format version 7\.0/,
  ],
  [
    'complex dtype',
    npyWithHeader('q.npy', "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 48),
    /complex \(8 bytes\) dtype '<c8' is not supported/,
  ],
  ['negative shape', npyWithHeader('q.npy', "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24), /bad 'shape'/],
  ['safetensors too short', file('w.safetensors', new Uint8Array([1, 0, 0])), /only 3 bytes, too short for a safetensors header/],
  [
    'safetensors huge header length',
    safetensorsWithHeader('w.safetensors', '{}', 0, 0xfffffff0),
    /header length 4294967280 is larger than the format allows/,
  ],
  [
    'safetensors header past the end',
    safetensorsWithHeader('w.safetensors', '{}', 0, 500),
    /header claims 500 bytes but the file has 2 after the length \(truncated\)/,
  ],
  ['safetensors header not JSON', safetensorsWithHeader('w.safetensors', '{"q": {dtype}', 0), /header is not valid UTF-8 JSON/],
  ['safetensors header is a list', safetensorsWithHeader('w.safetensors', '[1, 2]', 0), /header is not a JSON object/],
  [
    'safetensors offsets disagree with shape',
    safetensorsWithHeader('w.safetensors', '{"q":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}', 16),
    /needs 16 bytes, data_offsets span 12/,
  ],
  [
    'safetensors data truncated',
    safetensorsWithHeader('w.safetensors', '{"q":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}}', 20),
    /data ends at 64 but the file holds 20 bytes of data \(truncated\)/,
  ],
  [
    'safetensors entry without dtype',
    safetensorsWithHeader('w.safetensors', '{"q":{"shape":[1],"data_offsets":[0,4]}}', 4),
    /tensor 'q': missing dtype/,
  ],
  ['not a tensor file', file('notes.txt', new TextEncoder().encode('q k v')), /notes\.txt: not a tensor file FlashScope reads/],
];

/** Valid files whose combination or choice is wrong: [case, files, dialog edits, message]. */
type Edit = { batch?: string; head?: string; unpick?: 'V'; sinks?: string };
const BAD_CHOICES: [string, TestFile[], Edit, RegExp][] = [
  [
    'Q and K head dims differ',
    [goodQ(), npy('k.npy', [1, 2, 8, 3]), goodV()],
    {},
    /Q and K must have the same head dim \(QKᵀ\); got 4 and 3/,
  ],
  [
    'K and V lengths differ',
    [goodQ(), goodK(), npy('v.npy', [1, 2, 6, 4])],
    {},
    /K and V must have the same sequence length \(BHND\); got 8 and 6/,
  ],
  [
    'integer Q',
    [npyWithHeader('q.npy', "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 8, 4), }", 256), goodK(), goodV()],
    {},
    /Q \(q\.npy\): holds int32 values \(signed integer\); attention tensors must be float16, bfloat16, float32 or float64/,
  ],
  ['Q of rank 2', [npy('q.npy', [8, 4]), goodK(), goodV()], {}, /Q \(q\.npy, shape \[8, 4\]\) must have 4 dimensions/],
  [
    'heads do not divide',
    [npy('q.npy', [1, 3, 6, 4]), goodK(), goodV()],
    {},
    /query heads \(3\) must be a multiple of key\/value heads \(2\)/,
  ],
  ['batch sizes differ', [npy('q.npy', [2, 2, 8, 4]), goodK(), goodV()], {}, /Q, K and V must have the same batch size; got 2, 1, 1/],
  [
    'NaN in Q',
    [file('q.npy', encodeNpy(Object.assign(values(64, 0.3), { 37: NaN }), [1, 2, 8, 4])), goodK(), goodV()],
    { head: '1' },
    /Q holds NaN at row 1, column 1 of batch 0, head 1/,
  ],
  [
    'Infinity in V',
    [goodQ(), goodK(), file('v.npy', encodeNpy(Object.assign(values(64, 1.1), { 6: Infinity }), [1, 2, 8, 4]))],
    {},
    /V holds Infinity at row 1, column 2 of batch 0, head 0/,
  ],
  ['head out of range', [goodQ(), goodK(), goodV()], { head: '5' }, /head 5 is out of range: Q has 2 heads \(0 to 1\)/],
  ['batch out of range', [goodQ(), goodK(), goodV()], { batch: '3' }, /batch 3 is out of range: the tensors have 1 \(0 to 0\)/],
  ['batch not a number', [goodQ(), goodK(), goodV()], { batch: 'x' }, /batch: must be a whole number ≥ 0, got "x"/],
  ['V not picked', [goodQ(), goodK(), npy('values_other.npy', [1, 2, 8, 4])], { unpick: 'V' }, /Pick a tensor for V\./],
  [
    'sinks of the wrong length',
    [goodQ(), goodK(), goodV(), npy('sinks.npy', [3])],
    {},
    /sinks \(sinks\.npy, shape \[3\]\) must be 1-D with one value per query head \(2\)/,
  ],
  [
    'non-finite sink',
    [goodQ(), goodK(), goodV(), file('sinks.npy', encodeNpy([0.5, NaN], [2]))],
    { head: '1' },
    /sinks \(sinks\.npy\) holds NaN for head 1; it must be finite/,
  ],
];

test(`${BAD_FILES.length} malformed files are each named with what is wrong; the loaded run is untouched`, async ({ page }) => {
  await openApp(page);
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  // Wait for the step to land before taking the position every bad file must leave alone.
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  const before = await counter(page).textContent();
  for (const [, f, message] of BAD_FILES) {
    const dialog = await openDialog(page);
    await dialog.getByLabel('Tensor files').setInputFiles([f]);
    await expect(dialog.getByRole('alert')).toHaveText(message);
    await expect(dialog.getByRole('button', { name: 'Load these tensors' })).toBeDisabled();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  }
  await expect(counter(page)).toHaveText(before!);
  await expect(page.getByTestId('imported-inputs')).toHaveCount(0);
});

test(`${BAD_CHOICES.length} bad combinations and choices are each explained; the loaded run is untouched`, async ({ page }) => {
  await openApp(page);
  await page.getByRole('button', { name: 'Step forward', exact: true }).click();
  // Wait for the step to land before taking the position every bad choice must leave alone.
  await expect(counter(page)).toHaveText(/^Step 2 of \d+$/);
  const before = await counter(page).textContent();
  for (const [name, files, edit, message] of BAD_CHOICES) {
    const dialog = await openDialog(page);
    await dialog.getByLabel('Tensor files').setInputFiles(files);
    await expect(dialog.getByLabel('Tensor for Q'), name).not.toHaveValue('');
    if (edit.unpick) await dialog.getByLabel(`Tensor for ${edit.unpick}`).selectOption('');
    if (edit.batch) await dialog.getByLabel('Import batch').fill(edit.batch);
    if (edit.head) await dialog.getByLabel('Import head').fill(edit.head);
    await dialog.getByRole('button', { name: 'Load these tensors' }).click();
    await expect(dialog.getByTestId('import-error'), name).toHaveText(message);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  }
  await expect(counter(page)).toHaveText(before!);
  await expect(page.getByTestId('imported-inputs')).toHaveCount(0);
});
