// Worker side of webgpu-test.html: every requested path × every variant, vs the float64 reference.

/// <reference lib="webworker" />
import { randomInputs } from '../../engine/inputs.ts';
import { referenceAttention } from '../../engine/reference.ts';
import { AttentionRun, pathElem, type RunOptions } from '../../engine/webgpu/backend.ts';
import { openWebGpu, type WebGpuPath } from '../../engine/webgpu/device.ts';
import { KERNEL_VARIANTS } from '../../engine/webgpu/variants.ts';

declare const self: DedicatedWorkerGlobalScope;

export interface CheckResult {
  path: WebGpuPath;
  variant: string;
  maxErrO: number;
  maxErrLse: number;
  config: string;
  error?: string;
}

export type CheckMessage =
  | { ok: true; adapter: string; paths: WebGpuPath[]; subgroupMinSize: number; results: CheckResult[] }
  | { ok: false; message: string };

/** Which flash kernel the f32/f16/subgroup paths run; the backend's own choice when absent. */
export type KernelChoice = 'tiled' | 'tiled-small' | 'row-wide';

const CHOICES: Record<KernelChoice, Omit<RunOptions, 'path'>> = {
  tiled: { flashKernel: 'tiled' },
  // 16 rows × 16 keys: many K/V tiles per row, one subgroup per row on a 4-lane adapter
  'tiled-small': { flashKernel: 'tiled', tile: { bm: 16, bn: 16, dk: 8, jc: 8 } },
  // four lanes per row: the partial dot products meet through shuffles
  'row-wide': { rowPrefs: { tpr: 4, rpt: 1 } },
};

self.onmessage = async (ev: MessageEvent<{ path: string | null; kernel: KernelChoice | null }>) => {
  try {
    const ctx = await openWebGpu((self.navigator as Navigator & { gpu?: GPU }).gpu);
    const paths = ev.data.path ? [ev.data.path as WebGpuPath] : ctx.paths;
    const results: CheckResult[] = [];
    for (const path of paths) {
      for (const v of KERNEL_VARIANTS) {
        const p = { ...v.problem, dtype: pathElem(path) === 'f16' ? ('fp16' as const) : ('fp32' as const) };
        const x = randomInputs(p, { seed: 11 });
        const ref = referenceAttention(p, x);
        let run: AttentionRun | undefined;
        try {
          run = await AttentionRun.create(ctx, p, { path, ...(ev.data.kernel ? CHOICES[ev.data.kernel] : {}) });
          run.upload(x);
          await run.execute();
          const r = await run.read();
          let eo = 0;
          let el = 0;
          for (let i = 0; i < r.o.length; i++) eo = Math.max(eo, Math.abs(r.o[i] - ref.o[i]));
          for (let i = 0; i < r.lse.length; i++) el = Math.max(el, r.lse[i] === ref.lse[i] ? 0 : Math.abs(r.lse[i] - ref.lse[i]));
          results.push({ path, variant: v.name, maxErrO: eo, maxErrLse: el, config: run.config });
        } catch (e) {
          results.push({ path, variant: v.name, maxErrO: NaN, maxErrLse: NaN, config: '', error: e instanceof Error ? e.message : String(e) });
        } finally {
          run?.destroy();
        }
      }
    }
    self.postMessage({ ok: true, adapter: ctx.adapterName, paths: ctx.paths, subgroupMinSize: ctx.subgroupMinSize, results } satisfies CheckMessage);
  } catch (e) {
    self.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CheckMessage);
  }
};
