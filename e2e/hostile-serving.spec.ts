// Hostile serving files: a valid but very wide block table draws only the cells in view (a DOM
// cell per column would freeze the page), and a bad file is named.

import { expect, test, type Page } from './fixtures.ts';
import { encodeNpy } from '../engine/io/npy.ts';
import { file } from './tensor-files.ts';
import { openApp, shot, watchConsole } from './helpers.ts';

const sp = (page: Page) => page.getByTestId('serving-page');
const f = (name: string, data: ArrayLike<number>, shape: number[], dtype: 'float32' | 'int32' = 'float32') =>
  file(name, encodeNpy(data, shape, dtype));

/** Two sequences of 6 and 3 tokens in pages of 4 over a pool of 5 pages, with a block table `width` columns wide. */
async function runPaged(page: Page, width: number, blockTable = f('bt.npy', wideTable(width), [2, width], 'int32')): Promise<void> {
  const PS = 4;
  const pool = Float32Array.from({ length: 5 * PS * 4 }, (_, i) => Math.sin(i * 0.37));
  const q = Float32Array.from({ length: 2 * 4 }, (_, i) => Math.sin(i * 0.9));
  await sp(page)
    .getByLabel('q file', { exact: true })
    .setInputFiles(f('q.npy', q, [2, 1, 1, 4]));
  await sp(page)
    .getByLabel('k_cache file')
    .setInputFiles(f('kc.npy', pool, [5, PS, 1, 4]));
  await sp(page)
    .getByLabel('v_cache file')
    .setInputFiles(f('vc.npy', pool, [5, PS, 1, 4]));
  await sp(page).getByLabel('block_table file').setInputFiles(blockTable);
  await sp(page)
    .getByLabel('cache_seqlens file')
    .setInputFiles(f('cs.npy', [6, 3], [2], 'int32'));
  await sp(page).getByRole('button', { name: 'Run on files' }).click();
}

function wideTable(width: number): Int32Array {
  const t = new Int32Array(2 * width);
  t.set([2, 1], 0);
  t.set([4], width);
  return t;
}

test('a [2, 1000000] block table draws only the cells in view, scrolls, and a bad file is named with the page still usable', async ({
  page,
}) => {
  const checkConsole = watchConsole(page);
  await openApp(page);
  await page.getByRole('tab', { name: 'Serving' }).click();
  await sp(page).getByLabel('Paged K/V cache (block table)').check();
  await sp(page).getByText('Load tensors…').click();
  await runPaged(page, 1_000_000);
  await expect(page.getByTestId('serving-summary')).toContainText('inputs from files', { timeout: 30_000 });
  await expect(page.getByTestId('bt-extent')).toContainText('2 sequences × 1000000 pages');
  await expect(page.getByTestId('bt-0-1')).toContainText('→ 1');
  // A few dozen cells, not 2 000 000.
  expect(await page.locator('.block-table td').count()).toBeLessThan(200);
  await shot(page.getByTestId('paged-view'), { path: 'test-results/hostile-serving-wide.png' });
  // Scrolled to the far end, the last columns are drawn (and they are past every sequence's pages).
  await page.getByRole('region', { name: 'Block table', exact: true }).evaluate((el) => {
    el.scrollLeft = el.scrollWidth;
  });
  await expect(page.locator('.block-table th', { hasText: 'page 999999' })).toBeVisible();
  await shot(page.getByTestId('paged-view'), { path: 'test-results/hostile-serving-wide-end.png' });
  expect(await page.locator('.block-table td').count()).toBeLessThan(200);
  // A file that is not a tensor file: named, and the run shown stays.
  await runPaged(page, 2, file('bt.npy', new Uint8Array([1, 2, 3])));
  await expect(page.getByTestId('serving-error-msg')).toContainText('bt.npy');
  await expect(page.getByTestId('bt-extent')).toContainText('2 sequences × 1000000 pages');
  checkConsole();
});
