// The WebGPU backward kernels on SwiftShader (Chromium's Vulkan driver, which CI installs with
// the browser): the benchmark's backward self-test, every variant of variants.ts against the
// float64 reference gradients, run as its own process because Dawn reads the driver's
// location from the environment at start-up.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const SWIFTSHADER = '/usr/lib/chromium/libvk_swiftshader.so';

describe.skipIf(!existsSync(SWIFTSHADER))('WebGPU backward on SwiftShader', () => {
  it('dQ, dK and dV match the float64 reference on every variant (masks, GQA/MQA, ALiBi, softcap, sinks, dv ≠ d)', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'engine/bench/webgpu-bench.ts', '--pass', 'backward', '--quick', '--reps', '1'], {
      encoding: 'utf8',
      timeout: 600_000,
      env: { ...process.env, LD_LIBRARY_PATH: '/usr/lib/chromium', VK_ICD_FILENAMES: '/usr/lib/chromium/vk_swiftshader_icd.json' },
    });
    const out = r.stdout + r.stderr;
    expect(out, out).toContain('self-test: every variant matches the float64 reference gradients');
    expect(r.status, out).toBe(0);
    // Fourteen variants, each with its three gradients.
    expect(out.match(/^self-test .* max \|Δ\| dQ/gm)?.length).toBe(14);
    expect(out).toMatch(/^N256 d32 causal .* sampled dQ max \|Δ\| /m);
  }, 600_000);
});
