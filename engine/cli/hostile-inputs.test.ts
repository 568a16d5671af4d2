// The hostile-input suite, command-line part: several hundred bad or careless invocations
// of run, trace, describe and simulate, each run in-process through the CLI's dispatcher
// (dispatch.ts, what main.ts runs). Every case asserts the exit status, a message that
// names the input at fault, and that nothing was left behind: no partial output, no
// temporary folder, no changed file.

import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  mkdirSync,
  type WriteStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { encodeNpy } from '../io/npy.ts';
import { outputFs } from './output-files.ts';
import { runCliCaptured } from './run-cli-captured.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const at = (name: string) => join(dir, name);

const values = (n: number, seed: number) => Array.from({ length: n }, (_, i) => Math.sin(i * 1.7 + seed));
const Q = at('q.npy');
const K = at('k.npy');
const V = at('v.npy');
writeFileSync(Q, encodeNpy(values(32, 1), [8, 4]));
writeFileSync(K, encodeNpy(values(32, 2), [8, 4]));
writeFileSync(V, encodeNpy(values(32, 3), [8, 4]));
writeFileSync(at('sink.npy'), encodeNpy([0.5], [1]));
writeFileSync(at('do.npy'), encodeNpy(values(32, 4), [8, 4]));
spawnSync('mkfifo', [at('fifo.npy')]);
mkdirSync(at('folder.npy'));
symlinkSync('/proc/self/status', at('proc.npy'));
symlinkSync('/dev/zero', at('zero.npy'));
symlinkSync('/dev/null', at('null.safetensors'));

/** Malformed tensor files, each with the words its refusal must contain. */
const npyHeader = (dict: string) => {
  const text = `${dict}${' '.repeat(64)}`.slice(0, 117) + '\n';
  const out = new Uint8Array(10 + text.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, text.length, 0]);
  out.set(new TextEncoder().encode(text), 10);
  return out;
};
const safetensorsOf = (header: unknown, dataBytes: number) => {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + dataBytes);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  return out;
};
const BAD_FILES: [string, Uint8Array, RegExp][] = [
  ['empty.npy', new Uint8Array(0), /too short/],
  ['magic.npy', new TextEncoder().encode('PK\x03\x04 not a numpy file at all'), /wrong magic/],
  ['version.npy', Uint8Array.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 9, 0, 0, 0, 0, 0]), /format version/],
  ['dict.npy', npyHeader('[1, 2, 3]'), /not a dict|malformed header/],
  ['descr.npy', npyHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (8, 4), }"), /c8|dtype|descr/],
  ['fortran.npy', npyHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (8, 4), }"), /Fortran/],
  ['shape.npy', npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (8, -4), }"), /shape/],
  ['short.npy', npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (8, 4), }"), /truncated|bytes|short/],
  ['ints.npy', encodeNpy([1, 2, 3, 4], [2, 2], 'int32'), /int32|integer/],
  ['rank5.npy', encodeNpy(values(32, 5), [1, 1, 2, 4, 4]), /rank 5/],
  [
    'st-json.safetensors',
    (() => {
      const f = safetensorsOf({ pad: 'xxxxxxxxxxxx' }, 0);
      f.set(new TextEncoder().encode('{not json'), 8);
      return f;
    })(),
    /not valid UTF-8 JSON|header claims/,
  ],
  [
    'st-overlap.safetensors',
    safetensorsOf(
      { q: { dtype: 'F32', shape: [8, 4], data_offsets: [0, 128] }, x: { dtype: 'F32', shape: [2], data_offsets: [64, 72] } },
      128,
    ),
    /overlap in data_offsets/,
  ],
  ['st-dtype.safetensors', safetensorsOf({ q: { dtype: 'I16', shape: [8, 4], data_offsets: [0, 64] } }, 64), /I16 is not supported/],
  ['st-span.safetensors', safetensorsOf({ q: { dtype: 'F32', shape: [8, 4], data_offsets: [0, 64] } }, 64), /needs 128 bytes/],
  ['st-trunc.safetensors', safetensorsOf({ q: { dtype: 'F32', shape: [8, 4], data_offsets: [0, 128] } }, 16), /truncated/],
  ['st-huge.safetensors', Uint8Array.from([255, 255, 255, 255, 255, 255, 0, 0, 123, 125]), /header length/],
];
for (const [name, bytes] of BAD_FILES) writeFileSync(at(name), bytes);

/** Every file under dir with its size and mtime: a case must leave this unchanged unless it succeeds. */
function snapshot(root = dir, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, e.name);
    const key = prefix + e.name;
    if (e.isDirectory()) {
      out.set(key + '/', 'dir');
      for (const [k, v] of snapshot(p, key + '/')) out.set(k, v);
    } else if (e.isFile()) {
      const st = statSync(p);
      out.set(key, `${st.size}:${st.mtimeMs}`);
    } else out.set(key, 'special');
  }
  return out;
}

async function cli(argv: string[]): Promise<{ code: number; err: string; out: string }> {
  const r = await runCliCaptured(argv);
  return { code: r.status, err: r.stderr, out: r.stdout };
}

interface Case {
  name: string;
  argv: string[];
  code: number;
  /** What stderr must say: the input at fault, and why. */
  says: RegExp;
}

const files = ['--q', Q, '--k', K, '--v', V];
let outCount = 0;
const freshOut = () => at(`out-${outCount++}`);
const run = (...extra: string[]) => ['run', '--algo', 'fa2', ...files, '--out', freshOut(), ...extra];
const trace = (...extra: string[]) => ['trace', '--algo', 'fa2', '--out', `${freshOut()}.jsonl`, ...extra];
const hw = (cmd: string, ...extra: string[]) => [cmd, '--algo', 'fa3', '--gpu', 'h100', ...extra];

const cases: Case[] = [];
const add = (name: string, argv: string[], code: number, says: RegExp) => cases.push({ name, argv, code, says });
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// Numeric options: not numbers, not finite, not integers, out of range. The option is named.
const NOT_NUMBERS = ['abc', '', ' ', 'NaN', 'Infinity', '-Infinity', '1e400', '0x', '--', '1,5', '½'];
const BAD_SIZES = [...NOT_NUMBERS, '-1', '0', '1.5', '2147483648', '1e12', '-0.5'];
for (const opt of ['b', 'hq', 'hk', 'nq', 'nk', 'd', 'dv'])
  for (const v of BAD_SIZES) add(`trace --${opt} '${v}'`, trace(`--${opt}=${v}`), 1, new RegExp(`--${opt}`));
for (const opt of ['block-m', 'block-n', 'sram-bytes', 'max-bytes'])
  for (const v of [...NOT_NUMBERS, '-1', '0', '2.5']) add(`run --${opt} '${v}'`, run(`--${opt}=${v}`), 1, new RegExp(`--${opt}`));
for (const v of [...NOT_NUMBERS, '-1', '0']) add(`run --softcap '${v}'`, run(`--softcap=${v}`), 1, /--softcap/);
for (const v of NOT_NUMBERS) add(`run --scale '${v}'`, run(`--scale=${v}`), 1, /--scale/);
for (const v of [...NOT_NUMBERS, '-1', '1.5', '4294967296']) add(`trace --seed '${v}'`, trace(`--seed=${v}`), 1, /--seed/);

// Sizes that parse but would not fit: refused by the size model, naming the option, before any allocation.
for (const [opt, v] of [
  ['b', '1000000000'],
  ['b', '100000'],
  ['hq', '100000'],
  ['nq', '100000'],
  ['nq', '1000000'],
  ['nk', '1000000'],
  ['d', '1000000'],
  ['d', '3000000'],
  ['dv', '1000000'],
  ['nq', '2147483647'],
] as const) {
  // --d also sets dv, and nk follows nq: the advice may name the dimension that follows.
  add(`trace --${opt} ${v}`, trace(`--${opt}`, v), 1, new RegExp(`would need about .*make --${opt === 'd' ? 'dv?' : opt}`));
}
add('trace --nq 100000 --max-bytes 1000', trace('--nq', '100000', '--max-bytes', '1000'), 1, /this (run|trace) would need about/);
add(
  'trace --nq 4096 over a small --max-bytes',
  trace('--nq', '4096', '--max-bytes', '1000000'),
  1,
  /this trace would need about .* raise --max-bytes/,
);
add('run --max-bytes 1000', run('--max-bytes', '1000'), 1, /this run would need about .*--max-bytes/);
writeFileSync(at('q3.npy'), encodeNpy(values(32, 1), [8, 1, 4]));
writeFileSync(at('cu.npy'), encodeNpy([0, 3, 8], [3], 'int32'));
const varlen = [
  '--q',
  at('q3.npy'),
  '--k',
  at('q3.npy'),
  '--v',
  at('q3.npy'),
  '--cu-seqlens-q',
  at('cu.npy'),
  '--cu-seqlens-k',
  at('cu.npy'),
];
add(
  'run varlen --max-bytes 1000',
  ['run', '--algo', 'fa2', ...varlen, '--out', freshOut(), '--max-bytes', '1000'],
  1,
  /this run would need about .* --q's length|this run would need about/,
);
add('run varlen, DIR/fa2 exists', ['run', '--algo', 'fa2', ...varlen, '--out', at('outs')], 1, /outs\/fa2 already exists/);
add('trace --hk 1000000000', trace('--hk', '1000000000'), 1, /hk/);

// Options that are not options, including every Object.prototype name.
const PROTO = [
  'constructor',
  '__proto__',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  '__defineGetter__',
  'propertyIsEnumerable',
  'toLocaleString',
];
for (const name of [...PROTO, 'bogus', 'Q', 'out-dir']) {
  add(`run --${name}`, run(`--${name}`, '1'), 1, new RegExp(`unknown option '?--${esc(name)}`));
  add(`trace --${name}`, trace(`--${name}`, '1'), 1, new RegExp(`unknown option '?--${esc(name)}`));
  add(`describe --${name}`, hw('describe', `--${name}`), 1, new RegExp(`unknown option '?--${esc(name)}`));
  add(`simulate --${name}`, hw('simulate', `--${name}`), 1, new RegExp(`unknown option '?--${esc(name)}`));
}

// Named values: prototype names and junk are refused by name, never looked up on Object.prototype.
for (const v of [...PROTO, '', 'x', 'FA2 ']) {
  add(`run --layout '${v}'`, run('--layout', v), 1, /--layout/);
  add(`run --dtype '${v}'`, run('--dtype', v), 1, /--dtype/);
  add(`trace --distribution '${v}'`, trace('--distribution', v), 1, /--distribution/);
  add(`run --window '${v}'`, run('--window', v), 1, /--window/);
  add(`run --feature '${v}'`, run('--feature', v), 1, /--feature/);
  add(`trace --format '${v}'`, trace('--format', v), 1, /--format/);
  add(
    `run --backend webgpu --path '${v}'`,
    ['run', '--backend', 'webgpu', '--path', v, '--nq', '8', '--out', freshOut()],
    1,
    /--path must be one of/,
  );
  if (v !== '' && v !== 'x' && v !== 'FA2 ') {
    add(`run --algo ${v}`, ['run', '--algo', v, ...files, '--out', freshOut()], 1, new RegExp(`${esc(v)}`));
    add(`describe --gpu ${v}`, ['describe', '--algo', 'fa3', '--gpu', v], 1, /GPU/);
    add(`simulate --algo ${v}`, ['simulate', '--algo', v, '--gpu', 'h100'], 1, new RegExp(esc(v)));
    add(`run --backend ${v}`, ['run', '--backend', v, ...files, '--out', freshOut()], 1, /--backend must be cpu or webgpu/);
  }
}

// describe / simulate sizes: the option parser run and trace use refuses them, naming the option.
for (const opt of ['b', 'hq', 'nq', 'd', 'stages', 'splits'])
  for (const v of ['0', '-1', '1.5', '1e12', 'NaN', 'x'])
    add(`simulate --${opt} ${v}`, hw('simulate', `--${opt}`, v), 1, new RegExp(`--${opt}`));
// Sizes that parse but no kernel runs: the model refuses them with upstream's reason or the grid it would need.
add('simulate --nq 1e9', hw('simulate', '--nq', '1e9'), 1, /grid would hold about .* make hq or nq smaller/);
add('simulate --d 1e9', hw('simulate', '--d', '1e9'), 1, /head dimension at most 256/);
add('describe --seqlens-q 1,x', hw('describe', '--seqlens-q', '1,x'), 1, /--seqlens-q needs lengths/);
add('describe --pack-gqa maybe', hw('describe', '--pack-gqa', 'maybe'), 1, /--pack-gqa must be true or false/);
add('describe --seed 1', hw('describe', '--seed', '1'), 1, /--seed sets how the numeric engine steps/);
// The attention chunk: refused by the algorithms and kernels that do not take it, naming it.
add('run fa2 --attention-chunk 8', run('--attention-chunk', '8'), 1, /attentionChunk: fa2 has no attention chunk/);
add(
  'run --attention-chunk 0',
  [...run('--attention-chunk', '0')].map((v) => (v === 'fa2' ? 'fa3' : v)),
  1,
  /--attention-chunk: attention chunk: must be at least 1/,
);
add(
  'run --backend webgpu --attention-chunk 8',
  ['run', '--backend', 'webgpu', '--nq', '8', '--attention-chunk', '8', '--out', freshOut()],
  1,
  /--attention-chunk: the WebGPU kernels have no attention chunk/,
);

// Input paths that are not tensor files: FIFOs (an open would block forever), devices, /proc, folders, missing files.
const INPUT_SPECIAL: [string, RegExp][] = [
  [at('fifo.npy'), /fifo\.npy: is a FIFO/],
  [at('folder.npy'), /folder\.npy: is a folder/],
  [at('proc.npy'), /proc\.npy: is a kernel file/],
  [at('zero.npy'), /zero\.npy: is a character device/],
  [at('null.safetensors'), /null\.safetensors: is a character device/],
  [at('missing.npy'), /missing\.npy.*ENOENT/],
  [at('notes.txt'), /notes\.txt: unknown tensor file type/],
];
for (const [path, says] of INPUT_SPECIAL) {
  for (const role of ['q', 'k', 'v']) {
    const argv = ['run', '--algo', 'fa2', ...files, '--out', freshOut()];
    argv[argv.indexOf(`--${role}`) + 1] = path;
    add(`run --${role} ${path}`, argv, 1, says);
  }
  add(`run --sink ${path}`, run('--sink', path), 1, says);
  add(`run --alibi-slopes ${path}`, run('--alibi-slopes', path), 1, says);
  add(`run --do ${path}`, run('--do', path), 1, says);
  add(`trace --do ${path}`, ['trace', '--algo', 'fa2', ...files, '--do', path, '--out', `${freshOut()}.jsonl`], 1, says);
}

// Malformed files in every tensor role.
for (const [name, , says] of BAD_FILES) {
  for (const role of ['q', 'k', 'v']) {
    const argv = ['run', '--algo', 'fa2', ...files, '--out', freshOut()];
    argv[argv.indexOf(`--${role}`) + 1] = at(name);
    // A file that parses but has the wrong rank is named by its role.
    const who = name === 'rank5.npy' ? role : esc(name);
    add(`run --${role} ${name}`, argv, 1, new RegExp(`${who}.*${says.source}|${says.source}.*${who}`));
  }
}

// Outputs: never over an existing output without --force, never over an input, never into /proc, /sys or /dev.
writeFileSync(at('taken.jsonl'), 'keep me\n');
mkdirSync(at('outs/fa1'), { recursive: true });
writeFileSync(at('outs/fa2'), 'a file where fa2/ would go\n');
spawnSync('mkfifo', [at('pipe.jsonl')]);
const OUT_REFUSALS: [string, string[], RegExp][] = [
  ['trace over an existing file', ['trace', '--algo', 'fa2', '--out', at('taken.jsonl')], /taken\.jsonl already exists; pass --force/],
  ['trace over its own input', ['trace', '--algo', 'fa2', ...files, '--out', Q, '--force'], /would overwrite the input --q/],
  ['trace over a FIFO', ['trace', '--algo', 'fa2', '--out', at('pipe.jsonl'), '--force'], /pipe\.jsonl is a FIFO/],
  [
    'run, DIR/fa2 an existing file',
    ['run', '--algo', 'fa1,fa2', ...files, '--out', at('outs')],
    /outs\/fa1 already exists|outs\/fa2 already exists/,
  ],
  [
    'run over the folder of its input',
    ['run', '--algo', 'fa2', '--q', at('outs/fa2'), '--k', K, '--v', V, '--out', at('outs'), '--force'],
    /unknown tensor file type|would overwrite/,
  ],
];
for (const target of ['/proc/self', '/proc/self/fd', '/sys/kernel', '/sys', '/dev', '/dev/shm-not-here', '/proc/1/task', '/dev/null']) {
  OUT_REFUSALS.push([
    `run --out ${target}`,
    ['run', '--algo', 'fa2', ...files, '--out', join(target, 'flashscope-out')],
    /kernel file system|not a folder/,
  ]);
  OUT_REFUSALS.push([
    `trace --out ${target}`,
    ['trace', '--algo', 'fa2', '--out', join(target, 'trace.jsonl')],
    /kernel file system|not a folder/,
  ]);
}
OUT_REFUSALS.push([
  'trace --out /dev/null',
  ['trace', '--algo', 'fa2', '--out', '/dev/null', '--force'],
  /kernel file system|character device/,
]);
for (const [name, argv, says] of OUT_REFUSALS) add(name, argv, 1, says);

describe('hostile CLI inputs', () => {
  it('holds at least 300 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(300);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = snapshot();
    const r = await cli(c.argv);
    expect(r.code, r.err).toBe(c.code);
    expect(r.err).toMatch(/^error: /);
    expect(r.err).toMatch(c.says);
    // No stack traces, no engine internals: one message a person can act on.
    expect(r.err).not.toMatch(/\n\s+at |Invalid (typed )?array length|TypeError|undefined is not/);
    expect(snapshot()).toEqual(before);
  });
});

describe('hostile CLI outputs', () => {
  it('--force replaces an existing output whole, and leaves no temporary folder', async () => {
    const out = at('forced');
    expect((await cli(['run', '--algo', 'fa1,fa2', ...files, '--out', out])).code).toBe(0);
    const first = readFileSync(join(out, 'fa2', 'o.npy'));
    writeFileSync(join(out, 'fa2', 'stale.txt'), 'from before');
    const again = await cli(['run', '--algo', 'fa2', ...files, '--scale', '0.25', '--out', out, '--force']);
    expect(again.code, again.err).toBe(0);
    expect(readdirSync(join(out, 'fa2')).sort()).toEqual(['error.json', 'lse.npy', 'o.npy', 'stats.json']);
    expect(readFileSync(join(out, 'fa2', 'o.npy'))).not.toEqual(first);
    expect(readdirSync(out).sort()).toEqual(['fa1', 'fa2']);
  });

  it('a disk that fills part-way leaves no file behind (run and trace)', async () => {
    const full = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const realWrite = outputFs.writeFile;
    let writes = 0;
    const w = vi.spyOn(outputFs, 'writeFile').mockImplementation(async (path, data) => {
      if (++writes < 3) return realWrite(path, data);
      await realWrite(path, data.slice(0, 5));
      throw full();
    });
    const s = vi.spyOn(outputFs, 'createWriteStream').mockImplementation((path) => {
      let chunks = 0;
      const sink = new Writable({
        write(chunk, _enc, done) {
          if (chunks++ > 0) return done(full());
          appendFileSync(path, chunk);
          done();
        },
      });
      return sink as unknown as WriteStream;
    });
    try {
      const before = snapshot();
      const r = await cli(['run', '--algo', 'fa1,fa2', ...files, '--out', at('full')]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/^error: ENOSPC: no space left on device/);
      expect(snapshot()).toEqual(before);
      const t = await cli(['trace', '--algo', 'fa2', '--nq', '256', '--out', at('full.jsonl')]);
      expect(t.code).toBe(1);
      expect(t.err).toMatch(/^error: ENOSPC: no space left on device/);
      expect(writes).toBe(3);
      expect(snapshot()).toEqual(before);
    } finally {
      w.mockRestore();
      s.mockRestore();
    }
  });

  it('an output that is all NaN is written with a warning and exit status 3', async () => {
    const out = at('nan');
    const r = await cli(['run', '--algo', 'fa2,standard', ...files, '--scale', '1e308', '--out', out]);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/warning: fa2: every value of the output is NaN or infinite/);
    expect(readdirSync(out).sort()).toEqual(['fa2', 'standard']);
    expect((await cli(['run', '--algo', 'fa2', ...files, '--scale', '0.5', '--out', at('finite')])).code).toBe(0);
  });

  it('block sizes larger than N are capped at N', async () => {
    const out = at('capped.jsonl');
    const r = await cli(['trace', '--algo', 'fa2', '--nq', '16', '--block-m', '1000000000', '--block-n', '2000000000', '--out', out]);
    expect(r.code, r.err).toBe(0);
    const first = JSON.parse(readFileSync(out, 'utf8').split('\n')[0]);
    expect(first.algo).toBe('fa2');
    const stats = await cli(['run', '--algo', 'fa2', ...files, '--block-m', '1000000000', '--out', at('capped')]);
    expect(stats.code, stats.err).toBe(0);
    expect(JSON.parse(readFileSync(at('capped/fa2/stats.json'), 'utf8')).block_m).toBe(8);
  });
});
