// `--algo sage` through the real command, spawned as a person runs it: fp16 .npy files in
// bnhd with GQA (2 query heads on 1 K/V head) and a K with large channel offsets, `run` with
// --feature version=1|2 and smoothK, --causal. o.npy comes back in q's layout, error.json
// agrees with this file's own float64 attention, stats.json carries the precision counts;
// `trace --algo sage` prints the scales; refusals name the option and write nothing (those run
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

const dir = mkdtempSync(join(tmpdir(), 'flashscope-sage-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const engine = (cmd: string, args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'engine/cli/main.ts', cmd, ...args], { encoding: 'utf8' });
const readBack = async (f: string) => readNpy(new MemorySource(new Uint8Array(readFileSync(f))));

// B=1, 96 queries, 160 keys, Hq=2, Hk=1, d=32, bnhd; K channel e has offset OFF[e] (up to ±24).
const [NQ, NK, HQ, HK, D] = [96, 160, 2, 1, 32];
const rnd = mulberry32(21);
const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
const OFF = Array.from({ length: D }, () => 48 * (rnd() - 0.5));
const q = Float32Array.from({ length: NQ * HQ * D }, () => roundFp16(gauss()));
const k = Float32Array.from({ length: NK * HK * D }, (_, i) => roundFp16(gauss() + OFF[i % D]));
const v = Float32Array.from({ length: NK * HK * D }, () => roundFp16(gauss()));
const file = (name: string, a: Float32Array, n: number, h: number) => {
  const f = join(dir, name);
  writeFileSync(f, encodeNpy(a, [1, n, h, D], 'float16'));
  return f;
};
const files = ['--q', file('q.npy', q, NQ, HQ), '--k', file('k.npy', k, NK, HK), '--v', file('v.npy', v, NK, HK), '--layout', 'bnhd'];

/** Dense float64 causal attention (bottom-right aligned) in bnhd: o[n][h][e]. */
function reference(): Float64Array {
  const o = new Float64Array(NQ * HQ * D);
  const scale = 1 / Math.sqrt(D);
  for (let h = 0; h < HQ; h++)
    for (let i = 0; i < NQ; i++) {
      const seen = i + NK - NQ + 1;
      const s = Array.from({ length: seen }, (_, j) => {
        let dot = 0;
        for (let e = 0; e < D; e++) dot += q[(i * HQ + h) * D + e] * k[j * D + e];
        return dot * scale;
      });
      const m = Math.max(...s);
      const p = s.map((x) => Math.exp(x - m));
      const l = p.reduce((a, b) => a + b, 0);
      for (let e = 0; e < D; e++) {
        let acc = 0;
        for (let j = 0; j < seen; j++) acc += p[j] * v[j * D + e];
        o[(i * HQ + h) * D + e] = acc / l;
      }
    }
  return o;
}
const REF = reference();

function errorOf(o: ArrayLike<number>) {
  let sq = 0;
  let mx = 0;
  for (let i = 0; i < REF.length; i++) {
    sq += (o[i] - REF[i]) ** 2;
    mx = Math.max(mx, Math.abs(o[i] - REF[i]));
  }
  return { rmse: Math.sqrt(sq / REF.length), max: mx };
}

describe('run --algo sage', () => {
  const runs: Record<string, number> = {};
  for (const [name, features] of [
    ['v1', ['version=1']],
    ['v2', ['version=2']],
    ['v1-nosmooth', ['version=1', 'smoothK=false']],
  ] as const) {
    it(`${name}: writes o.npy in q's layout, error.json against float64 and the precision counts`, async () => {
      const out = join(dir, name);
      const r = engine('run', ['--algo', 'sage', ...files, '--causal', ...features.flatMap((f) => ['--feature', f]), '--out', out]);
      expect(r.stderr.replace(/npm warn.*\n/g, '')).toBe('');
      expect(r.status).toBe(0);
      const o = await readBack(join(out, 'sage', 'o.npy'));
      expect(o.info.shape).toEqual([1, NQ, HQ, D]);
      const lse = await readBack(join(out, 'sage', 'lse.npy'));
      expect(lse.info.shape).toEqual([1, HQ, NQ]);
      const mine = errorOf(o.data);
      const err = JSON.parse(readFileSync(join(out, 'sage', 'error.json'), 'utf8'));
      expect(err).toMatchObject({ algo: 'sage', dtype: 'fp16', reference: 'float64' });
      expect(err.rmse).toBeCloseTo(mine.rmse, 6);
      expect(err.max_abs).toBeCloseTo(mine.max, 6);
      expect(mine.rmse).toBeGreaterThan(1e-4); // quantized: never exact
      const stats = JSON.parse(readFileSync(join(out, 'sage', 'stats.json'), 'utf8'));
      expect(stats.block_m).toBe(128);
      expect(stats.block_n).toBe(64);
      // Every visible (query, key) pair's P was cast once.
      expect(stats.precision.cast_p).toBe(HQ * Array.from({ length: NQ }, (_, i) => i + NK - NQ + 1).reduce((a, b) => a + b, 0));
      expect(stats.precision.saturated).toBeGreaterThan(0);
      runs[name] = mine.rmse;
    });
  }

  it('smoothing pays on this K: version 1 without it is several times worse', () => {
    expect(runs['v1-nosmooth'] / runs.v1).toBeGreaterThan(3);
    expect(runs.v1).toBeLessThan(0.01);
    expect(runs.v2).toBeLessThan(0.02);
  });

  it('refuses FP8 dtypes, ALiBi and unknown features by name and writes nothing', async () => {
    const out = join(dir, 'refused');
    for (const [args, msg] of [
      [['--dtype', 'fp8e4m3'], /dtype: sage quantizes its own inputs/],
      [['--alibi'], /alibi: SageAttention has no ALiBi/],
      [['--feature', 'version=4'], /features\.version: must be 1/],
      [['--feature', 'pScale=1'], /unknown feature 'pScale' for sage/],
    ] as const) {
      const r = await runCliCaptured(['run', '--algo', 'sage', ...files, ...args, '--out', out]);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(msg);
    }
    const bwd = await runCliCaptured(['run', '--algo', 'sage', ...files, '--do', files[1], '--out', out]);
    expect(bwd.stderr).toMatch(/algo: sage has no backward pass in FlashScope/);
    expect(existsSync(out)).toBe(false);
  });

  it('trace --algo sage prints INT8 scales on loads and qk, e4m3 flushes on exp (v2), per-channel V scales on pv', () => {
    const r = engine('trace', [
      '--algo',
      'sage',
      '--nq',
      '32',
      '--nk',
      '64',
      '--d',
      '16',
      '--dtype',
      'bf16',
      '--distribution',
      'large-logits',
      '--feature',
      'version=2',
      '--block-m',
      '32',
      '--block-n',
      '16',
    ]);
    expect(r.status).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.every((e) => e.algo === 'sage')).toBe(true);
    const loads = events.filter((e) => e.line === 'sage.loadQ' || e.line === 'sage.loadK');
    expect(loads.every((e) => e.quant.scale > 0 && e.quant.saturated >= 1)).toBe(true);
    expect(events.filter((e) => e.kind === 'qk').every((e) => e.qScale > 0 && e.kScale > 0 && e.base2 === true)).toBe(true);
    // A 32-row tile is one warp slice: every step of it carries warp 0.
    expect(events.filter((e) => e.kind === 'qk').every((e) => e.warp === 0)).toBe(true);
    const exps = events.filter((e) => e.kind === 'exp');
    expect(exps.every((e) => Array.isArray(e.flushed) && e.pScale > 447 && e.pScale < 448)).toBe(true);
    expect(events.filter((e) => e.kind === 'pv').every((e) => e.vScales.length === 16)).toBe(true);
  });
});
