// Masks on the WebGPU flash kernels on SwiftShader (Chromium's Vulkan driver, which CI
// installs with the browser): `run --backend webgpu` with a preset mask_mod and score_mod,
// block-sparse, against float64 (error.json); the same on flash-decoding, which always walks the
// block list; and seeded random masks, block-sparse.
// The full sweep (every preset, every path) is `node --import tsx engine/bench/mask-bench.ts --check`.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../cli/run-cli-captured.ts';
import { hasSwiftShader, swiftShaderEnv } from './swiftshader.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-webgpu-mask-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The benchmark runs its checks when loaded, so it gets a process of its own.
const node = (args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', ...args], { encoding: 'utf8', timeout: 300_000, env: swiftShaderEnv() });

describe.skipIf(!hasSwiftShader())('masks on the WebGPU kernels (SwiftShader)', () => {
  it('run --backend webgpu --block-sparse: a document mask and an ALiBi score_mod match float64, empty tiles skipped', async () => {
    const out = join(dir, 'doc');
    const r = await runCliCaptured([
      'run',
      '--backend',
      'webgpu',
      '--b',
      '1',
      '--hq',
      '2',
      '--nq',
      '200',
      '--nk',
      '200',
      '--d',
      '32',
      '--mask-mod',
      'document:40,100',
      '--score-mod',
      'alibi',
      '--block-sparse',
      '--repeats',
      '1',
      '--out',
      out,
    ]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // Two 128-row tiles against seven 32-key tiles, per head: documents at 0, 40, 140 leave tiles empty.
    const visited = /block-sparse over 128×32 tiles: (\d+) of (\d+) tile pairs visited/.exec(r.stdout);
    expect(visited, r.stdout).not.toBeNull();
    expect(Number(visited![2])).toBe(2 * 2 * 7);
    expect(Number(visited![1])).toBeLessThan(Number(visited![2]));
    const err = JSON.parse(readFileSync(join(out, 'webgpu-flash-f32', 'error.json'), 'utf8'));
    expect(err.rows).toBe('all');
    expect(err.max_abs).toBeLessThan(1e-5);
  }, 300_000);

  it('run --backend webgpu --path decode: a document mask_mod with ALiBi walks the listed K/V tiles and matches float64', async () => {
    const out = join(dir, 'decode');
    const args = 'run --backend webgpu --path decode --b 1 --hq 4 --hk 2 --nq 1 --nk 700 --d 64 --repeats 1';
    const r = await runCliCaptured([...args.split(' '), '--mask-mod', 'document:300,400', '--score-mod', 'alibi', '--out', out]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // The query row (key 699) sees the second document, keys 300–699: tiles 4–10 of eleven 64-key tiles, per head.
    expect(r.stdout).toContain('block-sparse over 1×64 tiles: 28 of 44 tile pairs visited');
    const err = JSON.parse(readFileSync(join(out, 'webgpu-decode', 'error.json'), 'utf8'));
    expect(err.rows).toBe('all');
    expect(err.max_abs).toBeLessThan(5e-3); // f16 Q, K, V against float64 of the f32 inputs
  }, 300_000);

  it('seeded random mask_mod / score_mod texts match float64, block-sparse', () => {
    const r = node([
      'engine/bench/mask-bench.ts',
      '--check',
      '--random',
      '2',
      '--no-presets',
      '--row-only',
      '--sparse-only',
      '--paths',
      'flash-f32',
    ]);
    const text = r.stdout + r.stderr;
    expect(text).toContain('mask-check: every case matches the float64 reference');
    expect(text.match(/^mask-check d32 ok flash-f32 block-sparse/gm)?.length).toBe(2);
    expect(r.status, text).toBe(0);
  }, 300_000);
});
