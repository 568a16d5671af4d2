// The flash paths and standard attention on SwiftShader (Chromium's Vulkan driver, which CI
// installs with the browser), on every variant of the problem spec (variants.ts) against the
// float64 reference, under each kernel choice. SwiftShader's subgroups have 4 lanes, so the
// tiled kernel's row reductions span several subgroups (16 threads per row with default tiles)
// — and, with the small tiles, exactly one — while the row kernel's rows span 2 or 4 lanes of
// one subgroup; 'many K/V tiles' and 'decode Nq=1' have 300+ keys, far more than a K/V tile or
// a subgroup, so a kernel that drops keys past either fails here. The browser runs the same
// checks on its own adapter at webgpu-test.html.

import { describe, expect, it } from 'vitest';
import { checks, expectAllClose, expectWindowRuns, LONG, names, ofKernel } from '../testing/kernel-check-expect.ts';
import { hasSwiftShader } from './swiftshader.ts';
import { KERNEL_VARIANTS, WINDOW_VARIANTS } from './variants.ts';

/** What each path runs besides the backend's own choice, all on one device (kernels they share compile once). */
const CHOICES = {
  'flash-f32': ['tiled', 'tiled-small', 'windows', 'head-windows'],
  'flash-subgroups': ['tiled', 'tiled-small', 'row-wide', 'windows', 'head-windows'],
  standard: ['windows'],
} as const;

describe.skipIf(!hasSwiftShader())('WebGPU flash and standard kernels against float64 (SwiftShader)', () => {
  for (const path of ['flash-f32', 'flash-subgroups', 'standard'] as const) {
    it(`${path} on every variant, under each kernel choice`, { timeout: LONG }, async () => {
      const m = await checks(path, [null, ...CHOICES[path]]);
      // SwiftShader offers these paths; if one disappears the test must say so, not pass vacuously.
      expect(m.paths).toContain(path);
      const own = ofKernel(m, null);
      expectAllClose(own, names(KERNEL_VARIANTS), 2e-5);

      if (path === 'standard') {
        // Standard attention binds every tensor whole: a problem that needs windows is refused, saying why.
        const w = ofKernel(m, 'windows');
        expect(w.results.length).toBe(WINDOW_VARIANTS.length + 1);
        for (const r of w.results)
          expect(r.error, r.variant).toMatch(/binds every tensor whole.*the flash paths and flash-decoding run it in windows/);
        return;
      }

      // Heads up to 64 wide run the row kernel: one lane per row without subgroups, two lanes
      // holding two rows with them (their partial dot products meet through a shuffle).
      if (path === 'flash-f32') expect(own.results[0].config).toContain('row kernel: 1 row per 1 lane');
      else {
        expect(m.subgroupMinSize).toBe(4);
        expect(own.results[0].config).toContain('row kernel: 2 rows per 2 lanes (subgroup shuffles)');
        const wide = ofKernel(m, 'row-wide');
        expectAllClose(wide, names(KERNEL_VARIANTS), 2e-5);
        expect(wide.results[0].config).toContain('1 row per 4 lanes (subgroup shuffles)');
      }
      // The 4×4-tiled kernel (wide heads' default) with its own tiles, then with 16×16 tiles:
      // many K/V tiles per row, one subgroup per row.
      const tiled = ofKernel(m, 'tiled');
      expectAllClose(tiled, names(KERNEL_VARIANTS), 2e-5);
      expect(tiled.results[0].config).toMatch(/^BM=\d+ BN=\d+/);
      // 16 threads per row on 4-lane subgroups: the row max/sum combine four subgroups through workgroup memory
      if (path === 'flash-subgroups') expect(tiled.results[0].config).toContain('shuffles over 4 lanes');
      const small = ofKernel(m, 'tiled-small');
      expectAllClose(small, names(KERNEL_VARIANTS), 2e-5);
      expect(small.results[0].config).toContain('BM=16 BN=16');
      expectWindowRuns(m);
    });
  }
});
