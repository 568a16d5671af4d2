// The WebGPU panel in Chromium on a GPU machine: opens the production build, runs the panel's
// flash-matrix forward at B 4 H 16 N 4096/8192 d 64/128 (causal and not), the flash-matrix
// backward and decoding, and prints what the panel shows (time, TFLOP/s, configuration, the
// float64 check) as JSON lines, plus the adapter line. Recipe: BENCHMARKS.md, "Browser on the
// GPU machine".
//
//   CHROMIUM=/path/to/chromium PLAYWRIGHT_CORE=/path/to/playwright-core URL=http://127.0.0.1:4173/ \
//     node scripts/browser-gpu-bench.mjs [--quick] [--gpu-info] [--study]
//
// ROWS=regex runs only the rows whose name matches (e.g. ROWS=decode).
// --gpu-info first prints chrome://gpu as text (Dawn's adapter toggles are in its "Dawn Info").
// --study opens STUDY_URL (default: timing-study.html beside URL; the page is
// scripts/timing-study-page.ts bundled, with scripts/timing-study.html) instead of the panel and
// prints its rows: the same runs timed the panel's old way (one warm-up, one run) and steadily
// (engine/bench/timing-study.ts), for comparison with `bench:webgpu -- --timing-study` under Node.
//
// Flags: headless, no sandbox (root), WebGPU with Dawn's unsafe APIs (subgroup matrices) and
// NVIDIA f16, and the GPU process on Vulkan without surfaces: on a headless NVIDIA machine
// ANGLE's Vulkan instance fails with -7 (no surface extension) unless --disable-vulkan-surface,
// and the GPU process then exits, so every requestAdapter() returns null. CHROMIUM_FLAGS adds
// more. Environment: LD_LIBRARY_PATH must keep the driver's folder (the ICD is
// libGLX_nvidia.so.0), VK_ICD_FILENAMES names the NVIDIA ICD json. Fonts: the page needs one
// (FONTCONFIG_FILE naming a folder with a .ttf), or the renderer aborts in Skia's font manager.
// Each panel run takes about 32 s of wall time (set-up, warm-up, self-check), so the full list
// needs about 7 minutes. Exits 3 when the page reports no WebGPU adapter.

const pw = await import(process.env.PLAYWRIGHT_CORE ?? 'playwright-core');
const quick = process.argv.includes('--quick');
export const FLAGS = [
  '--headless=new',
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia',
  '--disable-dawn-features=timestamp_quantization',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--use-angle=vulkan',
  '--enable-features=Vulkan',
  '--disable-vulkan-surface',
  '--ignore-gpu-blocklist',
  ...(process.env.CHROMIUM_FLAGS ?? '').split(' ').filter(Boolean),
];
const browser = await pw.chromium.launch({ executablePath: process.env.CHROMIUM, args: FLAGS, headless: true, timeout: 120_000 });
// The first screen dismissed before the app reads it (its dialog would take every click), as e2e/fixtures.ts does.
const page = await browser.newPage();
await page.addInitScript(() => {
  try {
    if (window.localStorage.getItem('flashscope.welcome.v1') === null) window.localStorage.setItem('flashscope.welcome.v1', 'dismissed');
  } catch {
    // chrome://gpu has no storage
  }
});
page.on('console', (m) => {
  if (m.type() === 'error') console.log(JSON.stringify({ console: m.text().slice(0, 300) }));
});

if (process.argv.includes('--gpu-info')) {
  await page.goto('chrome://gpu');
  await page.waitForTimeout(4000);
  // The page is built of custom elements: walk their open shadow roots for the text.
  const text = await page.evaluate(() => {
    const walk = (n) => {
      let s = '';
      for (const c of n.childNodes) s += c.nodeType === 3 ? c.textContent : walk(c);
      if (n.shadowRoot) s += walk(n.shadowRoot);
      if (n.nodeType === 1 && /^(DIV|TR|H3|LI|P)$/.test(n.tagName)) s += '\n';
      return s;
    };
    return walk(document.body);
  });
  console.log(JSON.stringify({ gpuInfo: text.replace(/\n\s*\n/g, '\n').slice(0, 80_000) }));
}

if (process.argv.includes('--study')) {
  const url = process.env.STUDY_URL ?? new URL('timing-study.html', process.env.URL ?? 'http://127.0.0.1:4173/').href;
  console.log(JSON.stringify({ flags: FLAGS, url }));
  await page.goto(url, { timeout: 120_000 });
  let shown = 0;
  for (const t0 = Date.now(); Date.now() - t0 < 400_000; ) {
    const st = await page.evaluate(() => window.timingStudy ?? { rows: [], done: false });
    for (const r of st.rows.slice(shown)) console.log(JSON.stringify({ study: r }));
    shown = st.rows.length;
    if (st.done) break;
    await page.waitForTimeout(1000);
  }
  await browser.close();
  process.exit(0);
}
await page.goto(process.env.URL ?? 'http://127.0.0.1:4173/', { timeout: 120_000 });
const panel = page.getByRole('region', { name: 'WebGPU full-size runs' });
await panel.scrollIntoViewIfNeeded({ timeout: 60_000 });
const adapter = panel.getByRole('status', { name: 'adapter' });
await adapter.waitFor({ timeout: 60_000 });
await page.waitForTimeout(3000);
console.log(JSON.stringify({ flags: FLAGS, adapter: (await adapter.textContent())?.slice(0, 2000) }));
const paths = await panel.getByLabel('kernel path').locator('option').allTextContents();
console.log(JSON.stringify({ paths }));
if (!paths.length) {
  await browser.close();
  process.exit(3);
}

const set = (label, value) => panel.getByLabel(label, { exact: true }).fill(String(value));
const only = process.env.ROWS ? new RegExp(process.env.ROWS) : undefined;
async function run(name, shape, path, pass = 'forward') {
  if (only && !only.test(name)) return;
  const t0 = Date.now();
  try {
    await panel.getByRole('radio', { name: pass === 'backward' ? 'Backward' : 'Forward' }).check();
    if (pass === 'backward') await panel.getByLabel('backward kernel').selectOption(path);
    else await panel.getByLabel('kernel path').selectOption(path);
    for (const [k, v] of Object.entries(shape)) if (k !== 'causal') await set(k, v);
    const causal = panel.getByLabel('causal');
    if (shape.causal) await causal.check();
    else await causal.uncheck();
    const before = await panel
      .getByTestId('wg-check')
      .textContent()
      .catch(() => null);
    await panel.getByRole('button', { name: 'Run', exact: true }).click();
    // A new result replaces the check line (or an error appears).
    await page.waitForFunction(
      (prev) => {
        const el = document.querySelector('[data-testid="wg-check"]');
        const err = document.querySelector('.wg-panel [role="alert"]');
        return (el && el.textContent !== prev) || err?.textContent;
      },
      before,
      { timeout: 240_000 },
    );
    const err = await panel
      .getByRole('alert')
      .textContent()
      .catch(() => null);
    const cell = async (id) =>
      (
        await panel
          .getByTestId(id)
          .textContent({ timeout: 1000 })
          .catch(() => null)
      )?.trim();
    const result = await panel.getByLabel('result').textContent();
    const config = /configuration(.*?)check/s.exec(result ?? '')?.[1]?.slice(0, 300);
    console.log(
      JSON.stringify({
        name,
        path,
        pass,
        shape,
        time: await cell('wg-time'),
        tflops: await cell('wg-tflops'),
        check: await cell('wg-check'),
        grad: await cell('wg-grad-check'),
        error: err ?? undefined,
        config,
        wall_s: (Date.now() - t0) / 1000,
      }),
    );
  } catch (e) {
    console.log(JSON.stringify({ name, path, pass, shape, error: String(e).slice(0, 400) }));
  }
}

const shapes = quick
  ? [[256, 64]]
  : [
      [4096, 64],
      [8192, 64],
      [4096, 128],
      [8192, 128],
    ];
for (const [n, d] of shapes) {
  for (const causal of [false, true]) {
    await run(`forward N${n} d${d}${causal ? ' causal' : ''}`, { B: 4, Hq: 16, Hk: 16, Nq: n, Nk: n, d, dv: d, causal }, 'flash-matrix');
  }
}
await run(
  'backward N4096 d128',
  { B: 4, Hq: 16, Hk: 16, Nq: quick ? 256 : 4096, Nk: quick ? 256 : 4096, d: 128, dv: 128, causal: false },
  'flash-matrix',
  'backward',
);
for (const nk of quick ? [1024] : [8192, 32768]) {
  await run(`decode Hq16 Hk16 Nk${nk}`, { B: 4, Hq: 16, Hk: 16, Nq: 1, Nk: nk, d: 128, dv: 128, causal: false }, 'decode');
  await run(`decode Hq32 Hk8 Nk${nk}`, { B: 4, Hq: 32, Hk: 8, Nq: 1, Nk: nk, d: 128, dv: 128, causal: false }, 'decode');
  await run(`decode Hq64 Hk8 Nk${nk}`, { B: 4, Hq: 64, Hk: 8, Nq: 1, Nk: nk, d: 128, dv: 128, causal: false }, 'decode');
}
await browser.close();
