import { expect, test } from './fixtures.ts';
import { formForAlgorithm } from '../app/defaults/form-defaults.ts';
import { DEFAULT_FORM } from '../app/store/problem-form.ts';
import { counter, engineSession, openApp, shot, watchConsole } from './helpers.ts';

// FA3 at d = 256 in the debugger: the pseudo-code says why its warpgroups run side by side
// (each hardware-modelling kernel's own pseudo-code line: e2e/defaults.spec.ts).

let checkConsole: () => void;
test.beforeEach(async ({ page }) => {
  checkConsole = watchConsole(page);
});
test.afterEach(() => checkConsole());

test('fa3 at d = 256 (fp16): no scheduler barrier, so the warpgroups run side by side and the pseudo-code says why', async ({ page }) => {
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
