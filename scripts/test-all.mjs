#!/usr/bin/env node
// Runs every FlashScope test: the TypeScript typecheck, the Biome lint and format checks, the
// vitest unit suites and the Playwright browser suites, then prints the combined totals as the last line:
//   N passed, M failed
// preceded by a line "F flaky (…)": browser tests that passed only on Playwright's retry.
// Each runner writes a JSON report that is read back here, so the totals are counted,
// not scraped from human-readable output.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';

const totals = { passed: 0, failed: 0, skipped: 0, flaky: 0 };
const lines = [];
/** Titles of the browser tests that failed first and passed on Playwright's retry. */
const flakyTitles = [];

/** Walks a Playwright JSON report's suites for tests whose outcome is 'flaky'. */
function collectFlaky(suite, path = []) {
  const here = suite.title ? [...path, suite.title] : path;
  for (const spec of suite.specs ?? []) {
    for (const t of spec.tests ?? []) if (t.status === 'flaky') flakyTitles.push([...here, spec.title].join(' › '));
  }
  for (const child of suite.suites ?? []) collectFlaky(child, here);
}
mkdirSync('test-results', { recursive: true });

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status ?? 1;
}

/** Runs a command in the background, its output kept for the report; resolves to its exit status and output. */
function background(cmd, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    child.on('error', (e) => resolve({ status: 1, out: out + String(e) }));
    child.on('close', (status) => resolve({ status: status ?? 1, out }));
  });
}

// The two builds the browser suites serve (the app at /, and under a sub-path as a course page
// hosts it) run beside the typecheck and the Biome checks, which leave a core idle.
// The base path is playwright.subpath.config.ts's SUB_PATH.
const SUB_PATH_BUILD = ['vite', 'build', '--outDir', 'dist-subpath', '--logLevel', 'warn'];
const builds = background('npx', ['vite', 'build', '--logLevel', 'warn']).then(async (app) =>
  app.status !== 0 ? app : background('npx', SUB_PATH_BUILD, { FLASHSCOPE_BASE: '/some/sub/path/' }),
);

// 1. Typecheck: one test that passes or fails as a whole.
const tsc = run('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']);
if (tsc === 0) totals.passed++;
else totals.failed++;
lines.push(`typecheck: ${tsc === 0 ? 'ok' : 'FAILED'}`);

// 2. Lint rules and formatting (Biome, biome.json): one test each, like the typecheck.
for (const [name, script] of [
  ['lint', 'lint'],
  ['format', 'format:check'],
]) {
  const status = run('npm', ['run', '--silent', script]);
  if (status === 0) totals.passed++;
  else totals.failed++;
  lines.push(`${name}: ${status === 0 ? 'ok' : 'FAILED'}`);
}

// 3. Unit tests (vitest).
const unitReport = 'test-results/unit.json';
rmSync(unitReport, { force: true });
const unitStatus = run('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${unitReport}`]);
if (existsSync(unitReport)) {
  const r = JSON.parse(readFileSync(unitReport, 'utf8'));
  totals.passed += r.numPassedTests;
  totals.failed += r.numFailedTests;
  totals.skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  // A suite that fails to load has no tests in it but still must count as a failure.
  const brokenFiles = (r.testResults ?? []).filter((f) => f.status === 'failed' && (f.assertionResults ?? []).length === 0).length;
  totals.failed += brokenFiles;
  lines.push(`unit: ${r.numPassedTests} passed, ${r.numFailedTests + brokenFiles} failed`);
} else {
  totals.failed++;
  lines.push(`unit: runner exited ${unitStatus} without a report`);
}

// 4. Browser tests (Playwright + Debian's Chromium).
const chromium = process.env.FLASHSCOPE_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  console.error(
    `\nNo Chromium at ${chromium}. Install Debian's: sudo apt-get install -y chromium\n` +
      `(or point FLASHSCOPE_CHROMIUM at a Chromium binary). Browser tests counted as one failure.\n`,
  );
  totals.failed++;
  lines.push('e2e: no Chromium found');
} else if ((await builds).status !== 0) {
  const { out } = await builds;
  console.error(`\nThe build the browser tests serve failed:\n${out}`);
  totals.failed++;
  lines.push('e2e: the build failed');
} else {
  // The main suite on two workers, then the specs that time the main thread alone on the same
  // build, then the hosted build under a sub-path (playwright.subpath.config.ts).
  for (const [name, config, args, env] of [
    ['e2e', 'playwright.config.ts', ['--project=app'], { FLASHSCOPE_PREBUILT: '1' }],
    ['e2e main thread', 'playwright.config.ts', ['--project=main thread', '--workers=1'], { FLASHSCOPE_PREBUILT: '1' }],
    ['e2e sub-path', 'playwright.subpath.config.ts', [], { FLASHSCOPE_PREBUILT: '1' }],
  ]) {
    const e2eReport = 'test-results/e2e.json';
    rmSync(e2eReport, { force: true });
    const e2eStatus = run('npx', ['playwright', 'test', '-c', config, ...args], { PW_REPORTER: 'json', ...env });
    if (existsSync(e2eReport)) {
      const r = JSON.parse(readFileSync(e2eReport, 'utf8'));
      const s = r.stats ?? {};
      const passed = (s.expected ?? 0) + (s.flaky ?? 0);
      const failed = (s.unexpected ?? 0) + ((r.errors ?? []).length > 0 && passed === 0 ? 1 : 0);
      totals.passed += passed;
      totals.failed += failed;
      totals.skipped += s.skipped ?? 0;
      // A test that passed only on the retry counts as passed but is named: none should be.
      totals.flaky += s.flaky ?? 0;
      for (const suite of r.suites ?? []) collectFlaky(suite);
      lines.push(`${name}: ${passed} passed, ${failed} failed`);
    } else {
      totals.failed++;
      lines.push(`${name}: runner exited ${e2eStatus} without a report`);
    }
  }
}

console.log('\n' + lines.join('\n'));
for (const t of flakyTitles) console.log(`flaky (passed only on retry): ${t}`);
console.log(`${totals.flaky} flaky (counted as passed; passed only on retry)`);
console.log(`${totals.passed} passed, ${totals.failed} failed` + (totals.skipped ? `, ${totals.skipped} skipped` : ''));
process.exit(totals.failed > 0 ? 1 : 0);
