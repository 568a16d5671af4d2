// The serving-layout contract of `run`: .npy files in (int32 offsets and tables, fp32 or
// fp16 values), o.npy / lse.npy out in the documented shapes, matching a float64 reference
// built here per sequence from dense tensors; bad offsets, tables and heads refused with a
// message naming the tensor and index, and nothing written.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomInputs } from '../core/inputs.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { runCommand } from './run-command.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-layout-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = (name: string) => join(dir, name);
const save = (name: string, values: ArrayLike<number>, shape: number[], dtype: 'float16' | 'float32' | 'int32' = 'float32') => {
  writeFileSync(path(name), encodeNpy(values, shape, dtype));
  return path(name);
};
const load = async (file: string) => readNpy(new MemorySource(readFileSync(file), file));

function maxErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) {
    if (a[i] === b[i]) continue;
    const e = Math.abs(a[i] - b[i]);
    m = Number.isNaN(e) ? Infinity : Math.max(m, e);
  }
  return m;
}

const H = 4;
const HK = 2;
const D = 8;
const DV = 6;
const base = { hq: H, hk: HK, d: D, dv: DV, dtype: 'fp32' as const };

// ---- varlen data: per-sequence dense tensors packed here ----
const LQ = [4, 0, 9, 6];
const LK = [7, 3, 5, 0];
const CQ = [0, 4, 4, 13, 19];
const CK = [0, 7, 10, 15, 15];

function varlenCase(causal: boolean, round16 = false, attentionChunk?: number) {
  const q = new Float32Array(19 * H * D);
  const k = new Float32Array(15 * HK * D);
  const v = new Float32Array(15 * HK * DV);
  const o = new Float64Array(19 * H * DV);
  const lse = new Float64Array(H * 19).fill(-Infinity);
  LQ.forEach((nq, b) => {
    if (nq === 0) return;
    const nk = LK[b];
    const p: AttentionProblem = {
      ...base,
      batch: 1,
      nq,
      nk: Math.max(nk, 1),
      causal,
      dtype: round16 ? 'fp16' : 'fp32',
      ...(attentionChunk !== undefined ? { attentionChunk } : {}),
    };
    const x = randomInputs(p, { seed: 40 + b });
    for (let h = 0; h < H; h++)
      for (let i = 0; i < nq; i++) for (let c = 0; c < D; c++) q[((CQ[b] + i) * H + h) * D + c] = x.q[(h * nq + i) * D + c];
    for (let h = 0; h < HK; h++)
      for (let j = 0; j < nk; j++) {
        for (let c = 0; c < D; c++) k[((CK[b] + j) * HK + h) * D + c] = x.k[(h * nk + j) * D + c];
        for (let c = 0; c < DV; c++) v[((CK[b] + j) * HK + h) * DV + c] = x.v[(h * nk + j) * DV + c];
      }
    if (nk === 0) return;
    const r = referenceAttention(p, x);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < nq; i++) {
        lse[h * 19 + CQ[b] + i] = r.lse[h * nq + i];
        for (let c = 0; c < DV; c++) o[((CQ[b] + i) * H + h) * DV + c] = r.o[(h * nq + i) * DV + c];
      }
  });
  return { q, k, v, o, lse };
}

/** The varlen CLI's tensor arguments over the files the varlen tests save; a test swaps in one bad file. */
const varlenFiles = ({ k = path('k.npy'), cq = path('cq.npy'), ck = path('ck.npy') } = {}) => [
  '--q',
  path('q.npy'),
  '--k',
  k,
  '--v',
  path('v.npy'),
  '--cu-seqlens-q',
  cq,
  '--cu-seqlens-k',
  ck,
];

describe('run --cu-seqlens-q/--cu-seqlens-k (varlen)', () => {
  const VARLEN_ALGOS = ['standard', 'fa1', 'fa2', 'fa3', 'fa4', 'cute-fa2', 'fmha-v2', 'flash-decoding'];
  it('spawned through npm: int32 offsets in, o [total_q, Hq, dv] and lse [Hq, total_q] out, within 2e-5 of float64', async () => {
    const c = varlenCase(true);
    const out = path('varlen-out');
    const r = spawnSync(
      'npm',
      [
        'run',
        '-s',
        'engine',
        '--',
        'run',
        '--algo',
        VARLEN_ALGOS.join(','),
        '--q',
        save('q.npy', c.q, [19, H, D]),
        '--k',
        save('k.npy', c.k, [15, HK, D]),
        '--v',
        save('v.npy', c.v, [15, HK, DV]),
        '--cu-seqlens-q',
        save('cq.npy', CQ, [5], 'int32'),
        '--cu-seqlens-k',
        save('ck.npy', CK, [5], 'int32'),
        '--causal',
        '--out',
        out,
      ],
      { encoding: 'utf8' },
    );
    expect(r.stderr.replace(/npm warn.*\n/g, '')).toBe('');
    expect(r.status).toBe(0);
    for (const algo of VARLEN_ALGOS) {
      const o = await load(join(out, algo, 'o.npy'));
      const lse = await load(join(out, algo, 'lse.npy'));
      expect(o.info.shape).toEqual([19, H, DV]);
      expect(lse.info.shape).toEqual([H, 19]);
      expect(maxErr(o.data, c.o), algo).toBeLessThan(2e-5);
      expect(maxErr(lse.data, c.lse), algo).toBeLessThan(2e-5);
      const stats = JSON.parse(readFileSync(join(out, algo, 'stats.json'), 'utf8'));
      expect(stats.hbm_bytes_read_by_tensor.cu_seqlens_q).toBeGreaterThan(0);
      expect(stats.seqlens_q).toEqual(LQ);
    }
  });

  it('reads float16 tensors as an fp16 problem (error within 2e-3)', async () => {
    const c = varlenCase(false, true);
    const out = path('varlen16');
    await runCommand.run([
      '--algo',
      'fa2,fa4',
      '--q',
      save('q16.npy', c.q, [19, H, D], 'float16'),
      '--k',
      save('k16.npy', c.k, [15, HK, D], 'float16'),
      '--v',
      save('v16.npy', c.v, [15, HK, DV], 'float16'),
      '--cu-seqlens-q',
      path('cq.npy'),
      '--cu-seqlens-k',
      path('ck.npy'),
      '--out',
      out,
    ]);
    for (const algo of ['fa2', 'fa4']) expect(maxErr((await load(join(out, algo, 'o.npy'))).data, c.o)).toBeLessThan(2e-3);
    const stats = JSON.parse(readFileSync(join(out, 'fa2', 'stats.json'), 'utf8'));
    expect(stats.algorithm_stats).toBeDefined();
  });

  it('--attention-chunk applies per sequence on the algorithms that take it (fa3, standard); fa2 refuses it by name', async () => {
    const c = varlenCase(false, false, 3);
    const plain = varlenCase(false);
    expect(maxErr(c.o, plain.o)).toBeGreaterThan(1e-3);
    const files = varlenFiles();
    const out = path('varlen-chunk');
    await runCommand.run(['--algo', 'fa3,standard', ...files, '--attention-chunk', '3', '--out', out]);
    for (const algo of ['fa3', 'standard']) expect(maxErr((await load(join(out, algo, 'o.npy'))).data, c.o), algo).toBeLessThan(2e-5);
    await expect(runCommand.run(['--algo', 'fa2', ...files, '--attention-chunk', '3', '--out', path('varlen-chunk-fa2')])).rejects.toThrow(
      /attentionChunk: fa2 has no attention chunk/,
    );
  });

  const bad: [string, number[], number[], RegExp][] = [
    ['decreasing offsets', [0, 4, 3, 13, 19], CK, /cu_seqlens_q\[2\].*non-decreasing/],
    ['a last offset that is not total_q', [0, 4, 4, 13, 18], CK, /cu_seqlens_q\[4\].*token count 19/],
    ['a last offset that is not total_k', CQ, [0, 7, 10, 15, 16], /cu_seqlens_k\[4\].*token count 15/],
    ['offsets of different lengths', CQ, [0, 7, 15], /cu_seqlens_k: must have the same length/],
  ];
  for (const [name, cq, ck, msg] of bad) {
    it(`refuses ${name}, writing nothing`, async () => {
      const out = path(`bad-${name.replace(/\W+/g, '-')}`);
      const argv = [
        '--algo',
        'fa2',
        ...varlenFiles({ cq: save('bcq.npy', cq, [cq.length], 'int32'), ck: save('bck.npy', ck, [ck.length], 'int32') }),
        '--out',
        out,
      ];
      await expect(runCommand.run(argv)).rejects.toThrow(msg);
      expect(existsSync(out)).toBe(false);
    });
  }
  it('refuses mismatched heads and head dims, naming the tensor', async () => {
    const argv = (k: string) => ['--algo', 'fa2', ...varlenFiles({ k }), '--out', path('never')];
    await expect(runCommand.run(argv(save('k3.npy', new Float32Array(15 * 3 * D), [15, 3, D])))).rejects.toThrow(
      /^k: q has 4 heads, k has 3/,
    );
    await expect(runCommand.run(argv(save('kd.npy', new Float32Array(15 * HK * 4), [15, HK, 4])))).rejects.toThrow(
      /^k: must have q's head dim 8/,
    );
    expect(existsSync(path('never'))).toBe(false);
  });
});

// ---- paged data: dense per-sequence K/V scattered into a NaN pool ----
const PS = 4;
const PAGES = 9;
const MAXP = 4;
const LENS = [6, 0, 13];
const TABLE = [7, 2, -1, -1, 0, 0, 0, 0, 5, 1, 8, 3]; // sequence 1 owns no page; its row is unused

function pagedCase(nq: number, causal: boolean) {
  const B = LENS.length;
  const q = new Float32Array(B * nq * H * D); // bnhd
  const kc = new Float32Array(PAGES * PS * HK * D).fill(NaN);
  const vc = new Float32Array(PAGES * PS * HK * DV).fill(NaN);
  const o = new Float64Array(B * nq * H * DV); // bnhd
  const lse = new Float64Array(B * H * nq).fill(-Infinity);
  LENS.forEach((L, b) => {
    const p: AttentionProblem = { ...base, batch: 1, nq, nk: Math.max(L, 1), causal };
    const x = randomInputs(p, { seed: 70 + b });
    for (let i = 0; i < nq; i++)
      for (let h = 0; h < H; h++) for (let c = 0; c < D; c++) q[((b * nq + i) * H + h) * D + c] = x.q[(h * nq + i) * D + c];
    for (let j = 0; j < L; j++) {
      const slot = TABLE[b * MAXP + Math.floor(j / PS)] * PS + (j % PS);
      for (let h = 0; h < HK; h++) {
        for (let c = 0; c < D; c++) kc[(slot * HK + h) * D + c] = x.k[(h * L + j) * D + c];
        for (let c = 0; c < DV; c++) vc[(slot * HK + h) * DV + c] = x.v[(h * L + j) * DV + c];
      }
    }
    if (L === 0) return;
    const r = referenceAttention(p, x);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < nq; i++) {
        lse[(b * H + h) * nq + i] = r.lse[h * nq + i];
        for (let c = 0; c < DV; c++) o[((b * nq + i) * H + h) * DV + c] = r.o[(h * nq + i) * DV + c];
      }
  });
  return { q, kc, vc, o, lse };
}

describe('run --k-cache/--v-cache/--block-table/--cache-seqlens (paged)', () => {
  const PAGED_ALGOS = ['flash-decoding', 'fa2', 'fmha-v2'];
  const argv = (nq: number, out: string, extra: string[] = [], table = TABLE, lens = LENS) => {
    const c = pagedCase(nq, extra.includes('--causal'));
    return {
      c,
      argv: [
        '--algo',
        PAGED_ALGOS.join(','),
        '--q',
        save(`pq${nq}.npy`, c.q, [3, nq, H, D]),
        '--layout',
        'bnhd',
        '--k-cache',
        save('kc.npy', c.kc, [PAGES, PS, HK, D]),
        '--v-cache',
        save('vc.npy', c.vc, [PAGES, PS, HK, DV]),
        '--block-table',
        save('bt.npy', table, [3, MAXP], 'int32'),
        '--cache-seqlens',
        save('cs.npy', lens, [3], 'int32'),
        ...extra,
        '--out',
        out,
      ],
    };
  };
  for (const [nq, causal] of [
    [1, false],
    [3, true],
  ] as const) {
    it(`decode Nq = ${nq}${causal ? ' causal chunk' : ''}: o [B, Nq, Hq, dv], lse [B, Hq, Nq], unowned NaN slots never read`, async () => {
      const out = path(`paged${nq}`);
      const { c, argv: a } = argv(nq, out, causal ? ['--causal'] : []);
      await runCommand.run(a);
      for (const algo of PAGED_ALGOS) {
        const o = await load(join(out, algo, 'o.npy'));
        const lse = await load(join(out, algo, 'lse.npy'));
        expect(o.info.shape).toEqual([3, nq, H, DV]);
        expect(lse.info.shape).toEqual([3, H, nq]);
        expect(maxErr(o.data, c.o), algo).toBeLessThan(2e-5);
        expect(maxErr(lse.data, c.lse), algo).toBeLessThan(2e-5);
        const stats = JSON.parse(readFileSync(join(out, algo, 'stats.json'), 'utf8'));
        expect(stats.pages_touched).toBe(2 + 4);
        expect(stats.hbm_bytes_read_by_tensor.block_table).toBeGreaterThan(0);
      }
    });
  }
  it('refuses a needed table entry out of range, a length beyond the table, mismatched heads; writes nothing', async () => {
    const out = path('paged-bad');
    const t = [...TABLE];
    t[2 * MAXP + 3] = PAGES; // sequence 2's fourth page, needed for tokens 12 … 12
    await expect(runCommand.run(argv(1, out, [], t).argv)).rejects.toThrow(/block_table\[2, 3\].*page 9 is out of range/);
    await expect(runCommand.run(argv(1, out, [], TABLE, [6, 0, 17]).argv)).rejects.toThrow(/cache_seqlens\[2\].*5 pages of 4.*4 columns/);
    const a = argv(1, out).argv;
    a[a.indexOf('--k-cache') + 1] = save('kc3.npy', new Float32Array(PAGES * PS * 3 * D), [PAGES, PS, 3, D]);
    await expect(runCommand.run(a)).rejects.toThrow(/^k_cache: q has 4 heads, k_cache has 3/);
    expect(existsSync(out)).toBe(false);
  });
});
