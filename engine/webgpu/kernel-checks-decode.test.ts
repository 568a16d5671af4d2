// Flash-decoding, paged flash-decoding and the varlen forward on SwiftShader (Chromium's Vulkan
// driver, which CI installs with the browser) against the float64 references (variants.ts,
// serving-checks.ts). The paged cases fill every slot no sequence owns with NaN and give the
// table out-of-range entries past each sequence's pages: one read of either shows up as a NaN
// or an error here. The browser runs the same checks on its own adapter at webgpu-test.html.

import { describe, expect, it } from 'vitest';
import { checks, expectAllClose, expectWindowRuns, LONG, names, ofKernel } from '../testing/kernel-check-expect.ts';
import { PAGED_VARIANTS, VARLEN_VARIANTS } from './serving-checks.ts';
import { hasSwiftShader } from './swiftshader.ts';
import { KERNEL_VARIANTS } from './variants.ts';

describe.skipIf(!hasSwiftShader())('WebGPU decoding and serving layouts against float64 (SwiftShader)', () => {
  it('decode on every variant, and in windows of one batch and of one key head', { timeout: LONG }, async () => {
    const m = await checks('decode', [null, 'windows', 'head-windows']);
    expect(m.paths).toContain('decode');
    expectAllClose(ofKernel(m, null), names(KERNEL_VARIANTS), 2e-5);
    expectWindowRuns(m);
  });

  it('paged flash-decoding matches the float64 reference and never reads an unowned slot', { timeout: LONG }, async () => {
    const m = await checks('decode', ['serving']);
    const paged = names(PAGED_VARIANTS);
    expectAllClose(m, [...paged, ...paged.map((n) => `${n} (one page per split)`)], 2e-5);
    // splits are whole pages, and each page's table entry is read once per split
    expect(m.results[0].config).toContain('of 256 keys (16 pages of 16)');
    expect(m.results[0].config).toContain('one block-table read per page');
    expect(m.results[PAGED_VARIANTS.length].config).toContain('of 16 keys (1 pages of 16)');
  });

  // The row kernel where it fits, then the 4×4-tiled kernel on every variant, on one device:
  // the d = 128 variant runs the tiled kernel under both choices and compiles once.
  for (const path of ['flash-f32', 'flash-subgroups'] as const) {
    it(`varlen forward on ${path} (row kernel where it fits, and the 4×4-tiled kernel)`, { timeout: LONG }, async () => {
      const m = await checks(path, ['serving', 'serving-tiled']);
      const row = ofKernel(m, 'serving');
      expectAllClose(row, names(VARLEN_VARIANTS), 2e-5);
      expect(row.results[0].config).toMatch(/^varlen row kernel/);
      // d = 128 has no row configuration on these paths here: the tiled kernel runs it
      expect(row.results[VARLEN_VARIANTS.length - 1].config).toMatch(/^varlen tiled kernel/);
      // lengths 1, 37, 0, 130, 5 at BM = 128: 1 + 1 + 0 + 2 + 1 blocks, no padding blocks
      expect(row.results[0].config).toContain('5 (sequence, query block) tiles per head');
      const tiled = ofKernel(m, 'serving-tiled');
      expectAllClose(tiled, names(VARLEN_VARIANTS), 2e-5);
      for (const r of tiled.results) expect(r.config).toMatch(/^varlen tiled kernel/);
    });
  }
});
