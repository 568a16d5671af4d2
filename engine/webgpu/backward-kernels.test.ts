// The WebGPU backward kernels on SwiftShader (Chromium's Vulkan driver, which CI installs with
// the browser): the benchmark's backward self-test, every variant of variants.ts against the
// float64 reference gradients (the benchmark in its own process), and `run --backend webgpu --do`
// in process.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { referenceBackward } from '../backward/reference-backward.ts';
import { randomInputs } from '../core/inputs.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { randomDo } from './backward-checks.ts';
import { KERNEL_VARIANTS } from './variants.ts';
import { runCliCaptured } from '../cli/run-cli-captured.ts';
import { hasSwiftShader, swiftShaderEnv } from './swiftshader.ts';

describe.skipIf(!hasSwiftShader())('WebGPU backward on SwiftShader', () => {
  it('dQ, dK and dV match the float64 reference on every variant (masks, GQA/MQA, ALiBi, softcap, sinks, dv ≠ d)', () => {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'engine/bench/webgpu-bench.ts', '--pass', 'backward', '--quick', '--reps', '1'],
      {
        encoding: 'utf8',
        timeout: 600_000,
        env: swiftShaderEnv(),
      },
    );
    const out = r.stdout + r.stderr;
    expect(out, out).toContain('self-test flash-f32: every variant matches the float64 reference gradients');
    expect(r.status, out).toBe(0);
    // Every variant, each with its three gradients.
    expect(out.match(/^self-test .* max \|Δ\| dQ/gm)?.length).toBe(KERNEL_VARIANTS.length);
    expect(out).toMatch(/^N256 d32 causal .* sampled dQ max \|Δ\| /m);
    // The f16 subgroup-matrix backward where the adapter has subgroup matrices (a GPU machine);
    // SwiftShader has neither f16 nor subgroup matrices, and the bench says so.
    if (out.includes('not offered by this adapter: flash-matrix')) expect(out).not.toMatch(/^self-test flash-matrix/m);
    else expect(out).toContain('self-test flash-matrix: every variant matches the float64 reference gradients');
  }, 600_000);

  it('run --backend webgpu --do writes dq, dk, dv (rank and layout of q, k, v) within 1e-4 of float64', async () => {
    const p: AttentionProblem = { batch: 1, hq: 4, hk: 2, nq: 37, nk: 53, d: 16, dv: 8, causal: true, dtype: 'fp32' };
    const x = randomInputs(p, { seed: 5 });
    const dO = randomDo(p, 5);
    const dir = mkdtempSync(join(tmpdir(), 'flashscope-webgpu-bwd-'));
    const files = { q: [x.q, [1, 4, 37, 16]], k: [x.k, [1, 2, 53, 16]], v: [x.v, [1, 2, 53, 8]], do: [dO, [1, 4, 37, 8]] } as const;
    for (const [name, [data, shape]] of Object.entries(files)) writeFileSync(join(dir, `${name}.npy`), encodeNpy(data, [...shape]));
    const args = [
      'run',
      '--backend',
      'webgpu',
      '--causal',
      '--out',
      join(dir, 'out'),
      ...['q', 'k', 'v', 'do'].flatMap((n) => [`--${n}`, join(dir, `${n}.npy`)]),
    ];
    const r = await runCliCaptured(args);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const ref = referenceBackward(p, { ...x, dO });
    for (const [name, want, shape] of [
      ['dq', ref.dq, [1, 4, 37, 16]],
      ['dk', ref.dk, [1, 2, 53, 16]],
      ['dv', ref.dv, [1, 2, 53, 8]],
    ] as const) {
      const file = join(dir, 'out', 'webgpu-flash-f32', `${name}.npy`);
      const got = await readNpy(new MemorySource(readFileSync(file), file));
      expect(got.info.shape, name).toEqual(shape);
      let worst = 0;
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got.data[i] - want[i]));
      expect(worst, name).toBeLessThan(1e-4);
    }
    const stats = JSON.parse(readFileSync(join(dir, 'out', 'webgpu-flash-f32', 'stats.json'), 'utf8'));
    expect(stats.backward.tflops).toBeGreaterThan(0);
  }, 300_000);
});

describe('run --backend webgpu --do: which paths have a backward', () => {
  it('names the two backward paths when given another, before any GPU is opened, and writes nothing', async () => {
    const p: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 8, nk: 8, d: 8, dv: 8, causal: false, dtype: 'fp32' };
    const x = randomInputs(p, { seed: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'flashscope-webgpu-bwd-path-'));
    const files = { q: x.q, k: x.k, v: x.v, do: randomDo(p, 1) };
    for (const [name, data] of Object.entries(files)) writeFileSync(join(dir, `${name}.npy`), encodeNpy(data, [1, 2, 8, 8]));
    const args = [
      'run',
      '--backend',
      'webgpu',
      '--path',
      'flash-f16',
      '--out',
      join(dir, 'out'),
      ...['q', 'k', 'v', 'do'].flatMap((n) => [`--${n}`, join(dir, `${n}.npy`)]),
    ];
    const r = await runCliCaptured(args);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('--do runs the backward on --path flash-f32 or flash-matrix; --path flash-f16 has no backward');
    expect(existsSync(join(dir, 'out'))).toBe(false);
  }, 120_000);
});
