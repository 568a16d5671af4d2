// Worker side of webgpu-test.html: every requested path × every variant, vs the float64 reference.

/// <reference lib="webworker" />
import { randomInputs, referenceAttention, type WebGpuPath, type AttentionProblem } from '../../engine/api.ts';
import {
  AttentionRun,
  pathElem,
  type RunOptions,
  openWebGpu,
  type WebGpuContext,
  bytesPerBatch,
  bytesPerHead,
  sampleSites,
  KERNEL_VARIANTS,
  WINDOW_VARIANTS,
  checkPaged,
  checkVarlen,
} from '../../engine/api-worker.ts';

declare const self: DedicatedWorkerGlobalScope;

export interface CheckResult {
  path: WebGpuPath;
  variant: string;
  maxErrO: number;
  maxErrLse: number;
  config: string;
  error?: string;
  /** The kernel choice of the request that produced this row. */
  kernel?: KernelChoice | null;
}

/**
 * One path (or every path the adapter offers) under each kernel choice in turn, on one device;
 * no choices: only the adapter's report (which paths it offers).
 */
export interface CheckRequest {
  path: string | null;
  kernels: (KernelChoice | null)[];
}

export type CheckMessage =
  | { ok: true; adapter: string; paths: WebGpuPath[]; subgroupMinSize: number; results: CheckResult[] }
  | { ok: false; message: string };

/**
 * Which flash kernel the f32/f16/subgroup paths run; the backend's own choice when absent.
 * 'serving' and 'serving-tiled': the serving layouts instead (engine/webgpu/serving-checks.ts):
 * the varlen forward on the path (row kernel where it fits, or the tiled kernel), and with
 * path=decode paged flash-decoding, with the automatic splits and with one page per split.
 */
export type KernelChoice = 'tiled' | 'tiled-small' | 'row-wide' | 'windows' | 'head-windows' | 'serving' | 'serving-tiled';

// 'windows' and 'head-windows' are set per problem below: bindings of one batch, or of one
// key head's group of query heads.
const CHOICES: Record<Exclude<KernelChoice, 'windows' | 'head-windows' | 'serving' | 'serving-tiled'>, Omit<RunOptions, 'path'>> = {
  tiled: { flashKernel: 'tiled' },
  // 16 rows × 16 keys: many K/V tiles per row, one subgroup per row on a 4-lane adapter
  'tiled-small': { flashKernel: 'tiled', tile: { bm: 16, bn: 16, dk: 8, jc: 8 } },
  // four lanes per row: the partial dot products meet through shuffles
  'row-wide': { rowPrefs: { tpr: 4, rpt: 1 } },
};

self.onmessage = async (ev: MessageEvent<CheckRequest>) => {
  try {
    // One device for every kernel choice of the request: its pipeline cache compiles a kernel two choices share once.
    const ctx = await openWebGpu((self.navigator as Navigator & { gpu?: GPU }).gpu);
    const paths = ev.data.path ? [ev.data.path as WebGpuPath] : ctx.paths;
    const results: CheckResult[] = [];
    for (const kernel of ev.data.kernels) results.push(...(await checksFor(ctx, paths, kernel)).map((r) => ({ ...r, kernel })));
    self.postMessage({
      ok: true,
      adapter: ctx.adapterName,
      paths: ctx.paths,
      subgroupMinSize: ctx.subgroupMinSize,
      results,
    } satisfies CheckMessage);
  } catch (e) {
    self.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CheckMessage);
  }
};

async function checksFor(ctx: WebGpuContext, paths: WebGpuPath[], kernel: KernelChoice | null): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  if (kernel === 'serving' || kernel === 'serving-tiled') {
    for (const path of paths) {
      if (path === 'decode')
        results.push(
          ...(await checkPaged(ctx)),
          ...(await checkPaged(ctx, undefined, { splitPages: 1 })).map((r) => ({ ...r, variant: `${r.variant} (one page per split)` })),
        );
      else results.push(...(await checkVarlen(ctx, path, undefined, kernel === 'serving-tiled' ? { flashKernel: 'tiled' } : {})));
    }
    return results;
  }
  const windowed = kernel === 'windows' || kernel === 'head-windows';
  for (const path of paths) {
    for (const v of windowed ? WINDOW_VARIANTS : KERNEL_VARIANTS) {
      const p = { ...v.problem, dtype: pathElem(path) === 'f16' ? ('fp16' as const) : ('fp32' as const) };
      const choice = windowed ? { maxBindingBytes: bindingFor(p, path, kernel) } : kernel ? CHOICES[kernel] : {};
      const x = randomInputs(p, { seed: 11 });
      const ref = referenceAttention(p, x);
      let run: AttentionRun | undefined;
      try {
        run = await AttentionRun.create(ctx, p, { path, ...choice });
        run.upload(x);
        await run.execute();
        const r = await run.read();
        let eo = 0;
        let el = 0;
        for (let i = 0; i < r.o.length; i++) eo = Math.max(eo, Math.abs(r.o[i] - ref.o[i]));
        for (let i = 0; i < r.lse.length; i++) el = Math.max(el, r.lse[i] === ref.lse[i] ? 0 : Math.abs(r.lse[i] - ref.lse[i]));
        results.push({ path, variant: v.name, maxErrO: eo, maxErrLse: el, config: run.config });
      } catch (e) {
        results.push({
          path,
          variant: v.name,
          maxErrO: NaN,
          maxErrLse: NaN,
          config: '',
          error: e instanceof Error ? e.message : String(e),
        });
      } finally {
        run?.destroy();
      }
    }
    if (kernel === 'windows') results.push(await fillInChunks(ctx, path));
  }
  return results;
}

/** The binding size that makes `p` run in windows of one batch, or of one key head's query heads. */
function bindingFor(p: AttentionProblem, path: WebGpuPath, kind: 'windows' | 'head-windows'): number {
  const eb = pathElem(path) === 'f16' ? 2 : 4;
  if (kind === 'windows') return Math.max(...Object.values(bytesPerBatch(p, eb)));
  const h = bytesPerHead(p, eb);
  const g = p.hq / p.hk;
  return Math.max(g * h.Q, g * h.O, g * h.LSE, h.K, h.V);
}

/**
 * fillRandom on a run whose bindings hold one batch (the tensors filled a binding-sized chunk
 * at a time) must write exactly what it writes in one piece: compares the inputs of sampled
 * rows, first and last batch included. The difference lands in maxErrO.
 */
async function fillInChunks(ctx: WebGpuContext, path: WebGpuPath): Promise<CheckResult> {
  const p = { ...WINDOW_VARIANTS[0].problem, dtype: pathElem(path) === 'f16' ? ('fp16' as const) : ('fp32' as const) };
  const runs: AttentionRun[] = [];
  try {
    runs.push(
      await AttentionRun.create(ctx, p, { path, maxBindingBytes: bindingFor(p, path, 'windows') }),
      await AttentionRun.create(ctx, p, { path }),
    );
    for (const r of runs) await r.fillRandom(5);
    let diff = 0;
    for (const { b, h, i } of sampleSites(p, 3)) {
      const [x, y] = await Promise.all(runs.map((r) => r.readRowInputs(b, h, i)));
      for (const key of ['q', 'k', 'v'] as const)
        for (let j = 0; j < x[key].length; j++) diff = Math.max(diff, Math.abs(x[key][j] - y[key][j]));
    }
    return { path, variant: 'fill in chunks', maxErrO: diff, maxErrLse: 0, config: runs[0].config };
  } catch (e) {
    return { path, variant: 'fill in chunks', maxErrO: NaN, maxErrLse: NaN, config: '', error: e instanceof Error ? e.message : String(e) };
  } finally {
    runs.forEach((r) => r.destroy());
  }
}
