// The FP8 command-line contract, through the real command: `run --algo fa3 --dtype fp8e4m3`
// on fp16 .npy files (bnhd, rank 4) writes o.npy in q's layout, error.json against float64 and
// the precision counters; the reference here is a dense float64 softmax of this file's own.
// Algorithms without an FP8 path are refused by name and leave no output behind (refusals run
// in process: the same dispatch, without a Node start-up per refused command).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { roundFp16 } from '../core/dtype.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import { mulberry32 } from '../core/random.ts';
import { runCliCaptured } from './run-cli-captured.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-fp8-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const engine = (cmd: string, args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'engine/cli/main.ts', cmd, ...args], { encoding: 'utf8' });
const readBack = async (f: string) => readNpy(new MemorySource(new Uint8Array(readFileSync(f))));

// B=1, N=48 queries, 80 keys, H=2, d=32, bnhd: [B, N, H, d], fp16 values; one outlier channel in K.
const [B, NQ, NK, H, D] = [1, 48, 80, 2, 32];
const rnd = mulberry32(11);
const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
const tensor = (n: number, outlier = false) =>
  Float32Array.from({ length: n * H * D }, (_, i) => roundFp16(gauss() * (outlier && i % D === 3 ? 8 : 1)));
const q = tensor(NQ);
const k = tensor(NK, true);
const v = tensor(NK);
const file = (name: string, a: Float32Array, n: number) => {
  const f = join(dir, name);
  writeFileSync(f, encodeNpy(a, [B, n, H, D], 'float16'));
  return f;
};
const files = ['--q', file('q.npy', q, NQ), '--k', file('k.npy', k, NK), '--v', file('v.npy', v, NK), '--layout', 'bnhd'];

/** Dense float64 attention in bnhd: o[n][h][e]. */
function reference(): Float64Array {
  const o = new Float64Array(NQ * H * D);
  const scale = 1 / Math.sqrt(D);
  for (let h = 0; h < H; h++)
    for (let i = 0; i < NQ; i++) {
      const s = Array.from({ length: NK }, (_, j) => {
        let dot = 0;
        for (let e = 0; e < D; e++) dot += q[(i * H + h) * D + e] * k[(j * H + h) * D + e];
        return dot * scale;
      });
      const m = Math.max(...s);
      const p = s.map((x) => Math.exp(x - m));
      const l = p.reduce((a, b) => a + b, 0);
      for (let e = 0; e < D; e++) {
        let acc = 0;
        for (let j = 0; j < NK; j++) acc += p[j] * v[(j * H + h) * D + e];
        o[(i * H + h) * D + e] = acc / l;
      }
    }
  return o;
}

describe('run --dtype fp8e4m3', () => {
  it('writes o.npy in q layout, error.json against float64 and precision counters', async () => {
    const out = join(dir, 'fp8');
    const r = engine('run', ['--algo', 'fa3', ...files, '--dtype', 'fp8e4m3', '--out', out]);
    expect(r.stderr.replace(/npm warn.*\n/g, '')).toBe('');
    expect(r.status).toBe(0);
    const o = await readBack(join(out, 'fa3', 'o.npy'));
    expect(o.info.shape).toEqual([B, NQ, H, D]);
    const ref = reference();
    let sq = 0;
    let mx = 0;
    for (let i = 0; i < ref.length; i++) {
      sq += (o.data[i] - ref[i]) ** 2;
      mx = Math.max(mx, Math.abs(o.data[i] - ref[i]));
    }
    const rmse = Math.sqrt(sq / ref.length);
    expect(rmse).toBeGreaterThan(1e-4); // FP8 is never exact
    expect(rmse).toBeLessThan(0.05);
    const err = JSON.parse(readFileSync(join(out, 'fa3', 'error.json'), 'utf8'));
    expect(err.dtype).toBe('fp8e4m3');
    expect(err.rmse).toBeCloseTo(rmse, 6);
    expect(err.max_abs).toBeCloseTo(mx, 6);
    const stats = JSON.parse(readFileSync(join(out, 'fa3', 'stats.json'), 'utf8'));
    expect(stats.precision.cast_p).toBe(NQ * NK * H);
    expect(stats.precision.saturated).toBeGreaterThan(0);
    // The default is the shipped kernel's per-(batch, KV head) scale without rotation: the outlier
    // channel of K sets everyone's step. The FA3 paper's block quantization + Hadamard does better.
    const out2 = join(dir, 'fp8-paper');
    const r2 = engine('run', [
      '--algo',
      'fa3',
      ...files,
      '--dtype',
      'fp8e4m3',
      '--feature',
      'blockQuant=true',
      '--feature',
      'incoherent=true',
      '--out',
      out2,
    ]);
    expect(r2.status).toBe(0);
    expect(JSON.parse(readFileSync(join(out2, 'fa3', 'error.json'), 'utf8')).rmse).toBeLessThan(err.rmse);
  });

  it('refuses algorithms without an FP8 path, naming them, and writes nothing', async () => {
    const out = join(dir, 'refused');
    const r = await runCliCaptured(['run', '--algo', 'fa3,fa2', ...files, '--dtype', 'fp8e4m3', '--out', out]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/dtype: fa2 has no FP8 path/);
    expect(existsSync(join(out, 'fa3'))).toBe(false);
    const bad = await runCliCaptured(['run', '--algo', 'fa3', ...files, '--dtype', 'fp4', '--out', out]);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/--dtype must be one of fp32, fp16, bf16, fp8e4m3, fp8e5m2/);
  });

  it('trace --dtype fp8e5m2 prints the scales and flushed marks of every step', () => {
    const r = engine('trace', [
      '--algo',
      'fa3',
      '--nq',
      '16',
      '--nk',
      '64',
      '--d',
      '16',
      '--distribution',
      'sink',
      '--dtype',
      'fp8e5m2',
      '--feature',
      'pScale=1',
      '--feature',
      'reverseKv=false',
      '--block-m',
      '16',
      '--block-n',
      '16',
    ]);
    expect(r.status).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const exps = events.filter((e) => e.kind === 'exp');
    expect(exps.length).toBe(4);
    expect(exps.every((e) => e.pScale === 1 && Array.isArray(e.flushed))).toBe(true);
    expect(exps.reduce((a, e) => a + e.flushed.length, 0)).toBeGreaterThan(0);
    expect(events.filter((e) => e.kind === 'qk').every((e) => e.qScale > 0 && e.kScale > 0)).toBe(true);
  });
});
