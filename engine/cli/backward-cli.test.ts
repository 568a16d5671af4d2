// The backward's command-line contract end to end: `run --do` (spawned through npm once,
// in-process otherwise) writes dq/dk/dv.npy in q/k/v's rank and layout, float32, matching
// the float64 reference gradients; a dO of the wrong shape and algorithms without a
// backward are refused before anything is written; `trace --backward` streams events
// whose counters add up to the run's.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { maxAbs } from '../algorithms/accuracy-matrix.ts';
import { naiveBackwardSamePrecision } from '../backward/accuracy-support.ts';
import { randomGradOutput } from '../backward/grad-output.ts';
import { referenceBackward } from '../backward/reference-backward.ts';
import { randomInputs } from '../core/inputs.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { TraceEvent } from '../trace/events.ts';
import { fromJsonLine } from '../trace/jsonl.ts';
import { fromBhnd } from './problem-options.ts';
import { backwardById } from '../algorithms/backward-registry.ts';
import type { BackwardInputs } from '../backward/types.ts';
import { runToEnd } from '../run.ts';
import { runCommand } from './run-command.ts';
import { traceCommand } from './trace-command.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-bwd-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = (name: string) => join(dir, name);
const save = (name: string, values: ArrayLike<number>, shape: number[], dtype: 'float16' | 'float32' = 'float32') => {
  writeFileSync(path(name), encodeNpy(values, shape, dtype));
  return path(name);
};
const load = async (file: string) => readNpy(new MemorySource(readFileSync(file), file));
const ALGOS = ['standard', 'fa1', 'fa2', 'fa3'];

// bnhd, GQA, causal with Nq > Nk (fully masked rows), sinks, softcap, dv != d.
const P: AttentionProblem = {
  batch: 2,
  hq: 4,
  hk: 2,
  nq: 19,
  nk: 13,
  d: 8,
  dv: 6,
  causal: true,
  sinks: [0.5, -1, 2, 0],
  softcap: 4,
  dtype: 'fp32',
};
const X = randomInputs(P, { seed: 9 });
const DO = randomGradOutput(P, 9);
const REF = referenceBackward(P, { ...X, dO: DO });
const files = {
  q: save('q.npy', fromBhnd(X.q, [2, 4, 19, 8], 'bnhd'), [2, 19, 4, 8]),
  k: save('k.npy', fromBhnd(X.k, [2, 2, 13, 8], 'bnhd'), [2, 13, 2, 8]),
  v: save('v.npy', fromBhnd(X.v, [2, 2, 13, 6], 'bnhd'), [2, 13, 2, 6]),
  do: save('do.npy', fromBhnd(DO, [2, 4, 19, 6], 'bnhd'), [2, 19, 4, 6]),
  sink: save('sink.npy', P.sinks!, [4]),
};
const common = ['--q', files.q, '--k', files.k, '--v', files.v, '--layout', 'bnhd', '--causal', '--sink', files.sink, '--softcap', '4'];

describe('run --do', () => {
  it('writes dq, dk, dv (float32, rank and layout of q, k, v) within 1e-4 of float64 for standard, fa1, fa2, fa3', async () => {
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
        ALGOS.join(','),
        ...common,
        '--do',
        files.do,
        '--block-m',
        '8',
        '--block-n',
        '4',
        '--out',
        out,
      ],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stderr.replace(/npm warn.*\n/g, '')).toBe('');
    expect(r.status).toBe(0);
    for (const algo of ALGOS) {
      for (const [name, ref, dims, shape] of [
        ['dq', REF.dq, [2, 4, 19, 8], [2, 19, 4, 8]],
        ['dk', REF.dk, [2, 2, 13, 8], [2, 13, 2, 8]],
        ['dv', REF.dv, [2, 2, 13, 6], [2, 13, 2, 6]],
        ['o', REF.o, [2, 4, 19, 6], [2, 19, 4, 6]],
      ] as const) {
        const t = await load(join(out, algo, `${name}.npy`));
        expect(t.info.dtype).toBe('float32');
        expect(t.info.shape).toEqual(shape);
        expect(maxAbs(t.data, fromBhnd(ref, [...dims], 'bnhd')), `${algo} ${name}`).toBeLessThanOrEqual(1e-4);
      }
      expect((await load(join(out, algo, 'lse.npy'))).info.shape).toEqual([2, 4, 19]);
      const stats = JSON.parse(readFileSync(join(out, algo, 'stats.json'), 'utf8'));
      expect(stats.backward.matmul_flops).toBeGreaterThan(0);
      expect(stats.backward.hbm_bytes_written_by_tensor.dK).toBeGreaterThan(0);
      expect(stats.backward.atomic_adds > 0).toBe(algo === 'fa2' || algo === 'fa3');
    }
  }, 60_000);

  it('keeps rank 2 and fp16 from float16 files, within the 16-bit rule', async () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 21, nk: 17, d: 8, dv: 8, causal: false, dtype: 'fp16' };
    const x = randomInputs(p, { seed: 3 });
    const dO = randomGradOutput(p, 3);
    const out = path('out16');
    await runCommand.run([
      '--algo',
      'fa2,fa3',
      '--q',
      save('q16.npy', x.q, [21, 8], 'float16'),
      '--k',
      save('k16.npy', x.k, [17, 8], 'float16'),
      '--v',
      save('v16.npy', x.v, [17, 8], 'float16'),
      '--do',
      save('do16.npy', dO, [21, 8], 'float16'),
      '--out',
      out,
    ]);
    const ref = referenceBackward(p, { ...x, dO });
    const naive = naiveBackwardSamePrecision(p, { ...x, dO });
    for (const algo of ['fa2', 'fa3'])
      for (const name of ['dq', 'dk', 'dv'] as const) {
        const t = await load(join(out, algo, `${name}.npy`));
        expect(t.info.shape).toEqual(name === 'dq' ? [21, 8] : [17, 8]);
        expect(maxAbs(t.data, ref[name])).toBeLessThanOrEqual(Math.max(2 * maxAbs(naive[name], ref[name]), 4e-3));
      }
  });

  it('refuses a dO whose shape is not O’s, naming dO and the expected shape, and writes nothing', async () => {
    const wrong = save('do-wrong.npy', new Float32Array(2 * 19 * 4 * 8), [2, 19, 4, 8]);
    await expect(runCommand.run(['--algo', 'fa2', ...common, '--do', wrong, '--out', path('never1')])).rejects.toThrow(
      /dO: .*expected shape \[2, 19, 4, 6\] \(the shape of O.*got \[2, 19, 4, 8\]/,
    );
    expect(existsSync(path('never1'))).toBe(false);
  });

  it('refuses algorithms without a backward before anything is written', async () => {
    for (const algo of ['cute-fa2', 'fmha-v2', 'flash-decoding', 'sage']) {
      await expect(runCommand.run(['--algo', `fa2,${algo}`, ...common, '--do', files.do, '--out', path('never2')])).rejects.toThrow(
        new RegExp(`algo: ${algo} has no backward pass in FlashScope; backward passes exist for standard, fa1, fa2, fa3, fa4`),
      );
    }
    expect(existsSync(path('never2'))).toBe(false);
  });
});

describe('trace --backward / --do', () => {
  it('streams backward events tagged pass=backward whose deltas add up to the run’s backward counters', async () => {
    const file = path('bwd.jsonl');
    await traceCommand.run([
      '--algo',
      'fa2,fa3',
      '--nq',
      '12',
      '--nk',
      '9',
      '--d',
      '4',
      '--causal',
      '--block-m',
      '4',
      '--block-n',
      '4',
      '--backward',
      '--seed',
      '2',
      '--out',
      file,
    ]);
    const events = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => fromJsonLine<TraceEvent & { algo: string }>(l));
    for (const algo of ['fa2', 'fa3']) {
      const mine = events.filter((e) => e.algo === algo);
      expect(mine.every((e) => e.pass === 'backward')).toBe(true);
      expect(mine.map((e) => e.step)).toEqual(mine.map((_, i) => i));
      expect(new Set(mine.map((e) => e.kind))).toEqual(
        new Set(['load', 'dsum', 'write', 'qk', 'mask', 'recompute', 'dv', 'dp', 'ds', 'dq', 'dk', 'dqconvert']),
      );
      const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 12, nk: 9, d: 4, dv: 4, causal: true, dtype: 'fp32' };
      const x: BackwardInputs = { ...randomInputs(p, { seed: 2 }), dO: randomGradOutput(p, 2) };
      const run = runToEnd(backwardById(algo), p, x, { blockM: 4, blockN: 4 });
      const sum = (f: (e: TraceEvent) => number) => mine.reduce((s, e) => s + f(e), 0);
      expect(sum((e) => e.delta.matmulFlops ?? 0)).toBe(run.counters.matmulFlops);
      expect(sum((e) => e.delta.atomicAdds ?? 0)).toBe(run.counters.atomicAdds);
      expect(sum((e) => e.delta.hbmRead?.dQaccum ?? 0)).toBe(run.counters.hbmRead.dQaccum);
      expect(run.counters.atomicAdds).toBeGreaterThan(0);
      expect(mine.length).toBe(run.counters.steps);
    }
  });

  it('uses the dO file when given', async () => {
    const file = path('bwd-do.jsonl');
    await traceCommand.run(['--algo', 'fa1', ...common, '--do', files.do, '--block-m', '8', '--block-n', '8', '--out', file]);
    const first = fromJsonLine<TraceEvent>(
      readFileSync(file, 'utf8')
        .split('\n')
        .find((l) => l.includes('"kind":"dv"'))!,
    );
    // The first dv event of (b 0, h 0) shows dO rows 0.. of the file (bnhd → row-major rows of head 0).
    expect(first.kind === 'dv' && first.dO.slice(0, 6)).toEqual(
      Array.from(DO.subarray(first.tile.rows[0] * 6, first.tile.rows[0] * 6 + 6)),
    );
  });
});
