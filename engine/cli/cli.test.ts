// The CLI end to end: `npm run -s engine -- run` spawned as a child process writes .npy
// files that match the float64 reference; `trace` writes parseable JSON lines whose
// counters add up; bad files and options fail with messages naming the problem. Error
// cases run in-process (the same command object main.ts dispatches to) to stay fast.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { randomInputs } from '../core/inputs.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import { MemorySource } from '../io/byte-source.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { fromJsonLine } from '../trace/jsonl.ts';
import type { TraceEvent } from '../trace/events.ts';
import { runCommand } from './run-command.ts';
import { traceCommand } from './trace-command.ts';
import { fromBhnd } from './problem-options.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = (name: string) => join(dir, name);
const save = (name: string, values: ArrayLike<number>, shape: number[], dtype: 'float16' | 'float32' | 'float64' = 'float32') => {
  writeFileSync(path(name), encodeNpy(values, shape, dtype));
  return path(name);
};
const load = async (file: string) => readNpy(new MemorySource(readFileSync(file), file));

function maxAbsErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) if (a[i] !== b[i]) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// One problem in bnhd layout, GQA, causal with Nq > Nk (fully masked rows), sinks.
const P: AttentionProblem = { batch: 2, hq: 4, hk: 2, nq: 19, nk: 13, d: 8, dv: 6, causal: true, sinks: [0.5, -1, 2, 0], dtype: 'fp32' };
const X = randomInputs(P, { seed: 9 });
const REF = referenceAttention(P, X);
const q = save('q.npy', fromBhnd(X.q, [2, 4, 19, 8], 'bnhd'), [2, 19, 4, 8]);
const k = save('k.npy', fromBhnd(X.k, [2, 2, 13, 8], 'bnhd'), [2, 13, 2, 8], 'float64');
const v = save('v.npy', fromBhnd(X.v, [2, 2, 13, 6], 'bnhd'), [2, 13, 2, 6]);
const sink = save('sink.npy', P.sinks!, [4]);

describe('engine CLI', () => {
  it('run (spawned through npm) writes o, lse and stats that match the reference', async () => {
    const out = path('out');
    const r = spawnSync(
      'npm',
      [
        'run',
        '-s',
        'engine',
        '--',
        'run',
        '--algo',
        'standard,fa1,fa2',
        '--q',
        q,
        '--k',
        k,
        '--v',
        v,
        '--layout',
        'bnhd',
        '--causal',
        '--sink',
        sink,
        '--block-m',
        '8',
        '--block-n',
        '4',
        '--out',
        out,
      ],
      { encoding: 'utf8' },
    );
    expect(r.stderr.replace(/npm warn.*\n/g, '')).toBe('');
    expect(r.status).toBe(0);
    const refBnhd = fromBhnd(REF.o, [2, 4, 19, 6], 'bnhd');
    for (const algo of ['standard', 'fa1', 'fa2']) {
      const o = await load(join(out, algo, 'o.npy'));
      expect(o.info.dtype).toBe('float32');
      expect(o.info.shape).toEqual([2, 19, 4, 6]);
      expect(maxAbsErr(o.data, refBnhd)).toBeLessThanOrEqual(2e-5);
      const lse = await load(join(out, algo, 'lse.npy'));
      expect(lse.info.shape).toEqual([2, 4, 19]);
      for (let i = 0; i < REF.lse.length; i++)
        expect(Math.abs(lse.data[i] - REF.lse[i])).toBeLessThanOrEqual(2e-5 * Math.max(1, Math.abs(REF.lse[i])));
      const stats = JSON.parse(readFileSync(join(out, algo, 'stats.json'), 'utf8'));
      expect(stats.nonfinite_inputs).toEqual({ q: 0, k: 0, v: 0 });
      for (const key of ['hbm_bytes_read', 'hbm_bytes_written', 'matmul_flops', 'exp_count', 'rescale_count', 'steps']) {
        expect((Number.isInteger(stats[key]) && stats[key] > 0) || (key === 'rescale_count' && algo === 'standard')).toBe(true);
      }
    }
  }, 20_000);

  it("run on non-finite inputs warns on stderr with the import's sentence and counts them in stats.json", () => {
    // Q all NaN; K with one +Infinity at (head 1, row 2, column 3); V clean. Rank 3: [H, N, d].
    const qn = save('qnan.npy', new Float32Array(2 * 4 * 8).fill(NaN), [2, 4, 8]);
    const kv = Float32Array.from({ length: 2 * 5 * 8 }, (_, i) => Math.sin(i));
    kv[(1 * 5 + 2) * 8 + 3] = Infinity;
    const ki = save('kinf.npy', kv, [2, 5, 8]);
    const vc = save(
      'vclean.npy',
      Float32Array.from({ length: 2 * 5 * 8 }, (_, i) => Math.cos(i)),
      [2, 5, 8],
    );
    const out = path('out-nan');
    const r = spawnSync(
      'node',
      ['--import', 'tsx', 'engine/cli/main.ts', 'run', '--algo', 'fa2', '--q', qn, '--k', ki, '--v', vc, '--out', out],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(0);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('warning:'))).toEqual([
      'warning: Q holds NaN at row 0, column 0 of batch 0, head 0 and 63 more non-finite values (64 of 64: 64 NaN, 0 ±Infinity); attention inputs must be finite',
      'warning: K holds Infinity at row 2, column 3 of batch 0, head 1; attention inputs must be finite',
    ]);
    const stats = JSON.parse(readFileSync(join(out, 'fa2', 'stats.json'), 'utf8'));
    expect(stats.nonfinite_inputs).toEqual({ q: 64, k: 1, v: 0 });
  }, 20_000);

  it('run on rank-2 float16 files keeps rank 2 and infers fp16', async () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 9, nk: 11, d: 4, dv: 4, causal: false, dtype: 'fp16' };
    const x = randomInputs(p, { seed: 4 });
    const out = path('out2');
    await runCommand.run([
      '--algo',
      'fa2',
      '--q',
      save('q2.npy', x.q, [9, 4], 'float16'),
      '--k',
      save('k2.npy', x.k, [11, 4], 'float16'),
      '--v',
      save('v2.npy', x.v, [11, 4], 'float16'),
      '--out',
      out,
    ]);
    const o = await load(join(out, 'fa2', 'o.npy'));
    expect(o.info.shape).toEqual([9, 4]);
    const stats = JSON.parse(readFileSync(join(out, 'fa2', 'stats.json'), 'utf8'));
    expect(stats.problem.dtype).toBe('fp16');
    expect(stats.hbm_bytes_read_by_tensor.Q).toBe(9 * 4 * 2);
    expect(maxAbsErr(o.data, referenceAttention(p, x).o)).toBeLessThan(2e-3);
  });

  it('run reads named tensors from one safetensors file (BF16), inferring bf16', async () => {
    const p: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 5, nk: 7, d: 4, dv: 4, causal: false, dtype: 'bf16' };
    const x = randomInputs(p, { seed: 6 }); // already rounded to bf16, so the top 16 bits are exact
    const bf16 = (a: Float32Array) => {
      const u = new Uint32Array(a.buffer.slice(0));
      const out = new Uint8Array(a.length * 2);
      for (let i = 0; i < a.length; i++) {
        out[2 * i] = (u[i] >>> 16) & 0xff;
        out[2 * i + 1] = u[i] >>> 24;
      }
      return out;
    };
    const parts = { q: bf16(x.q), k: bf16(x.k), v: bf16(x.v) };
    const header: Record<string, unknown> = {};
    let at = 0;
    for (const [name, bytes] of Object.entries(parts)) {
      header[name] = { dtype: 'BF16', shape: name === 'q' ? [2, 5, 4] : [2, 7, 4], data_offsets: [at, at + bytes.length] };
      at += bytes.length;
    }
    const json = new TextEncoder().encode(JSON.stringify(header));
    const file = new Uint8Array(8 + json.length + at);
    new DataView(file.buffer).setUint32(0, json.length, true);
    file.set(json, 8);
    let off = 8 + json.length;
    for (const bytes of Object.values(parts)) {
      file.set(bytes, off);
      off += bytes.length;
    }
    writeFileSync(path('qkv.safetensors'), file);
    const st = path('qkv.safetensors');
    const out = path('out-st');
    await runCommand.run(['--algo', 'fa1', '--q', `${st}:q`, '--k', `${st}:k`, '--v', `${st}:v`, '--out', out]);
    const o = await load(join(out, 'fa1', 'o.npy'));
    expect(o.info.shape).toEqual([2, 5, 4]);
    expect(JSON.parse(readFileSync(join(out, 'fa1', 'stats.json'), 'utf8')).problem.dtype).toBe('bf16');
    expect(maxAbsErr(o.data, referenceAttention(p, x).o)).toBeLessThan(1e-2);
    await expect(
      runCommand.run(['--algo', 'fa1', '--q', st, '--k', `${st}:k`, '--v', `${st}:v`, '--out', path('out-st2')]),
    ).rejects.toThrow(/holds 3 tensors \(q, k, v\); name one/);
  });

  it('trace writes one parseable event per line, -inf as a string, counters adding up', async () => {
    const file = path('trace.jsonl');
    await traceCommand.run([
      '--algo',
      'fa2,fa1',
      '--nq',
      '12',
      '--nk',
      '8',
      '--d',
      '4',
      '--causal',
      '--block-m',
      '4',
      '--block-n',
      '4',
      '--out',
      file,
    ]);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('"-Infinity"');
    const events = text
      .trim()
      .split('\n')
      .map((l) => fromJsonLine<TraceEvent & { algo: string }>(l));
    for (const algo of ['fa2', 'fa1']) {
      const mine = events.filter((e) => e.algo === algo);
      expect(mine.map((e) => e.step)).toEqual(mine.map((_, i) => i));
      const flops = mine.reduce((s, e) => s + (e.delta.matmulFlops ?? 0), 0);
      expect(flops).toBeGreaterThan(0);
    }
    const rowmax = events.find((e) => e.kind === 'rowmax' && e.algo === 'fa2')!;
    expect(rowmax.kind === 'rowmax' && rowmax.mBefore.every((m) => m === -Infinity)).toBe(true);
  });

  const bad = (name: string, bytes: Uint8Array) => {
    writeFileSync(path(name), bytes);
    return path(name);
  };
  const good = encodeNpy(new Float32Array(5 * 4), [5, 4]);
  const header = (h: string) => {
    const b = good.slice();
    const at = new TextDecoder('latin1').decode(b).indexOf('{');
    for (let i = 0; i < h.length; i++) b[at + i] = h.charCodeAt(i);
    return b;
  };
  const cases: [string, () => string[], RegExp][] = [
    [
      'truncated',
      () => ['--q', bad('t.npy', good.subarray(0, good.length - 7))],
      /t\.npy: shape \[5, 4\] of float32 needs 80 bytes .* holds 73 \(truncated\)/,
    ],
    [
      'wrong magic',
      () => ['--q', bad('m.npy', new TextEncoder().encode('not a numpy file at all'))],
      /m\.npy: not a \.npy file \(wrong magic/,
    ],
    ['Fortran order', () => ['--q', bad('f.npy', header("{'descr': '<f4', 'fortran_order': True , "))], /f\.npy: Fortran-order/],
    ['big-endian', () => ['--q', bad('be.npy', header("{'descr': '>f4'"))], /be\.npy: big-endian float .*'>f4'/],
    [
      'int dtype',
      () => ['--q', bad('i.npy', header("{'descr': '<i4'"))],
      /i\.npy: holds int32 values \(signed integer\); attention tensors must be float/,
    ],
    ['rank 5', () => ['--q', save('r5.npy', new Float32Array(20), [1, 1, 1, 5, 4])], /q: rank 5 tensor \[1, 1, 1, 5, 4\]/],
    ['head dims differ', () => ['--q', save('qd.npy', new Float32Array(15), [5, 3])], /d: q and k must have the same head dim/],
  ];
  for (const [name, args, message] of cases) {
    it(`rejects ${name} with a clear message`, async () => {
      const k5 = save('k5.npy', new Float32Array(20), [5, 4]);
      const argv = ['--algo', 'fa2', '--k', k5, '--v', k5, ...args(), '--out', path('never')];
      await expect(runCommand.run(argv)).rejects.toThrow(message);
    });
  }
  it('rejects mismatched v, sinks of the wrong length and unknown options before writing anything', async () => {
    const k5 = save('k5.npy', new Float32Array(20), [5, 4]);
    const v6 = save('v6.npy', new Float32Array(24), [6, 4]);
    const base = ['--algo', 'fa2', '--q', k5, '--k', k5, '--out', path('never')];
    await expect(runCommand.run([...base, '--v', v6])).rejects.toThrow(/v: v must have k's heads and length/);
    await expect(runCommand.run([...base, '--v', k5, '--sink', save('s2.npy', [1, 2], [2])])).rejects.toThrow(
      /--sink .* length 1 .* got shape \[2\]/,
    );
    await expect(runCommand.run([...base, '--v', k5, '--bogus'])).rejects.toThrow(/unknown option --bogus/);
    await expect(runCommand.run([...base, '--v', k5, '--window', '3'])).rejects.toThrow(/--window needs L,R/);
    await expect(runCommand.run([...base, '--v', k5, '--scale', 'Infinity'])).rejects.toThrow(/--scale needs a finite number/);
    await expect(runCommand.run([...base, '--v', k5, '--feature', 'x=1'])).rejects.toThrow(
      /unknown feature 'x' for fa2; accepted: \(none\)/,
    );
    await expect(runCommand.run(['--algo', 'standard,fa2', ...base.slice(2), '--v', k5, '--feature', 'x=1'])).rejects.toThrow(
      /unknown feature 'x' for standard; accepted: \(none\)/,
    );
    expect(() => readFileSync(path('never/standard/o.npy'))).toThrow();
    expect(() => readFileSync(path('never/fa2/o.npy'))).toThrow();
  });
  it('exits 1 with the message on stderr when spawned with a bad file', () => {
    const r = spawnSync(
      'node',
      ['--import', 'tsx', 'engine/cli/main.ts', 'run', '--algo', 'fa2', '--q', path('nothing.npy'), '--k', k, '--v', v, '--out', path('x')],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/error: cannot open .*nothing\.npy: ENOENT/);
  });
});
