// The WebGPU panel's worker: owns the GPU device (navigator.gpu inside a dedicated worker),
// so long runs, read-backs and the CPU checks never block the page. Cancel = the page
// terminates this worker and starts a new one.

/// <reference lib="webworker" />
import * as Comlink from 'comlink';
import { BUILT_IN_ALGORITHMS, randomInputs, validateProblem, runToEnd, formatBytes, type BackwardPath } from '../../engine/api.ts';
import {
  nominalFlops,
  AttentionRun,
  pathElem,
  openWebGpu,
  type WebGpuContext,
  checkSampledRows,
  hostRowErrors,
  sampleSites,
  randomDo,
  runGpuBackward,
  backwardFlops,
  sampledDqError,
  describeSteady,
  STEADY_DEFAULTS,
  timeSteady,
} from '../../engine/api-worker.ts';
import { blockMean } from './downsample.ts';
import type { AdapterReport, RunProgress, RunReport, RunRequest, WebGpuApi } from './protocol.ts';

declare const self: DedicatedWorkerGlobalScope;

let ctx: Promise<WebGpuContext> | undefined;
const context = () => (ctx ??= openWebGpu((self.navigator as Navigator & { gpu?: GPU }).gpu));

const lseList = (a: Float32Array | Float64Array) => Array.from(a, (x) => (Number.isFinite(x) ? x : null));

/** The CPU engine cannot run full-size problems in reasonable time; above this it refuses. */
const CPU_FLOP_LIMIT = 4e9;

async function runGpu(req: RunRequest, progress: RunProgress): Promise<RunReport> {
  const c = await context();
  const p = req.problem;
  progress('allocating GPU buffers', 0.05);
  const run = await AttentionRun.create(c, p, { path: req.path, blockSparse: req.blockSparse });
  try {
    progress('generating inputs on the GPU', 0.15);
    await run.fillRandom(req.seed);
    progress('running (warm-up, then timed repetitions)', 0.3);
    const timing = await timeSteady((b) => run.execute(b));
    const { ms, kernels } = timing;
    progress('reading back head 0', 0.7);
    const head = await run.readHead(0, 0);
    const check = await checkSampledRows(run, req.checkRows, (t, n) =>
      progress(`checking row ${t + 1} of ${n} against the CPU reference`, 0.75 + (0.25 * t) / n),
    );
    const eb = pathElem(req.path) === 'f16' ? 2 : 4;
    const bytes = p.batch * (p.hq * p.nq * p.d + p.hk * p.nk * (p.d + p.dv)) * eb + p.batch * p.hq * p.nq * (p.dv + 1) * 4;
    return {
      backend: 'webgpu',
      pass: 'forward',
      path: req.path,
      ms,
      clock: describeSteady(timing, kernels[0]?.clock ?? 'wall'),
      kernels,
      tflops: nominalFlops(p) / (ms * 1e9),
      gbs: bytes / (ms * 1e6),
      config: run.config,
      heatmap: blockMean(head.o, p.nq, p.dv, 128, 128),
      lse: lseList(head.lse),
      check: { rows: check.rows.length, maxAbsErrO: check.maxAbsErrO, maxAbsErrLse: check.maxAbsErrLse },
    };
  } finally {
    run.destroy();
  }
}

/**
 * The backward on the GPU: inputs and dO generated here (the backward kernels take host
 * arrays), the forward of the chosen path for O and LSE, then the backward kernels; sampled dQ
 * rows and the forward's O rows are checked against float64. The flash-matrix path computes
 * in f16, so its problem is generated as fp16: the reference then sees the inputs the GPU holds.
 */
async function runGpuBackwardReport(req: RunRequest, progress: RunProgress): Promise<RunReport> {
  const c = await context();
  const path: BackwardPath = req.path === 'flash-matrix' ? 'flash-matrix' : 'flash-f32';
  const given = validateProblem(req.problem);
  const p = path === 'flash-matrix' ? { ...given, dtype: 'fp16' as const } : given;
  progress('generating Q, K, V and dO', 0.05);
  const x = randomInputs(p, { seed: req.seed });
  const dO = randomDo(p, req.seed);
  progress(
    path === 'flash-matrix'
      ? 'forward (flash-matrix), then the f16 backward kernels (warm-up, then timed repetitions)'
      : 'forward (flash, f32), then the backward kernels (warm-up, then timed repetitions)',
    0.3,
  );
  const r = await runGpuBackward(c, p, x, dO, STEADY_DEFAULTS.reps, path);
  const sites = sampleSites(p, req.checkRows);
  progress(`checking ${sites.length} dQ rows against float64`, 0.8);
  const errDq = sampledDqError(p, x, dO, r.dq, sites);
  const { eo, el } = hostRowErrors(p, x, r, sites);
  return {
    backend: 'webgpu',
    pass: 'backward',
    path,
    ms: r.ms,
    clock: r.timing ? describeSteady(r.timing, r.kernels[0]?.clock ?? 'wall') : 'one run',
    kernels: r.kernels,
    tflops: backwardFlops(p) / (r.ms * 1e9),
    gbs: 0,
    config: r.config,
    heatmap: blockMean(r.dq.subarray(0, p.nq * p.d), p.nq, p.d, 128, 128),
    lse: lseList(r.lse.subarray(0, p.nq)),
    check: { rows: sites.length, maxAbsErrO: eo, maxAbsErrLse: el },
    gradCheck: { rows: sites.length, maxAbsErrDq: errDq },
  };
}

function runCpu(req: RunRequest, progress: RunProgress): RunReport {
  const p = validateProblem(req.problem);
  if (nominalFlops(p) > CPU_FLOP_LIMIT) {
    throw new Error(
      `The CPU engine would need ${(nominalFlops(p) / 1e9).toFixed(1)} GFLOP for this problem (limit ${CPU_FLOP_LIMIT / 1e9} GFLOP in the browser). Use WebGPU, or a smaller size.`,
    );
  }
  progress('generating inputs', 0.1);
  const x = randomInputs(p, { seed: req.seed });
  progress('running FA2 on the CPU', 0.3);
  const t0 = performance.now();
  const r = runToEnd(BUILT_IN_ALGORITHMS.fa2.forward, p, x);
  const ms = performance.now() - t0;
  const sites = sampleSites(p, req.checkRows);
  const { eo, el } = hostRowErrors(p, x, r, sites);
  return {
    backend: 'cpu',
    pass: 'forward',
    path: 'cpu-fa2',
    ms,
    clock: 'wall clock',
    kernels: [{ name: 'FA2 step engine (CPU)', ms, clock: 'wall' }],
    tflops: nominalFlops(p) / (ms * 1e9),
    gbs: 0,
    config: 'engine/algorithms/fa2/forward.ts, tracing off',
    heatmap: blockMean(Float32Array.from(r.o.subarray(0, p.nq * p.dv)), p.nq, p.dv, 128, 128),
    lse: lseList(r.lse.subarray(0, p.nq)),
    check: { rows: sites.length, maxAbsErrO: eo, maxAbsErrLse: el },
  };
}

async function probe(): Promise<AdapterReport> {
  try {
    const c = await context();
    return {
      name: c.adapterName,
      fallback: c.isFallback,
      features: c.features,
      paths: c.paths,
      matrixF16: c.matrixConfigs.length > 0,
      limits: `${c.limits.maxWorkgroupStorage} B workgroup memory, ${c.limits.maxInvocations} invocations, ${formatBytes(c.limits.maxStorageBinding)} per binding (larger tensors run in windows of batches or heads), ${formatBytes(c.limits.maxBuffer)} per buffer, subgroups ${c.subgroupMinSize}–${c.subgroupMaxSize}`,
      maxStorageBinding: c.limits.maxStorageBinding,
    };
  } catch (e) {
    ctx = undefined; // a later probe may succeed (e.g. after a device loss)
    throw e;
  }
}

async function run(req: RunRequest, progress: RunProgress): Promise<RunReport> {
  try {
    if (req.pass === 'backward' && req.backend !== 'webgpu')
      throw new Error(
        'The backward runs on WebGPU only here; the step debugger steps the CPU backward (Forward | Backward in its problem panel).',
      );
    if (req.backend === 'cpu') return runCpu(req, progress);
    return req.pass === 'backward' ? await runGpuBackwardReport(req, progress) : await runGpu(req, progress);
  } catch (e) {
    const c = req.backend === 'webgpu' ? await ctx?.catch(() => undefined) : undefined;
    if (c?.lost) {
      ctx = undefined; // next run opens a fresh device
      throw new Error(c.lost);
    }
    throw e;
  }
}

Comlink.expose({ probe, run } satisfies WebGpuApi);
