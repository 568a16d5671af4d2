// The WebGPU kernel checks: every requested path × every variant problem (variants.ts), each
// result against the float64 reference. Run by vitest under Node/Dawn (kernel-checks.test.ts,
// SwiftShader in CI) and by webgpu-test.html's worker in a browser on a real adapter.

import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { AttentionRun, pathElem, type RunOptions } from './backend.ts';
import { bytesPerBatch, bytesPerHead } from './binding-windows.ts';
import type { WebGpuContext, WebGpuPath } from './device.ts';
import { sampleSites } from './row-check.ts';
import { type CheckRow, checkPaged, checkVarlen, failedRow, maxErr } from './serving-checks.ts';
import { KERNEL_VARIANTS, WINDOW_VARIANTS } from './variants.ts';

export interface CheckResult extends CheckRow {
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

/** Every requested kernel choice in turn on one device: its pipeline cache compiles a kernel two choices share once. */
export async function runKernelChecks(ctx: WebGpuContext, req: CheckRequest): Promise<Extract<CheckMessage, { ok: true }>> {
  const paths = req.path ? [req.path as WebGpuPath] : ctx.paths;
  const results: CheckResult[] = [];
  for (const kernel of req.kernels) results.push(...(await checksFor(ctx, paths, kernel)).map((r) => ({ ...r, kernel })));
  return { ok: true, adapter: ctx.adapterName, paths: ctx.paths, subgroupMinSize: ctx.subgroupMinSize, results };
}

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
        results.push({ path, variant: v.name, maxErrO: maxErr(r.o, ref.o), maxErrLse: maxErr(r.lse, ref.lse), config: run.config });
      } catch (e) {
        results.push({ path, variant: v.name, ...failedRow(e) });
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
    return { path, variant: 'fill in chunks', ...failedRow(e) };
  } finally {
    runs.forEach((r) => r.destroy());
  }
}
