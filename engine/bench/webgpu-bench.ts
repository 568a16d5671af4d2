// `npm run bench:webgpu`: TFLOP/s of every WebGPU path the adapter offers and of the
// standard-attention baseline, measured in one run, with the ratios; plus flash at
// N = 65536 (where the baseline cannot hold S) and flash-decoding at Nq = 1.
// Inputs are generated on the GPU; a few sampled rows of every run are checked against
// the float64 reference so a fast wrong kernel cannot hide.
//
// Options: --quick (N = 1024 only, for a smoke run), --n 1024,4096 (override the list),
// --no-65536, --reps k (timed repetitions; the median is reported), --skip tiles (no tile study),
// --paths a,b (only these paths, self-test included; standard always runs as the baseline),
// --matrix-grid (subgroup-matrix tile/shape study, each config self-tested first),
// --row-grid (row-kernel configurations of the f32/subgroup/f16 paths against the tiled kernel),
// --waves (residency study: 2–64 heads of one batch), --no-decode,
// --matrix-prefs '[{"warps":8,"bn":16}, …]' (the tiles --matrix-grid, --waves and the N = 65536
// runs use for flash-matrix; with it, the grid self-tests each on every variant, also with a
// second pass on any growth of a row max, and times N = --n, causal and not),
// --head-groups 1,16,64 (flash-matrix's causal rows again with each launch-order group size),
// --decode-prefs '[{"lpk":8,"ku":2,"threads":256,"workgroups":4096}, {"matrix":true}, …]' (decoding again with each;
//   "matrix": true / false forces the subgroup-matrix GQA kernel on or off),
// --decode-shapes 16:16:8192,64:8:32768 (Hq:Hk:Nk of the decoding rows, B = 4, d = 128),
// --decode-split (decoding also with the split kernel the group kernel replaced),
// --no-anchor (skip the CUDA anchor: PyTorch SDPA FLASH on the same shapes, sdpa-anchor.ts),
// --no-forward (skip the forward table: decoding and the studies only),
// --single-submit (time each repetition as one submission of one run of the kernels, as before
// the back-to-back batches: short kernels then measure with the GPU idle between runs),
// --serving (only the serving layouts' rows: paged decode and varlen prefill, serving-bench.ts;
// with --quick at SwiftShader-sized shapes),
// --pass backward (only the backward rows, backward-bench.ts: self-test, the SDPA FLASH backward
// anchor, B=4 H=16 at --n and --d, causal and not; --max-shape-s S skips a shape estimated to
// take longer; with --quick one small shape; --bwd-paths flash-f32,flash-matrix picks the
// paths, --bwd-prefs '[{"warps":8,"bm":16}, …]' self-tests and times each flash-matrix tile).
// --ceiling (only the ceiling microbenchmarks and PyTorch's matmul and copy beside them: ceiling-bench.ts;
// with --quick at SwiftShader sizes; --ceiling-focus only the forward's no-HBM loop schedules,
// ceiling-attention-loop.ts, and the storage copies; --ceiling-storage only the storage study, ceiling-storage.ts;
// --storage-second MiB only the copy on a first pair of 1 GiB buffers, a second pair of MiB, the first again;
// with --storage-early the second pair is made before the first copy),
// --timing-study (only the same runs timed the panel's old way and steadily: timing-study.ts),
// --peers ort: ONNX Runtime Web's WebGPU attention (ort-peer.ts) on the same device and shapes
// (prefill at --n and --d, causal and not; the decoding shapes), checked against float64, and a
// table of ours, ORT and the anchor; with --quick at SwiftShader sizes.
// Last it prints the summary table: flash-matrix and flash-decoding against the anchor, with
// the ratio columns.

import { nominalFlops, type AttentionProblem } from '../core/problem.ts';
import { PATH_LABELS, WebGpuUnavailable, type WebGpuContext, type WebGpuPath } from '../webgpu/device.ts';
import { AttentionRun, pathElem, type RunOptions } from '../webgpu/backend.ts';
import type { MatrixTilePrefs } from '../webgpu/flash-matrix-kernel.ts';
import { NO_ADAPTER_HELP, openNodeWebGpu } from '../webgpu/node-gpu.ts';
import { checkSampledRows } from '../webgpu/row-check.ts';
import { timeSteady } from '../webgpu/steady-timing.ts';
import { decodeProblem, studyShapes, timingStudy } from './timing-study.ts';
import { DECODE_VARIANTS, KERNEL_VARIANTS } from '../webgpu/variants.ts';
import { randomInputs, type InputDistribution } from '../core/inputs.ts';
import { referenceAttention } from '../core/reference.ts';
import { runSdpaAnchor, type AnchorRun, type AnchorShape } from './sdpa-anchor.ts';
import { servingBench } from './serving-bench.ts';
import { backwardBench } from './backward-bench.ts';
import { ceilingBench } from './ceiling-bench.ts';
import { H200_MEASURED } from '../webgpu/ceilings.ts';
import { describeRoofline, rooflineOfRun } from '../webgpu/roofline.ts';
import { runOrtPeer, type PeerResult, type PeerShape } from './ort-peer.ts';
import type { BenchBackwardPrefs } from './backward-studies.ts';
import type { BackwardPath } from '../webgpu/backward-run.ts';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes('--quick');
const NS = (opt('--n') ?? (quick ? '1024' : '1024,4096,8192')).split(',').map(Number);
const REPS = Number(opt('--reps') ?? 5);
const DS = (opt('--d') ?? '64,128').split(',').map(Number);
const SKIP = new Set((opt('--skip') ?? '').split(','));
const ONLY = opt('--paths')?.split(',');
const HEAD_GROUPS = opt('--head-groups')?.split(',').map(Number);
if (HEAD_GROUPS?.some((g) => !(Number.isInteger(g) && g >= 1))) {
  console.error(`bench:webgpu: --head-groups takes positive whole numbers, e.g. 1,16,64; got ${opt('--head-groups')}`);
  process.exit(2);
}
/** --decode-prefs: group-kernel configurations each decode shape runs again with (self-tested first). */
const DECODE_PREFS = ((): RunOptions['decodePrefs'][] | undefined => {
  const text = opt('--decode-prefs');
  if (text === undefined) return undefined;
  try {
    const list: unknown = JSON.parse(text);
    if (Array.isArray(list) && list.every((t) => typeof t === 'object' && t !== null)) return list as RunOptions['decodePrefs'][];
  } catch {
    // reported below
  }
  console.error(
    `bench:webgpu: --decode-prefs takes a JSON list of objects, e.g. '[{"lpk":8,"ku":2,"threads":256,"workgroups":4096}]'; got ${text}`,
  );
  process.exit(2);
})();
/** Flash-decoding shapes (B = 4, d = 128, Nq = 1): [Hq, Hk, Nk]. GQA rows read K/V once per group. */
const DECODE_SHAPES: [number, number, number][] = opt('--decode-shapes')
  ? opt('--decode-shapes')!
      .split(',')
      .map((t) => t.split(':').map(Number) as [number, number, number])
  : [
      [16, 16, 8192],
      [16, 16, 16384],
      [16, 16, 32768],
      [16, 16, 131072],
      [32, 8, 8192],
      [32, 8, 32768],
      [64, 8, 8192],
      [64, 8, 32768],
    ];
if (DECODE_SHAPES.some(([hq, hk, nk]) => !(hq >= 1 && hk >= 1 && nk >= 1 && hq % hk === 0 && Number.isInteger(hq + hk + nk)))) {
  console.error(
    `bench:webgpu: --decode-shapes takes Hq:Hk:Nk triples (Hq a multiple of Hk), e.g. 16:16:8192,64:8:32768; got ${opt('--decode-shapes')}`,
  );
  process.exit(2);
}

const decodeKey = ([hq, hk, nk]: [number, number, number]) => `decode Hq${hq} Hk${hk} Nk${nk}`;
const tableKey = (n: number, d: number, causal: boolean) => `N${n} d${d}${causal ? ' causal' : ''}`;
/** --matrix-prefs: the subgroup-matrix tiles the grid and the residency study run. */
const MATRIX_PREFS = ((): MatrixTilePrefs[] | undefined => {
  const text = opt('--matrix-prefs');
  if (text === undefined) return undefined;
  try {
    const list: unknown = JSON.parse(text);
    if (Array.isArray(list) && list.every((t) => typeof t === 'object' && t !== null)) return list as MatrixTilePrefs[];
  } catch {
    // reported below
  }
  console.error(`bench:webgpu: --matrix-prefs takes a JSON list of tile objects, e.g. '[{"warps":8,"bn":16}]'; got ${text}`);
  process.exit(2);
})();

const SINGLE_SUBMIT = args.includes('--single-submit');

interface Measured {
  ms: number;
  /** Fastest–slowest of the timed repetitions. */
  spread: string;
  tflops: number;
  gbs: number;
  err: number;
  config: string;
  kernels: string;
}

async function measure(
  ctx: Awaited<ReturnType<typeof openNodeWebGpu>>,
  p: AttentionProblem,
  path: WebGpuPath,
  reps: number,
  opts: Omit<RunOptions, 'path'> = {},
  warm = true,
): Promise<Measured | string> {
  let run: AttentionRun | undefined;
  try {
    run = await AttentionRun.create(ctx, p, { path, ...opts });
    await run.fillRandom(1234);
    // Warm-up (pipeline caches, GPU clocks) only where asked: the f32 study paths take seconds a run.
    const t = await timeSteady((b) => run!.execute(b), {
      reps,
      singleSubmit: SINGLE_SUBMIT,
      ...(warm ? {} : { warmMs: 0, minWarmRuns: 0 }),
    });
    const ms = t.ms;
    const spread = `${Math.min(...t.totals).toFixed(2)}–${Math.max(...t.totals).toFixed(2)} ms`;
    const kernels = t.kernels.map((k) => `${k.name} ${k.ms.toFixed(3)} ms (${k.clock})`).join(', ');
    const batch = t.batch;
    const check = await checkSampledRows(run, 3);
    // fillRandom writes N(0, 1): a chunk it missed would read back as zeros, which the row
    // check alone cannot see (it recomputes from the inputs as stored).
    if (!(Math.abs(check.inputRms - 1) < 0.1))
      return `generated inputs have RMS ${check.inputRms.toFixed(3)}, not ≈ 1: the fill missed part of a tensor`;
    const eb = pathElem(path) === 'f16' ? 2 : 4;
    const bytes = p.batch * (p.hq * p.nq * p.d + p.hk * p.nk * (p.d + p.dv)) * eb + p.batch * p.hq * p.nq * (p.dv + 1) * 4;
    const config = batch > 1 ? `${run.config}; timed ${batch} runs back to back per repetition` : run.config;
    return {
      ms,
      spread,
      tflops: nominalFlops(p) / (ms * 1e9),
      gbs: bytes / (ms * 1e6),
      err: Math.max(check.maxAbsErrO, check.maxAbsErrLse),
      config,
      kernels,
    };
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  } finally {
    run?.destroy();
  }
}

/** The run against the H200's measured ceilings (roofline.ts), where its kernel's counts are known. */
function printRoofline(p: AttentionProblem, path: WebGpuPath, m: Measured): void {
  const r = rooflineOfRun({ pass: 'forward', path, config: m.config, ms: m.ms }, p, H200_MEASURED);
  if (r) console.log(`    ${describeRoofline(r)}`);
}

const fmt = (m: Measured | string) =>
  typeof m === 'string'
    ? `FAILED: ${m}`
    : `${m.tflops.toFixed(2).padStart(7)} TFLOP/s ${m.ms.toFixed(3).padStart(9)} ms (${m.spread})  ${m.gbs.toFixed(0).padStart(5)} GB/s  maxerr ${m.err.toExponential(1)}`;

/** The variant set with d = 64 and Nq, Nk rounded up to whole 128-row / 64-key tiles. */
const ALIGNED_VARIANTS = KERNEL_VARIANTS.filter((v) => v.name !== 'odd head dims').map((v) => ({
  name: v.name,
  problem: {
    ...v.problem,
    d: 64,
    dv: v.problem.dv === v.problem.d ? 64 : 32,
    nq: Math.ceil(v.problem.nq / 128) * 128,
    nk: Math.ceil(v.problem.nk / 64) * 64,
  },
}));

/** Runs one path on the given variants against the float64 reference; worst error scaled for f16 paths. */
async function selfTest(
  ctx: Awaited<ReturnType<typeof openNodeWebGpu>>,
  path: WebGpuPath,
  variants: typeof KERNEL_VARIANTS,
  matrix?: MatrixTilePrefs,
  more: Omit<RunOptions, 'path' | 'matrix'> = {},
  distribution: InputDistribution = 'normal',
): Promise<{ worst: number; line: string }> {
  const errs: string[] = [];
  let worst = 0;
  for (const v of variants) {
    const f16 = pathElem(path) === 'f16';
    const p: AttentionProblem = { ...v.problem, dtype: f16 ? 'fp16' : 'fp32' };
    const x = randomInputs(p, { seed: 7, distribution });
    const ref = referenceAttention(p, x);
    let run: AttentionRun | undefined;
    try {
      run = await AttentionRun.create(ctx, p, { path, matrix, ...more });
      run.upload(x);
      await run.execute();
      const r = await run.read();
      let e = 0;
      for (let i = 0; i < r.o.length; i++) e = Math.max(e, Math.abs(r.o[i] - ref.o[i]));
      for (let i = 0; i < r.lse.length; i++) e = Math.max(e, r.lse[i] === ref.lse[i] ? 0 : Math.abs(r.lse[i] - ref.lse[i]));
      if (Number.isNaN(e)) e = Infinity;
      errs.push(`${v.name} ${e.toExponential(1)}`);
      // f16 P (flash-f16, flash-matrix, matrix decoding) loosens the bound; other decoding computes in f32.
      worst = Math.max(worst, f16 && (path !== 'decode' || run.decodeKernel === 'matrix') ? e / 30 : e);
    } catch (err) {
      errs.push(`${v.name} FAILED (${err instanceof Error ? err.message.slice(0, 600) : String(err)})`);
      worst = Infinity;
    } finally {
      run?.destroy();
    }
  }
  return { worst, line: errs.join(', ') };
}

/**
 * The table the issue asks for, printed last: flash-matrix against SDPA FLASH (TFLOP/s, the
 * same FLOP convention), causal over non-causal, and flash-decoding's bandwidth against the
 * anchor's (unique K/V bytes: f32 here, fp16 there, so the time ratio is also given).
 */
function printSummary(anchor: AnchorRun, summary: Map<string, Measured | string>): void {
  console.log(`\nsummary (B = 4; ${anchor.note})`);
  console.log('| shape | flash-matrix TFLOP/s | SDPA FLASH TFLOP/s | ratio | causal / non-causal (ours, SDPA) |');
  console.log('|---|---|---|---|---|');
  const anchorMs = (key: string) => {
    const a = anchor.results.get(key);
    return a === undefined || typeof a === 'string' ? undefined : a.ms;
  };
  for (const d of DS) {
    for (const causal of [false, true]) {
      for (const n of NS) {
        const key = tableKey(n, d, causal);
        const m = summary.get(key);
        if (m === undefined) continue;
        const flops = nominalFlops({ batch: 4, hq: 16, hk: 16, nq: n, nk: n, d, dv: d, causal, dtype: 'fp16' });
        const a = anchorMs(key);
        const at = a === undefined ? undefined : flops / (a * 1e9);
        const ours = typeof m === 'string' ? undefined : m.tflops;
        let cn = '';
        if (causal) {
          const nc = summary.get(tableKey(n, d, false));
          const anc = anchorMs(tableKey(n, d, false));
          const ncT = nc === undefined || typeof nc === 'string' ? undefined : nc.tflops;
          const ancT = anc === undefined ? undefined : (flops * 2) / (anc * 1e9);
          cn = `${ours !== undefined && ncT !== undefined ? (ours / ncT).toFixed(2) : '–'}, ${at !== undefined && ancT !== undefined ? (at / ancT).toFixed(2) : '–'}`;
        }
        console.log(
          `| H=16 N=${n} d=${d}${causal ? ' causal' : ''} | ${ours?.toFixed(1) ?? 'FAILED'} | ${at?.toFixed(1) ?? '–'} | ${ours !== undefined && at !== undefined ? (ours / at).toFixed(2) : '–'} | ${cn} |`,
        );
      }
    }
  }
  const decodes = DECODE_SHAPES.filter((sh) => summary.has(decodeKey(sh)));
  if (!decodes.length) return;
  console.log(
    '\n| decode (B = 4, Nq = 1, d = 128) | flash-decoding (f16 K/V) | SDPA FLASH (fp16 K/V) | bandwidth ratio | time ratio (SDPA / ours) |',
  );
  console.log('|---|---|---|---|---|');
  for (const sh of decodes) {
    const m = summary.get(decodeKey(sh))!;
    const p = decodeProblem(...sh);
    const a = anchorMs(decodeKey(sh));
    // The anchor's minimum traffic, counted as measure() does but with 2-byte elements.
    const bytes16 = p.batch * (p.hq * p.nq * p.d + p.hk * p.nk * (p.d + p.dv)) * 2 + p.batch * p.hq * p.nq * p.dv * 2;
    const ag = a === undefined ? undefined : bytes16 / (a * 1e6);
    const ours = typeof m === 'string' ? undefined : m;
    console.log(
      `| Hq=${sh[0]} Hk=${sh[1]} Nk=${sh[2]} | ${ours ? `${(ours.gbs / 1000).toFixed(2)} TB/s (${ours.ms.toFixed(3)} ms)` : 'FAILED'} | ${ag !== undefined ? `${(ag / 1000).toFixed(2)} TB/s (${a!.toFixed(3)} ms)` : '–'} | ${ours && ag !== undefined ? (ours.gbs / ag).toFixed(2) : '–'} | ${ours && a !== undefined ? (a / ours.ms).toFixed(2) : '–'} |`,
    );
  }
}

/** The peer bench's shapes: the forward table's and the decoding rows (tiny ones with --quick). */
function peerShapes(): PeerShape[] {
  if (quick) {
    return [
      { key: 'N64 d64', b: 1, hq: 2, hk: 2, nq: 64, nk: 64, d: 64, causal: false },
      { key: 'N64 d64 causal', b: 1, hq: 2, hk: 2, nq: 64, nk: 64, d: 64, causal: true },
      { key: 'decode Hq2 Hk2 Nk300', b: 1, hq: 2, hk: 2, nq: 1, nk: 300, d: 64, causal: false },
      { key: 'decode Hq4 Hk2 Nk300', b: 1, hq: 4, hk: 2, nq: 1, nk: 300, d: 64, causal: false },
    ];
  }
  const out: PeerShape[] = [];
  if (!args.includes('--no-forward'))
    for (const d of DS)
      for (const causal of [false, true])
        for (const n of NS) out.push({ key: tableKey(n, d, causal), b: 4, hq: 16, hk: 16, nq: n, nk: n, d, causal });
  if (!args.includes('--no-decode'))
    for (const sh of DECODE_SHAPES) out.push({ key: decodeKey(sh), b: 4, hq: sh[0], hk: sh[1], nq: 1, nk: sh[2], d: 128, causal: false });
  return out;
}

/** Ours, ONNX Runtime Web and SDPA FLASH per shape: times, and ours over each (time ratios, > 1: ours faster). */
function printPeers(anchor: AnchorRun, summary: Map<string, Measured | string>, peers: Map<string, PeerResult | string>): void {
  console.log('\npeers (same device; ours: GPU timestamps, back to back; ORT: wall clock over back-to-back session.run calls)');
  console.log('| shape | ours | ONNX Runtime Web | SDPA FLASH | ORT / ours | SDPA / ours |');
  console.log('|---|---|---|---|---|---|');
  for (const [key, peer] of peers) {
    const m = summary.get(key);
    const ours = m === undefined || typeof m === 'string' ? undefined : m.ms;
    const a = anchor.results.get(key);
    const at = a === undefined || typeof a === 'string' ? undefined : a.ms;
    const pt = typeof peer === 'string' ? undefined : peer.ms;
    const cell = (ms: number | undefined) => (ms === undefined ? '–' : `${ms.toFixed(3)} ms`);
    console.log(
      `| ${key} | ${ours === undefined ? (typeof m === 'string' ? 'FAILED' : '–') : cell(ours)} | ${typeof peer === 'string' ? `FAILED: ${peer.slice(0, 120)}` : `${cell(pt)} (${peer.op}, maxerr ${peer.err.toExponential(1)})`} | ${cell(at)} | ${ours && pt ? (pt / ours).toFixed(2) : '–'} | ${ours && at ? (at / ours).toFixed(2) : '–'} |`,
    );
  }
}

/** The adapter, its features and limits, the paths it runs and how they are timed. */
function printAdapter(ctx: WebGpuContext): void {
  console.log(`FlashScope WebGPU benchmark — ${new Date().toISOString()}`);
  console.log(`adapter: ${ctx.adapterName}${ctx.isFallback ? ' (fallback/software)' : ''}`);
  console.log(`features: ${ctx.features.join(', ')}`);
  console.log(
    `limits: workgroup memory ${ctx.limits.maxWorkgroupStorage} B, ${ctx.limits.maxInvocations} invocations, storage binding ${ctx.limits.maxStorageBinding} B (offsets in steps of ${ctx.limits.minStorageOffset} B), buffer ${ctx.limits.maxBuffer} B; subgroup size ${ctx.subgroupMinSize}–${ctx.subgroupMaxSize}`,
  );
  console.log(
    `subgroup-matrix configs: ${ctx.matrixConfigs.map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}×${c.N}×${c.K}`).join(', ') || 'none'}`,
  );
  console.log(`WGSL language features: ${ctx.wgslFeatures.join(', ')}`);
  console.log(`paths: ${ctx.paths.join(', ')}; timing: ${ctx.timestamps ? 'timestamp-query' : 'wall clock'}`);
}

/** The benchmark's other modes (ceiling, serving, timing study, backward): their exit code, or undefined for the forward bench. */
async function otherMode(ctx: WebGpuContext): Promise<number | undefined> {
  if (args.includes('--ceiling')) {
    const second = opt('--storage-second');
    return ceilingBench(ctx, {
      quick,
      reps: REPS,
      focus: args.includes('--ceiling-focus'),
      storage: args.includes('--ceiling-storage'),
      storageSecond: second ? { mib: Number(second), early: args.includes('--storage-early') } : undefined,
    });
  }
  if (args.includes('--serving')) return servingBench(ctx, { quick, reps: REPS, paths: ONLY });
  if (args.includes('--timing-study')) {
    const rows = await timingStudy(ctx, studyShapes(ctx.paths, quick), (r) => console.log(JSON.stringify(r)));
    return rows.length ? 0 : 1;
  }
  if (opt('--pass') === 'backward') {
    const bwdPaths = (opt('--bwd-paths') ?? 'flash-f32,flash-matrix').split(',');
    const bad = bwdPaths.filter((p) => p !== 'flash-f32' && p !== 'flash-matrix');
    if (bad.length) {
      console.error(`bench:webgpu: --bwd-paths takes flash-f32 and/or flash-matrix; got ${bad.join(', ')}`);
      return 2;
    }
    const matrixPrefs = JSON.parse(opt('--bwd-prefs') ?? '[]') as BenchBackwardPrefs[];
    return backwardBench(ctx, {
      quick,
      reps: REPS,
      ns: (opt('--n') ?? '4096,8192').split(',').map(Number),
      ds: DS,
      maxShapeS: Number(opt('--max-shape-s') ?? 90),
      anchor: !args.includes('--no-anchor'),
      paths: bwdPaths as BackwardPath[],
      matrixPrefs,
    });
  }
  return undefined;
}

/** Self-test: every path on every variant against the full float64 reference; the worst error. */
async function selfTestPaths(ctx: WebGpuContext, paths: WebGpuPath[]): Promise<number> {
  let worst = 0;
  for (const path of paths) {
    const r = await selfTest(ctx, path, KERNEL_VARIANTS);
    worst = Math.max(worst, r.worst);
    console.log(`self-test ${path}: ${r.line}`);
    if (path === 'flash-matrix') {
      // The variant set is ragged everywhere; these whole-tile copies (d = 64, Nq and Nk in
      // whole tiles) take the kernel's other branches: full tiles, no padding.
      const a = await selfTest(ctx, path, ALIGNED_VARIANTS);
      worst = Math.max(worst, a.worst);
      console.log(`self-test ${path} (whole tiles): ${a.line}`);
      // Logits 12× larger: row maxima climb far past the first tile's (e^15 and more), so
      // workgroups take their second pass, after a first one whose P overflowed f16.
      const climbing = await selfTest(ctx, path, ALIGNED_VARIANTS, undefined, {}, 'large-logits');
      worst = Math.max(worst, climbing.worst);
      console.log(`self-test ${path} (whole tiles, logits ×12): ${climbing.line}`);
    }
    if (path === 'decode') {
      // The group kernel's problems, with it and with the split kernel it replaces there.
      for (const decodeKernel of ['group', 'split'] as const) {
        const g = await selfTest(ctx, path, DECODE_VARIANTS, undefined, { decodeKernel, decodePrefs: { matrix: false } });
        worst = Math.max(worst, g.worst);
        console.log(`self-test ${path} (${decodeKernel} kernel): ${g.line}`);
      }
      if (ctx.paths.includes('flash-matrix')) {
        // The subgroup-matrix kernel on every group size; logits ×12 make rows' maxima climb
        // past m + 8 mid-split, so O takes its row-by-row rescale.
        for (const distribution of ['normal', 'large-logits'] as const) {
          const g = await selfTest(ctx, path, DECODE_VARIANTS, undefined, { decodePrefs: { matrix: true } }, distribution);
          worst = Math.max(worst, g.worst);
          console.log(`self-test ${path} (subgroup-matrix kernel${distribution === 'normal' ? '' : ', logits ×12'}): ${g.line}`);
        }
      }
    }
  }
  return worst;
}

/** The CUDA anchor, same shapes, before the WebGPU timings (one process at a time on the GPU). */
function cudaAnchor(): AnchorRun {
  const anchorShapes: AnchorShape[] = [];
  if (!args.includes('--no-forward'))
    for (const d of DS)
      for (const causal of [false, true])
        for (const n of NS) anchorShapes.push({ key: tableKey(n, d, causal), b: 4, hq: 16, hk: 16, nq: n, nk: n, d, causal });
  if (!quick && !args.includes('--no-decode'))
    for (const sh of DECODE_SHAPES)
      anchorShapes.push({ key: decodeKey(sh), b: 4, hq: sh[0], hk: sh[1], nq: 1, nk: sh[2], d: 128, causal: false });
  const anchor: AnchorRun = args.includes('--no-anchor')
    ? { note: 'no CUDA anchor (--no-anchor)', results: new Map() }
    : runSdpaAnchor(anchorShapes, REPS * 4);
  console.log(`anchor: ${anchor.note}`);
  for (const [key, r] of anchor.results)
    console.log(
      `  ${key.padEnd(28)} ${typeof r === 'string' ? `FAILED: ${r}` : `${r.ms.toFixed(3)} ms, maxerr ${r.err.toExponential(1)} against float64`}`,
    );
  return anchor;
}

/**
 * Warm-up: the first second of GPU work runs at lower clocks, which skewed the first rows
 * of an earlier run (the same standard-attention pass measured 80 ms, then 21 ms).
 */
async function warmUp(ctx: WebGpuContext): Promise<void> {
  const warm: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 64, dv: 64, causal: false, dtype: 'fp32' };
  const run = await AttentionRun.create(ctx, warm, { path: 'flash-f32' });
  await run.fillRandom(1);
  const t0 = Date.now();
  while (Date.now() - t0 < 3000) await run.execute();
  run.destroy();
}

/** The forward table: standard and every flash path per shape; flash-matrix's rows go to the summary. */
async function forwardTable(ctx: WebGpuContext, flashPaths: WebGpuPath[], summary: Map<string, Measured | string>): Promise<void> {
  for (const d of args.includes('--no-forward') ? [] : DS) {
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
          if (path === 'flash-matrix') summary.set(tableKey(n, d, causal), m);
          if (typeof m !== 'string') printRoofline(p, path, m);
        }
        if (causal && HEAD_GROUPS && flashPaths.includes('flash-matrix')) {
          for (const headGroup of HEAD_GROUPS) {
            const m = await measure(ctx, p, 'flash-matrix', REPS, { headGroup });
            console.log(`  ${`flash-matrix, tiles longest-first in groups of ${headGroup} heads`.padEnd(48)} ${fmt(m)}`);
          }
        }
      }
    }
  }
}

async function largeShapes(ctx: WebGpuContext, flashPaths: WebGpuPath[]): Promise<void> {
  if (args.includes('--no-65536') || quick) return;
  // One timed run per path, without warm-up: the f32 paths take 7–15 s a run. The tensor-core
  // path (0.3–1.4 s) is warmed up and timed 3 times: its cold single runs came out up to 40%
  // slow (BENCHMARKS.md). With --matrix-prefs it runs once per named tile.
  const big = async (p: AttentionProblem, path: WebGpuPath) => {
    if (path !== 'flash-matrix') return [{ label: path, m: await measure(ctx, p, path, 1, {}, false) }];
    const out = [];
    for (const matrix of MATRIX_PREFS ?? [undefined])
      out.push({ label: matrix ? `${path} ${JSON.stringify(matrix)}` : path, m: await measure(ctx, p, path, 3, { matrix }) });
    return out;
  };
  // d = 128 at N = 65536 needs 2 GiB per f32 tensor (O is f32 on every path), 4 bytes over
  // Dawn's 2 GiB − 4 binding limit: the flash paths run it in windows of 3 + 1 batches.
  for (const d of DS) {
    for (const causal of [false, true]) {
      const p: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 65536, nk: 65536, d, dv: d, causal, dtype: 'fp32' };
      console.log(`B=4 H=16 N=65536 d=${d} ${causal ? 'causal' : 'non-causal'}`);
      console.log(`  ${'standard'.padEnd(16)} ${fmt(await measure(ctx, p, 'standard', 1, {}, false))}`);
      for (const path of flashPaths) for (const { label, m } of await big(p, path)) console.log(`  ${label.padEnd(16)} ${fmt(m)}`);
    }
  }
  // B·H = 128 in one batch: O alone is 2 GiB (f32 on every path), so the heads of the batch
  // are split over windows.
  const wide: AttentionProblem = { batch: 1, hq: 128, hk: 128, nq: 65536, nk: 65536, d: 64, dv: 64, causal: false, dtype: 'fp32' };
  console.log('B=1 H=128 N=65536 d=64 non-causal');
  for (const path of flashPaths) {
    for (const { label, m } of await big(wide, path))
      console.log(`  ${label.padEnd(16)} ${fmt(m)}${typeof m === 'string' ? '' : `   [${m.config.replace(/^.*; in /, 'in ')}]`}`);
  }
}

/** Tile-size study of the f32 path at the headline shape. */
async function tileStudy(ctx: WebGpuContext, head: AttentionProblem): Promise<void> {
  if (!SKIP.has('tiles'))
    console.log('\ntile study, B=4 H=16 N=4096 d=64 non-causal (a preferred tile falls back to the largest that fits)');
  for (const path of ['flash-f32', 'flash-subgroups', 'flash-f16'] as WebGpuPath[]) {
    if (!ctx.paths.includes(path) || SKIP.has('tiles')) continue;
    for (const tile of [
      { bm: 64, bn: 64, dk: 64, jc: 64 },
      { bm: 128, bn: 64, dk: 16, jc: 16 },
      { bm: 128, bn: 64, dk: 32, jc: 32 },
      { bm: 128, bn: 32, dk: 32, jc: 32 },
    ]) {
      const m = await measure(ctx, head, path, REPS, { tile, flashKernel: 'tiled' });
      console.log(`  ${path.padEnd(16)} ${JSON.stringify(tile).padEnd(36)} ${fmt(m)}   [${typeof m === 'string' ? '' : m.config}]`);
    }
  }
}

// Subgroup-matrix study: matrix shape × subgroups per workgroup × BN × K/V staging (+ a
// second pass on any growth of a row max). Each config is self-tested on a few
// variants before it is timed; configs that do not fit fall back to the largest that does
// (the printed config says which ran).
async function matrixGrid(ctx: WebGpuContext, head: AttentionProblem): Promise<void> {
  if (!ctx.paths.includes('flash-matrix') || !args.includes('--matrix-grid')) return;
  const picks = ALIGNED_VARIANTS.filter((v) =>
    ['causal Nq>Nk', 'sinks', 'many K/V tiles', 'ALiBi + softcap, dv≠d', 'window'].includes(v.name),
  );
  for (const d of DS) {
    const p: AttentionProblem = { ...head, d, dv: d };
    console.log(`\nsubgroup-matrix grid, B=4 H=16 N=4096 d=${d} non-causal`);
    const tiles: MatrixTilePrefs[] = [
      { warps: 8, bn: 16 },
      { warps: 8, bn: 32 },
      { warps: 8, bn: 32, pad: { s: 2, p: 4 } },
      { warps: 8, bn: 32, pad: { s: 4, p: 4 } },
      { warps: 8, bn: 32, pad: { s: 2, p: 8 } },
      { warps: 4, bn: 32 },
      { warps: 4, bn: 64 },
      { warps: 2, bn: 32 },
      { shape: '16x8x16', warps: 8, bn: 32 },
      { warps: 8, bn: 32, rescaleLog: 0 },
    ];
    const given = MATRIX_PREFS;
    for (const t of given ?? tiles) {
      const st = await selfTest(ctx, 'flash-matrix', given ? KERNEL_VARIANTS : picks, t);
      const st2 = given ? await selfTest(ctx, 'flash-matrix', ALIGNED_VARIANTS, { ...t, rescaleLog: 0 }) : st;
      if (Math.max(st.worst, st2.worst) >= 1e-4) {
        console.log(`  ${JSON.stringify(t).padEnd(52)} self-test failed: ${st.line} / second pass on any growth: ${st2.line}`);
        continue;
      }
      for (const causal of given ? [false, true] : [false]) {
        for (const n of given ? NS : [4096]) {
          const m = await measure(ctx, { ...p, nq: n, nk: n, causal }, 'flash-matrix', REPS, { matrix: t });
          console.log(
            `  ${JSON.stringify(t).padEnd(52)} N=${n} ${causal ? 'causal' : 'non-causal'} ${fmt(m)}   [${typeof m === 'string' ? '' : m.config}]`,
          );
        }
      }
      if (given) {
        // The first shape once more: some pipelines ran their first measurement 2–3× slow (BENCHMARKS.md).
        const again = await measure(ctx, { ...p, nq: NS[0], nk: NS[0] }, 'flash-matrix', REPS, { matrix: t });
        console.log(`  ${JSON.stringify(t).padEnd(52)} N=${NS[0]} non-causal, again ${fmt(again)}`);
      }
    }
  }
}

// Residency study: one batch of 2–64 heads of the headline shape, so 64–2048 workgroups of
// 128 query rows (twice as many of 64). While no SM of a 132-SM GPU holds more than one
// workgroup, doubling the heads costs nothing; once it does, time grows less than twice
// with the work only if an SM runs two workgroups at once.
async function residencyStudy(ctx: WebGpuContext, flashPaths: WebGpuPath[], head: AttentionProblem): Promise<void> {
  if (!args.includes('--waves')) return;
  for (const path of flashPaths) {
    console.log(`\nresidency study, ${path}, B=1 N=4096 d=64 non-causal (H heads → 4096·H / BM workgroups)`);
    const variants: (MatrixTilePrefs | undefined)[] = (path === 'flash-matrix' && MATRIX_PREFS) || [undefined];
    for (const matrix of variants) {
      if (matrix) console.log(`  prefs ${JSON.stringify(matrix)}`);
      for (const hq of [2, 4, 8, 16, 32, 64]) {
        const p: AttentionProblem = { ...head, batch: 1, hq, hk: hq };
        const m = await measure(ctx, p, path, REPS, { matrix });
        console.log(`  H=${String(hq).padEnd(4)} ${fmt(m)}   [${typeof m === 'string' ? '' : m.config}]`);
      }
    }
  }
}

// Row-kernel study (flash-f32 / flash-subgroups / flash-f16): lanes per row × rows per lane
// group × threads × K/V chunk × sub-chunk, against the 4×4-tiled kernel.
async function rowGrid(ctx: WebGpuContext, paths: WebGpuPath[], head: AttentionProblem): Promise<void> {
  if (!args.includes('--row-grid')) return;
  const picks = KERNEL_VARIANTS.filter((v) =>
    ['causal Nq>Nk', 'sinks', 'many K/V tiles', 'ALiBi + softcap, dv≠d', 'odd head dims', 'window'].includes(v.name),
  );
  for (const d of DS) {
    const p: AttentionProblem = { ...head, d, dv: d };
    console.log(`\nrow-kernel grid, B=4 H=16 N=4096 d=${d} non-causal`);
    const grid: RunOptions['rowPrefs'][] =
      d <= 64
        ? [
            {},
            { sc: 8 },
            { sc: 4 },
            { sc: 8, threads: 256 },
            { tpr: 2, rpt: 2 },
            { tpr: 2, rpt: 2, sc: 8 },
            { tpr: 2, rpt: 2, threads: 256 },
            { tpr: 4, rpt: 4, sc: 8 },
          ]
        : [
            { tpr: 4, rpt: 2, sc: 8 },
            { tpr: 4, rpt: 2, sc: 8, threads: 256 },
            { tpr: 2, sc: 8, threads: 256 },
          ];
    // flash-f32 has no shuffles: one lane per row; chunk, sub-chunk and workgroup sizes
    const f32Grid: RunOptions['rowPrefs'][] = [
      {},
      { bc: 16 },
      { bc: 64 },
      { sc: 4 },
      { sc: 16 },
      { threads: 64 },
      { threads: 192 },
      { threads: 256 },
    ];
    for (const path of ['flash-subgroups', 'flash-f32', 'flash-f16'] as WebGpuPath[]) {
      if (!paths.includes(path)) continue;
      const tiled = await measure(ctx, p, path, REPS, { flashKernel: 'tiled' });
      console.log(
        `  ${path.padEnd(16)} ${'4×4-tiled kernel'.padEnd(44)} ${fmt(tiled)}   [${typeof tiled === 'string' ? '' : tiled.config}]`,
      );
      for (const rowPrefs of path === 'flash-subgroups' ? grid : path === 'flash-f32' && d <= 64 ? f32Grid : [{}]) {
        const variants = picks.map((v) => ({
          ...v,
          problem: {
            ...v.problem,
            d: v.name === 'odd head dims' ? d - 3 : d,
            dv: v.problem.dv !== v.problem.d && v.name !== 'odd head dims' ? d / 2 : d,
          },
        }));
        const st = await selfTest(ctx, path, variants, undefined, { rowPrefs });
        const m = st.worst < 1e-4 ? await measure(ctx, p, path, REPS, { rowPrefs }) : `self-test failed: ${st.line}`;
        console.log(`  ${path.padEnd(16)} ${JSON.stringify(rowPrefs).padEnd(44)} ${fmt(m)}   [${typeof m === 'string' ? '' : m.config}]`);
      }
    }
  }
}

// Flash-decoding: one query row per head against a long KV cache; GQA shapes read each
// group's K/V once for all its query heads (GB/s counts unique K/V bytes). Each row goes to the summary.
async function decodeRows(ctx: WebGpuContext, paths: WebGpuPath[], summary: Map<string, Measured | string>): Promise<void> {
  for (const sh of quick || args.includes('--no-decode') ? [] : DECODE_SHAPES) {
    const p = decodeProblem(...sh);
    console.log(`\ndecode B=4 Hq=${p.hq} Hk=${p.hk} Nq=1 Nk=${p.nk} d=128`);
    const dec = await measure(ctx, p, 'decode', REPS);
    summary.set(decodeKey(sh), dec);
    console.log(`  ${'decode'.padEnd(16)} ${fmt(dec)}   [${typeof dec === 'string' ? '' : dec.config}]`);
    if (typeof dec !== 'string') console.log(`    kernels: ${dec.kernels}`);
    if (typeof dec !== 'string') printRoofline(p, 'decode', dec);
    for (const decodePrefs of DECODE_PREFS ?? []) {
      const st = await selfTest(ctx, 'decode', DECODE_VARIANTS, undefined, { decodePrefs });
      // the matrix kernel's row-by-row rescale runs only where maxima climb: logits ×12 take it
      const climb = decodePrefs?.matrix ? await selfTest(ctx, 'decode', DECODE_VARIANTS, undefined, { decodePrefs }, 'large-logits') : st;
      const m =
        st.worst < 1e-4 && climb.worst < 1e-4
          ? await measure(ctx, p, 'decode', REPS, { decodePrefs })
          : `self-test failed: ${st.worst < 1e-4 ? climb.line : st.line}`;
      console.log(`  ${JSON.stringify(decodePrefs).padEnd(48)} ${fmt(m)}   [${typeof m === 'string' ? '' : m.config}]`);
      if (typeof m !== 'string') console.log(`    kernels: ${m.kernels}`);
    }
    if (args.includes('--decode-split')) {
      const old = await measure(ctx, p, 'decode', REPS, { decodeKernel: 'split' });
      console.log(`  ${'decode (split)'.padEnd(16)} ${fmt(old)}   [${typeof old === 'string' ? '' : old.config}]`);
    }
    if (p.hq === p.hk && p.nk <= 32768 && paths.includes('flash-f32')) {
      const fl = await measure(ctx, p, 'flash-f32', REPS);
      console.log(
        `  ${'flash-f32'.padEnd(16)} ${fmt(fl)}${typeof dec !== 'string' && typeof fl !== 'string' ? `   decode is ×${(fl.ms / dec.ms).toFixed(2)} faster` : ''}`,
      );
    }
  }
}

async function main(): Promise<number> {
  let ctx: WebGpuContext;
  try {
    ctx = await openNodeWebGpu();
  } catch (e) {
    if (e instanceof WebGpuUnavailable) {
      console.error(`bench:webgpu: ${e.message}\n${NO_ADAPTER_HELP}`);
      return 2;
    }
    throw e;
  }
  printAdapter(ctx);
  const mode = await otherMode(ctx);
  if (mode !== undefined) return mode;
  console.log(
    'FLOPs = 4·B·H·Nq·Nk·d (halved when causal); GB/s = minimum traffic Q+K+V+O+LSE / time; maxerr = max |GPU − float64 reference| over 3 sampled rows (O and LSE)\n',
  );
  const paths = ctx.paths.filter((p) => !ONLY || ONLY.includes(p));
  const worst = await selfTestPaths(ctx, paths);
  console.log(`self-test: ${worst < 1e-4 ? 'all paths match the float64 reference' : 'MISMATCH — see above'}\n`);
  if (args.includes('--selftest-only')) return worst < 1e-4 ? 0 : 1;
  const anchor = cudaAnchor();
  const summary = new Map<string, Measured | string>();
  const peers = opt('--peers') === 'ort' ? await runOrtPeer(ctx, peerShapes(), REPS, (l) => console.log(l)) : undefined;
  if (opt('--peers') !== undefined && !peers) {
    console.error(`bench:webgpu: --peers takes ort; got ${opt('--peers')}`);
    return 2;
  }
  await warmUp(ctx);
  const flashPaths = paths.filter((p) => p.startsWith('flash')) as WebGpuPath[];
  await forwardTable(ctx, flashPaths, summary);
  await largeShapes(ctx, flashPaths);
  const head: AttentionProblem = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 64, dv: 64, causal: false, dtype: 'fp32' };
  await tileStudy(ctx, head);
  await matrixGrid(ctx, head);
  await residencyStudy(ctx, flashPaths, head);
  await rowGrid(ctx, paths, head);
  await decodeRows(ctx, paths, summary);
  printSummary(anchor, summary);
  if (peers) printPeers(anchor, summary, peers);
  console.log(
    '\npath labels: ' +
      Object.entries(PATH_LABELS)
        .map(([k, v]) => `${k} = ${v}`)
        .join('; '),
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
