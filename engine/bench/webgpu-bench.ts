// `npm run bench:webgpu`: TFLOP/s of every WebGPU path the adapter offers and of the
// standard-attention baseline, measured in one run, with the ratios; plus flash at
// N = 65536 (where the baseline cannot hold S) and flash-decoding at Nq = 1.
// Inputs are generated on the GPU; a few sampled rows of every run are checked against
// the float64 reference so a fast wrong kernel cannot hide.
//
// Options: --quick (N = 1024 only, for a smoke run), --n 1024,4096 (override the list),
// --no-65536, --reps k (timed repetitions; the median is reported), --skip tiles (no tile study).

import { nominalFlops, type AttentionProblem } from '../problem.ts';
import { PATH_LABELS, WebGpuUnavailable, type WebGpuPath } from '../webgpu/device.ts';
import { AttentionRun } from '../webgpu/backend.ts';
import type { FlashTile } from '../webgpu/flash-kernel.ts';
import { NO_ADAPTER_HELP, openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { checkSampledRows } from '../webgpu/row-check.ts';
import { KERNEL_VARIANTS } from '../webgpu/variants.ts';
import { randomInputs } from '../inputs.ts';
import { referenceAttention } from '../reference.ts';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes('--quick');
const NS = (opt('--n') ?? (quick ? '1024' : '1024,4096,8192')).split(',').map(Number);
const REPS = Number(opt('--reps') ?? 3);
const DS = (opt('--d') ?? '64,128').split(',').map(Number);
const SKIP = new Set((opt('--skip') ?? '').split(','));

interface Measured {
  ms: number;
  tflops: number;
  gbs: number;
  err: number;
  config: string;
  kernels: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function measure(ctx: Awaited<ReturnType<typeof openNodeWebGpu>>, p: AttentionProblem, path: WebGpuPath, reps: number, tile?: Partial<FlashTile>, warm = true, ablate?: 'softmax' | 'loads'): Promise<Measured | string> {
  let run: AttentionRun | undefined;
  try {
    run = await AttentionRun.create(ctx, p, { path, tile, ablate });
    await run.fillRandom(1234);
    if (warm) await run.execute(); // warm-up: pipeline caches, clocks
    const totals: number[] = [];
    let kernels = '';
    for (let r = 0; r < reps; r++) {
      const t = await run.execute();
      totals.push(t.reduce((a, k) => a + k.ms, 0));
      kernels = t.map((k) => `${k.name} ${k.ms.toFixed(2)} ms (${k.clock})`).join(', ');
    }
    const ms = median(totals);
    const check = ablate ? { maxAbsErrO: NaN, maxAbsErrLse: NaN } : await checkSampledRows(run, 3);
    const eb = path === 'flash-f16' || path === 'flash-matrix' ? 2 : 4;
    const bytes = (p.batch * (p.hq * p.nq * p.d + p.hk * p.nk * (p.d + p.dv))) * eb + p.batch * p.hq * p.nq * (p.dv + 1) * 4;
    return { ms, tflops: nominalFlops(p) / (ms * 1e9), gbs: bytes / (ms * 1e6), err: Math.max(check.maxAbsErrO, check.maxAbsErrLse), config: run.config, kernels };
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  } finally {
    run?.destroy();
  }
}

const fmt = (m: Measured | string) =>
  typeof m === 'string' ? `FAILED: ${m}` : `${m.tflops.toFixed(2).padStart(7)} TFLOP/s ${m.ms.toFixed(3).padStart(9)} ms  ${m.gbs.toFixed(0).padStart(5)} GB/s  maxerr ${m.err.toExponential(1)}`;

async function main(): Promise<number> {
  let ctx;
  try {
    ctx = await openNodeWebGpu();
  } catch (e) {
    if (e instanceof WebGpuUnavailable) {
      console.error(`bench:webgpu: ${e.message}\n${NO_ADAPTER_HELP}`);
      return 2;
    }
    throw e;
  }
  console.log(`FlashScope WebGPU benchmark — ${new Date().toISOString()}`);
  console.log(`adapter: ${ctx.adapterName}${ctx.isFallback ? ' (fallback/software)' : ''}`);
  console.log(`features: ${ctx.features.join(', ')}`);
  console.log(`limits: workgroup memory ${ctx.limits.maxWorkgroupStorage} B, ${ctx.limits.maxInvocations} invocations, storage binding ${ctx.limits.maxStorageBinding} B; subgroup size ${ctx.subgroupMinSize}–${ctx.subgroupMaxSize}`);
  console.log(`subgroup-matrix configs: ${ctx.matrixConfigs.map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}×${c.N}×${c.K}`).join(', ') || 'none'}`);
  console.log(`WGSL language features: ${ctx.wgslFeatures.join(', ')}`);
  console.log(`paths: ${ctx.paths.join(', ')}; timing: ${ctx.timestamps ? 'timestamp-query' : 'wall clock'}`);
  console.log('FLOPs = 4·B·H·Nq·Nk·d (halved when causal); GB/s = minimum traffic Q+K+V+O+LSE / time; maxerr = max |GPU − float64 reference| over 3 sampled rows (O and LSE)\n');
  // Self-test: every path on every variant against the full float64 reference.
  let worst = 0;
  for (const path of ctx.paths) {
    const errs: string[] = [];
    for (const v of KERNEL_VARIANTS) {
      const f16 = path === 'flash-f16' || path === 'flash-matrix';
      const p: AttentionProblem = { ...v.problem, dtype: f16 ? 'fp16' : 'fp32' };
      const x = randomInputs(p, { seed: 7 });
      const ref = referenceAttention(p, x);
      let run: AttentionRun | undefined;
      try {
        run = await AttentionRun.create(ctx, p, { path });
        run.upload(x);
        await run.execute();
        const r = await run.read();
        let e = 0;
        for (let i = 0; i < r.o.length; i++) e = Math.max(e, Math.abs(r.o[i] - ref.o[i]));
        for (let i = 0; i < r.lse.length; i++) e = Math.max(e, r.lse[i] === ref.lse[i] ? 0 : Math.abs(r.lse[i] - ref.lse[i]));
        errs.push(`${v.name} ${e.toExponential(1)}`);
        worst = Math.max(worst, f16 ? e / 30 : e);
      } catch (err) {
        errs.push(`${v.name} FAILED (${err instanceof Error ? err.message.slice(0, 300) : String(err)})`);
        worst = Infinity;
      } finally {
        run?.destroy();
      }
    }
    console.log(`self-test ${path}: ${errs.join(', ')}`);
  }
  console.log(`self-test: ${worst < 1e-4 ? 'all paths match the float64 reference' : 'MISMATCH — see above'}\n`);
  if (args.includes('--selftest-only')) return worst < 1e-4 ? 0 : 1;
  // Warm-up: the first second of GPU work runs at lower clocks, which skewed the first rows
  // of an earlier run (the same standard-attention pass measured 80 ms, then 21 ms).
  {
    const warm: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 64, dv: 64, causal: false, dtype: 'fp32' };
    const run = await AttentionRun.create(ctx, warm, { path: 'flash-f32' });
    await run.fillRandom(1);
    const t0 = Date.now();
    while (Date.now() - t0 < 3000) await run.execute();
    run.destroy();
  }
  const flashPaths = ctx.paths.filter((p) => p.startsWith('flash')) as WebGpuPath[];
  for (const d of DS) {
    for (const causal of [false, true]) {
      for (const n of NS) {
        const p: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: n, nk: n, d, dv: d, causal, dtype: 'fp32' };
        console.log(`B=4 H=16 N=${n} d=${d} ${causal ? 'causal' : 'non-causal'}`);
        const base = await measure(ctx, p, 'standard', REPS);
        console.log(`  ${'standard'.padEnd(16)} ${fmt(base)}   [${typeof base === 'string' ? '' : base.config}]`);
        for (const path of flashPaths) {
          const m = await measure(ctx, p, path, REPS);
          const ratio = typeof m !== 'string' && typeof base !== 'string' ? `  ×${(m.tflops / base.tflops).toFixed(2)} vs standard` : '';
          console.log(`  ${path.padEnd(16)} ${fmt(m)}${ratio}   [${typeof m === 'string' ? '' : m.config}]`);
        }
      }
    }
  }
  if (!args.includes('--no-65536') && !quick) {
    // d = 128 at N = 65536 needs 2 GiB per f32 tensor: one byte over Dawn's 2 GiB − 4 binding limit.
    for (const d of DS.filter((x) => x * 65536 * 64 * 4 < ctx.limits.maxStorageBinding)) {
      for (const causal of [false, true]) {
        const p: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 65536, nk: 65536, d, dv: d, causal, dtype: 'fp32' };
        console.log(`B=4 H=16 N=65536 d=${d} ${causal ? 'causal' : 'non-causal'}`);
        console.log(`  ${'standard'.padEnd(16)} ${fmt(await measure(ctx, p, 'standard', 1, undefined, false))}`);
        for (const path of flashPaths) console.log(`  ${path.padEnd(16)} ${fmt(await measure(ctx, p, path, 1, undefined, false))}`);
      }
    }
  }
  // Tile-size study of the f32 path at the headline shape.
  const head: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 64, dv: 64, causal: false, dtype: 'fp32' };
  if (!SKIP.has('tiles')) console.log('\ntile study, B=4 H=16 N=4096 d=64 non-causal (a preferred tile falls back to the largest that fits)');
  for (const path of ['flash-f32', 'flash-subgroups', 'flash-f16'] as WebGpuPath[]) {
    if (!ctx.paths.includes(path) || SKIP.has('tiles')) continue;
    for (const tile of [{ bm: 64, bn: 64, dk: 64, jc: 64 }, { bm: 128, bn: 64, dk: 16, jc: 16 }, { bm: 128, bn: 64, dk: 32, jc: 32 }, { bm: 128, bn: 32, dk: 32, jc: 32 }]) {
      const m = await measure(ctx, head, path, REPS, tile);
      console.log(`  ${path.padEnd(16)} ${JSON.stringify(tile).padEnd(36)} ${fmt(m)}   [${typeof m === 'string' ? '' : m.config}]`);
    }
  }
  // Where the subgroup-matrix path spends its time: the same kernel with a phase removed.
  if (ctx.paths.includes('flash-matrix')) {
    console.log('\nflash-matrix ablations, B=4 H=16 N=4096 d=64 non-causal (results of ablated kernels are wrong by design; time only)');
    for (const ablate of [undefined, 'softmax', 'loads'] as const) {
      const m = await measure(ctx, head, 'flash-matrix', REPS, undefined, true, ablate);
      console.log(`  ${(ablate ? `without ${ablate}` : 'full kernel').padEnd(18)} ${typeof m === 'string' ? m : `${m.tflops.toFixed(2)} TFLOP/s ${m.ms.toFixed(3)} ms`}`);
    }
  }
  // Flash-decoding: one query row per head against a long KV cache.
  for (const nk of quick ? [4096] : [8192, 32768]) {
    const p: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 1, nk, d: 128, dv: 128, causal: false, dtype: 'fp32' };
    console.log(`\ndecode B=4 H=16 Nq=1 Nk=${nk} d=128`);
    const dec = await measure(ctx, p, 'decode', REPS);
    const fl = await measure(ctx, p, 'flash-f32', REPS);
    console.log(`  ${'decode'.padEnd(16)} ${fmt(dec)}   [${typeof dec === 'string' ? '' : dec.config}]`);
    console.log(`  ${'flash-f32'.padEnd(16)} ${fmt(fl)}${typeof dec !== 'string' && typeof fl !== 'string' ? `   decode is ×${(fl.ms / dec.ms).toFixed(2)} faster` : ''}`);
  }
  console.log('\npath labels: ' + Object.entries(PATH_LABELS).map(([k, v]) => `${k} = ${v}`).join('; '));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
