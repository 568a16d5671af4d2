// Masks on the WebGPU backend under Node (Dawn):
//   --check          every preset and seeded random masks against float64, dense and block-sparse,
//                    on each flash path the adapter offers (flash-matrix also at d 128, its tile alone on an SM)
//                    and on flash-decoding (small shapes: SwiftShader in CI);
//                    --random N, --no-presets, --row-only, --sparse-only, --paths a,b narrow it;
//   --time FILE      dense masked against block-sparse at full size (a real GPU), JSON lines to FILE
//                    with the unmasked problem on the dense kernel first (--sparse-only: block-sparse alone;
//                    --n narrows the sizes);
//   --full-tiles FILE  the unmasked dense kernel against block-sparse runs with every tile full, causal,
//                    10 documents and a window of N/16 (a real GPU; --n and --d lists narrow it), JSON lines to FILE;
//   --decode-time FILE  flash-decoding (B 4, Nq 1, d 128) dense against block-sparse with every tile full, half
//                    and a tenth of the keys (a real GPU), Hq/Hk 32/8 and 16/16, Nk 8192 and 32768, JSON lines to FILE.
// Exit status 1 when a check fails.

import { appendFileSync } from 'node:fs';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { nominalFlops } from '../core/problem.ts';
import { AttentionRun, type RunOptions } from '../webgpu/backend.ts';
import type { WebGpuContext, WebGpuPath } from '../webgpu/device.ts';
import { openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { presetCases, randomCases, runMaskChecks } from '../webgpu/mask-checks.ts';
import { timeSteady } from '../webgpu/steady-timing.ts';
import { decodeProblem } from './timing-study.ts';

const TOL: Partial<Record<WebGpuPath, number>> = {
  'flash-f32': 2e-4,
  'flash-subgroups': 2e-4,
  'flash-f16': 1e-2,
  'flash-matrix': 1e-2,
  decode: 1e-2,
};

interface CheckOptions {
  random: number;
  presets: boolean;
  /** Leave out the 4×4-tiled kernel's shape (d = 80). */
  rowOnly: boolean;
  sparseOnly: boolean;
  paths?: WebGpuPath[];
}

async function check(ctx: WebGpuContext, o: CheckOptions): Promise<boolean> {
  const all = (Object.keys(TOL) as WebGpuPath[])
    .filter((p) => ctx.paths.includes(p) && (!o.paths || o.paths.includes(p)))
    .map((path) => ({ path, tol: TOL[path]! }));
  const paths = all.filter((p) => p.path !== 'decode');
  const log = (d: number) => (r: { detail: string }) => console.log(`mask-check d${d} ${r.detail}`);
  let ok = true;
  // Flash-decoding walks the block list with or without --block-sparse: one query row and three, GQA, a ragged last tile.
  const decode = all.filter((p) => p.path === 'decode');
  for (const [nq, nk] of o.rowOnly
    ? [[1, 300]]
    : [
        [1, 300],
        [3, 700],
      ]) {
    if (!decode.length) break;
    const base: Omit<AttentionProblem, 'mask'> = { batch: 2, hq: 4, hk: 2, nq, nk, d: 64, dv: 64, causal: false, dtype: 'fp32' };
    const cases = [...(o.presets ? presetCases(base.hq, nq, nk) : []), ...randomCases(7 + nq, o.random, nk)];
    ok &&= (await runMaskChecks(ctx, base, cases, decode, 5, log(64), [true])).every((r) => r.ok);
  }
  // d = 32: the row kernel; d = 80: the 4×4-tiled kernel on the f32 paths. nq ≠ nk and ragged tiles.
  const shapes: [number, number, number][] = o.rowOnly
    ? [[32, 150, 200]]
    : [
        [32, 150, 200],
        [80, 70, 90],
      ];
  const runs = shapes.map(([d, nq, nk]): [number, number, number, typeof paths] => [d, nq, nk, paths]);
  // d = 128, Nq a multiple of 16: the subgroup-matrix tile alone on its SM, Q from its buffer, one loop over the block list.
  const matrix = paths.filter((p) => p.path === 'flash-matrix');
  if (matrix.length) runs.push([128, 160, 200, matrix]);
  for (const [d, nq, nk, on] of runs) {
    const base: Omit<AttentionProblem, 'mask'> = { batch: 2, hq: 2, hk: 1, nq, nk, d, dv: d, causal: false, dtype: 'fp32' };
    const cases = [...(o.presets ? presetCases(base.hq, nq, nk) : []), ...randomCases(11 + d, o.random, nk)];
    const results = await runMaskChecks(ctx, base, cases, on, 5, log(d), o.sparseOnly ? [true] : [false, true]);
    ok &&= results.every((r) => r.ok);
  }
  return ok;
}

/** Masks of the timing table: preset references for a sequence of n tokens. */
export function timingMasks(n: number): { name: string; ref: string }[] {
  return [
    { name: 'causal', ref: 'causal' },
    { name: 'sliding window 256', ref: 'sliding_window:256' },
    { name: 'document (8 docs)', ref: `document:${Array.from({ length: 8 }, () => n / 8).join(',')}` },
    { name: 'prefix-LM (n/4)', ref: `prefix_lm:${n / 4}` },
  ];
}

async function time(ctx: WebGpuContext, file: string, path: WebGpuPath, reps: number, sparseOnly: boolean, ns: number[]): Promise<void> {
  for (const n of ns)
    for (const d of [64, 128]) {
      const base = { batch: 4, hq: 16, hk: 16, nq: n, nk: n, d, dv: d, causal: false, dtype: 'fp16' as const };
      // The unmasked problem on the dense kernel: what the SDPA anchor is set against.
      if (!sparseOnly) writeRow(file, { n, d, mask: 'none', path, unmaskedMs: (await timedRun(ctx, base, { path }, reps)).ms });
      for (const m of timingMasks(n)) {
        const p: AttentionProblem = { ...base, mask: maskSpecFrom({ maskMod: m.ref }, { hq: 16, nq: n, nk: n }) };
        const row: Record<string, unknown> = { n, d, mask: m.name, path };
        for (const sparse of sparseOnly ? [true] : [false, true]) {
          let run: AttentionRun;
          try {
            run = await AttentionRun.create(ctx, p, { path, blockSparse: sparse });
          } catch (e) {
            row[sparse ? 'sparseError' : 'denseError'] = e instanceof Error ? e.message.slice(0, 300) : String(e);
            continue;
          }
          try {
            await run.fillRandom(1);
            const t = await timeSteady((b) => run.execute(b), { reps });
            row[sparse ? 'sparseMs' : 'denseMs'] = t.ms;
            if (sparse) {
              row.config = run.config;
              row.density = run.blockDensity;
            }
          } finally {
            run.destroy();
          }
        }
        if (typeof row.denseMs === 'number') row.tflopsDenseNominal = nominalFlops(base) / (row.denseMs * 1e9);
        writeRow(file, row);
      }
    }
}

/** One run timed in steady state: its time, the fraction of tiles its block list keeps (1 without one) and its configuration. */
async function timedRun(
  ctx: WebGpuContext,
  p: AttentionProblem,
  opts: RunOptions,
  reps: number,
): Promise<{ ms: number; density: number; config: string }> {
  const run = await AttentionRun.create(ctx, p, opts);
  try {
    await run.fillRandom(1);
    const t = await timeSteady((b) => run.execute(b), { reps });
    return { ms: t.ms, density: run.blockDensity ?? 1, config: run.config };
  } finally {
    run.destroy();
  }
}

/** A table row, printed and appended to the JSONL file. */
function writeRow(file: string, row: Record<string, unknown>): void {
  console.log(JSON.stringify(row));
  appendFileSync(file, `${JSON.stringify(row)}\n`);
}

/** Masks of the full-tile study: every tile full, then masks leaving about half and about a tenth of the tiles. */
export function fullTileMasks(n: number): { name: string; ref: string | undefined; sparse: boolean }[] {
  const docs = Array.from({ length: 10 }, (_, i) => Math.floor(((i + 1) * n) / 10) - Math.floor((i * n) / 10));
  return [
    { name: 'no mask, dense kernel', ref: undefined, sparse: false },
    // The unmasked problem walking a list of every tile: what the list's indirection costs alone.
    { name: 'no mask, block list of every tile', ref: undefined, sparse: true },
    { name: 'every tile full (kv_idx >= 0)', ref: 'kv_idx >= 0', sparse: true },
    { name: 'causal', ref: 'causal', sparse: true },
    { name: `document (10 docs)`, ref: `document:${docs.join(',')}`, sparse: true },
    { name: `sliding window ${n / 16}`, ref: `sliding_window:${n / 16}`, sparse: true },
  ];
}

/** --full-tiles FILE: the unmasked dense kernel against block-sparse runs whose full tiles run no mask tests. */
async function fullTiles(ctx: WebGpuContext, file: string, path: WebGpuPath, reps: number, ns: number[], ds: number[]): Promise<void> {
  for (const n of ns)
    for (const d of ds) {
      let unmasked: number | undefined;
      for (const m of fullTileMasks(n)) {
        const base: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: n, nk: n, d, dv: d, causal: false, dtype: 'fp16' };
        const p: AttentionProblem = m.ref ? { ...base, mask: maskSpecFrom({ maskMod: m.ref }, { hq: 16, nq: n, nk: n }) } : base;
        const t = await timedRun(ctx, p, { path, blockSparse: m.sparse }, reps);
        unmasked ??= t.ms;
        writeRow(file, { n, d, mask: m.name, path, ms: t.ms, density: t.density, vsUnmasked: t.ms / unmasked, config: t.config });
      }
    }
}

/** Masks of the decoding table: keys of one query row at the end of an nk-key cache. */
export function decodeMasks(nk: number): { name: string; ref: string | undefined; sparse: boolean }[] {
  return [
    { name: 'no mask, dense decode', ref: undefined, sparse: false },
    { name: 'every tile full (kv_idx >= 0)', ref: 'kv_idx >= 0', sparse: true },
    { name: `sliding window ${nk / 2}`, ref: `sliding_window:${nk / 2}`, sparse: true },
    { name: `sliding window ${nk / 10}`, ref: `sliding_window:${Math.round(nk / 10)}`, sparse: true },
  ];
}

/** --decode-time FILE: dense flash-decoding against the block-sparse split kernel on the same cache. */
async function decodeTime(ctx: WebGpuContext, file: string, reps: number): Promise<void> {
  for (const [hq, hk] of [
    [32, 8],
    [16, 16],
  ])
    for (const nk of [8192, 32768]) {
      let dense: number | undefined;
      for (const m of decodeMasks(nk)) {
        const base = decodeProblem(hq, hk, nk);
        const p: AttentionProblem = m.ref ? { ...base, mask: maskSpecFrom({ maskMod: m.ref }, { hq, nq: 1, nk }) } : base;
        const t = await timedRun(ctx, p, { path: 'decode', blockSparse: m.sparse }, reps);
        dense ??= t.ms;
        writeRow(file, { hq, hk, nk, mask: m.name, ms: t.ms, density: t.density, vsDense: t.ms / dense, config: t.config });
      }
    }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const ctx = await openNodeWebGpu();
  console.log(`adapter: ${ctx.adapterName}; paths: ${ctx.paths.join(', ')}`);
  if (argv.includes('--check')) {
    const i = argv.indexOf('--random');
    const pi = argv.indexOf('--paths');
    const ok = await check(ctx, {
      random: i >= 0 ? Number(argv[i + 1]) : 6,
      presets: !argv.includes('--no-presets'),
      rowOnly: argv.includes('--row-only'),
      sparseOnly: argv.includes('--sparse-only'),
      paths: pi >= 0 ? (argv[pi + 1].split(',') as WebGpuPath[]) : undefined,
    });
    console.log(ok ? 'mask-check: every case matches the float64 reference' : 'mask-check: FAILED');
    if (!ok) process.exitCode = 1;
  }
  const ft = argv.indexOf('--full-tiles');
  if (ft >= 0) {
    const pi = argv.indexOf('--path');
    const ri = argv.indexOf('--reps');
    const list = (name: string, dflt: number[]) => (argv.includes(name) ? argv[argv.indexOf(name) + 1].split(',').map(Number) : dflt);
    await fullTiles(
      ctx,
      argv[ft + 1],
      (pi >= 0 ? argv[pi + 1] : 'flash-matrix') as WebGpuPath,
      ri >= 0 ? Number(argv[ri + 1]) : 10,
      list('--n', [4096, 8192]),
      list('--d', [64, 128]),
    );
  }
  const dt = argv.indexOf('--decode-time');
  if (dt >= 0) {
    const ri = argv.indexOf('--reps');
    await decodeTime(ctx, argv[dt + 1], ri >= 0 ? Number(argv[ri + 1]) : 10);
  }
  const t = argv.indexOf('--time');
  if (t >= 0) {
    const pi = argv.indexOf('--path');
    const ri = argv.indexOf('--reps');
    await time(
      ctx,
      argv[t + 1],
      (pi >= 0 ? argv[pi + 1] : 'flash-matrix') as WebGpuPath,
      ri >= 0 ? Number(argv[ri + 1]) : 10,
      argv.includes('--sparse-only'),
      argv.includes('--n') ? argv[argv.indexOf('--n') + 1].split(',').map(Number) : [4096, 8192],
    );
  }
  ctx.device.destroy();
}

main().catch((e) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 1;
});
