// FA3's FP8 numerics emulated on the WebGPU f32 flash path, on SwiftShader: inputs quantized on
// the host like fa3, P cast to e4m3 in both flash kernels (the row kernel at d = 64, the 4×4-
// tiled kernel at d = 128), O in bf16. Checked through the real command against the float64
// reference (error.json) and against the stepped fa3 on the same files: the two differ only
// where the kernels' K/V blocking changes the running max a P is cast against.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomInputs } from '../core/inputs.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { runCliCaptured } from '../cli/run-cli-captured.ts';
import { hasSwiftShader } from './swiftshader.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-webgpu-fp8-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = (args: string[]) => runCliCaptured(['run', ...args]);
const readO = async (f: string) => (await readNpy(new MemorySource(readFileSync(f), f))).data;

function files(name: string, p: AttentionProblem, distribution: 'fa3-outliers' | 'sink'): string[] {
  const x = randomInputs(p, { seed: 4, distribution });
  const out: string[] = [];
  for (const [t, data, n, w] of [
    ['q', x.q, p.nq, p.d],
    ['k', x.k, p.nk, p.d],
    ['v', x.v, p.nk, p.dv],
  ] as const) {
    const f = join(dir, `${name}-${t}.npy`);
    writeFileSync(f, encodeNpy(data, [p.batch, p.hq, n, w]));
    out.push(`--${t}`, f);
  }
  return out;
}

describe.skipIf(!hasSwiftShader())('WebGPU FP8 emulation on SwiftShader', () => {
  for (const d of [64, 128]) {
    it(`d = ${d}: error.json against float64, and the stepped fa3 FP8 on the same files within a fraction of the FP8 error`, async () => {
      const p: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 96, nk: 160, d, dv: d, causal: false, dtype: 'fp8e4m3' };
      const inputs = files(`d${d}`, p, 'fa3-outliers');
      const gpu = await cli(['--backend', 'webgpu', '--dtype', 'fp8e4m3', ...inputs, '--out', join(dir, `gpu${d}`)]);
      expect(gpu.status, gpu.stdout + gpu.stderr).toBe(0);
      const cpu = await cli(['--algo', 'fa3', '--dtype', 'fp8e4m3', ...inputs, '--out', join(dir, `cpu${d}`)]);
      expect(cpu.status, cpu.stderr).toBe(0);
      const gErr = JSON.parse(readFileSync(join(dir, `gpu${d}`, 'webgpu-flash-f32', 'error.json'), 'utf8'));
      const cErr = JSON.parse(readFileSync(join(dir, `cpu${d}`, 'fa3', 'error.json'), 'utf8'));
      expect(gErr.rows).toBe('all');
      expect(gErr.rmse).toBeGreaterThan(0.7 * cErr.rmse);
      expect(gErr.rmse).toBeLessThan(1.4 * cErr.rmse);
      const a = await readO(join(dir, `gpu${d}`, 'webgpu-flash-f32', 'o.npy'));
      const b = await readO(join(dir, `cpu${d}`, 'fa3', 'o.npy'));
      let sq = 0;
      for (let i = 0; i < a.length; i++) sq += (a[i] - b[i]) ** 2;
      expect(Math.sqrt(sq / a.length)).toBeLessThan(0.5 * cErr.rmse);
      // O is bf16: the low 16 bits of every float are zero.
      const bits = new Uint32Array(Float32Array.from(a).buffer);
      expect(bits.every((w) => (w & 0xffff) === 0)).toBe(true);
    }, 300_000);
  }

  for (const d of [16, 128])
    it(`d = ${d} (${d > 64 ? 'tiled' : 'row'} kernel) casts P: with the sinks first at pScale 1 the other keys flush and their values vanish; 256 keeps them`, async () => {
      // Four sink keys along u, with V = 0; 508 other keys with V = 1. O is the other keys'
      // share of the softmax (~e^-8 each, ~0.1 together), carried only by P values below 2^-10.
      const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 16, nk: 512, d, dv: d, scale: 1, causal: false, dtype: 'fp8e4m3' };
      const x = randomInputs({ ...p, dtype: 'fp32' }, { seed: 6 });
      for (let e = 0; e < d; e++) {
        for (let i = 0; i < p.nq; i++) x.q[i * d + e] = e === 0 ? 3 : 0;
        for (let j = 0; j < p.nk; j++) {
          if (j < 4) x.k[j * d + e] = e === 0 ? 3 : 0;
          else x.k[j * d + e] *= 0.1;
          x.v[j * d + e] = j < 4 ? 0 : 1;
        }
      }
      const inputs: string[] = [];
      for (const [t, data, n] of [
        ['q', x.q, p.nq],
        ['k', x.k, p.nk],
        ['v', x.v, p.nk],
      ] as const) {
        const f = join(dir, `sink${d}-${t}.npy`);
        writeFileSync(f, encodeNpy(data, [n, d]));
        inputs.push(`--${t}`, f);
      }
      const meanO = async (pScale: number) => {
        const r = await cli([
          '--backend',
          'webgpu',
          '--dtype',
          'fp8e4m3',
          '--scale',
          '1',
          ...inputs,
          '--feature',
          `pScale=${pScale}`,
          '--feature',
          'incoherent=false',
          '--out',
          join(dir, `sink${d}-${pScale}`),
        ]);
        expect(r.status, r.stderr).toBe(0);
        const o = await readO(join(dir, `sink${d}-${pScale}`, 'webgpu-flash-f32', 'o.npy'));
        let sum = 0;
        for (const v of o) sum += v;
        return sum / o.length;
      };
      const s = Math.exp(9); // each sink's weight relative to an ordinary key: exp(3·3 − ~0)
      const want = 508 / (508 + 4 * s); // ≈ 0.015
      expect(await meanO(256)).toBeGreaterThan(0.8 * want);
      expect(await meanO(1)).toBeLessThan(0.2 * want);
    }, 300_000);

  it('refuses FP8 on the other paths, and the fa3 switches that do not apply on the GPU', async () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 8, nk: 8, d: 16, dv: 16, causal: false, dtype: 'fp8e4m3' };
    const inputs = files('refuse', p, 'fa3-outliers');
    const f16 = await cli(['--backend', 'webgpu', '--dtype', 'fp8e4m3', '--path', 'flash-f16', ...inputs, '--out', join(dir, 'refuse')]);
    expect(f16.status).not.toBe(0);
    expect(f16.stderr).toMatch(/FP8 is emulated on --path flash-f32 only/);
    const rev = await cli([
      '--backend',
      'webgpu',
      '--dtype',
      'fp8e4m3',
      '--feature',
      'reverseKv=false',
      ...inputs,
      '--out',
      join(dir, 'refuse'),
    ]);
    expect(rev.stderr).toMatch(/unknown feature 'reverseKv'/);
  });
});
