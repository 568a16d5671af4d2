// `npm run bench:webgpu -- --ceiling`: the WGSL microbenchmarks (ceiling-run.ts) on the
// bench's device and toggles, every subgroup-matrix shape and type the adapter lists, then the
// CUDA figures of the same GPU in the same run (bench/ceiling-anchor.py: PyTorch fp16 matmul and
// a device copy), printed as one table beside the datasheet column (webgpu/ceilings.ts).
// FLASHSCOPE_CEILING_JSON names a file the rows are also written to.

import { writeFileSync } from 'node:fs';
import type { MatrixShape } from './ceiling-kernels.ts';
import { type CeilingRow, formatRate, runCeilingSuite } from './ceiling-run.ts';
import { H200_DATASHEET } from '../webgpu/ceilings.ts';
import type { WebGpuContext } from '../webgpu/device.ts';
import { runPythonAnchor } from './python-anchor.ts';

/** Every matrix shape the adapter lists, all component types (the context keeps only f16→f32). */
async function allMatrixShapes(ctx: WebGpuContext): Promise<MatrixShape[]> {
  const adapter = await ctx.gpu.requestAdapter({ powerPreference: 'high-performance' });
  const info = adapter?.info as (GPUAdapterInfo & { subgroupMatrixConfigs?: MatrixShape[] }) | undefined;
  const listed = info?.subgroupMatrixConfigs ?? ctx.matrixConfigs;
  return listed.map((m) => ({ componentType: m.componentType, resultComponentType: m.resultComponentType, M: m.M, N: m.N, K: m.K }));
}

/** Which datasheet figure a row stands beside. */
function datasheetFor(row: CeilingRow): string {
  const d = H200_DATASHEET;
  if (row.unit === 'FLOP')
    return row.name.includes('f16') || row.name.includes('f32 ')
      ? `${d.f16MmaTflops} TFLOP/s dense fp16`
      : `${d.int8MmaTops} TOP/s dense int8`;
  if (row.name.startsWith('storage')) return `${d.hbmTBs} TB/s HBM3e`;
  if (row.name.startsWith('workgroup memory')) return `${d.smemTBs.toFixed(1)} TB/s (128 B/clk/SM)`;
  if (row.unit === 'exp') return `${d.expTps.toFixed(2)} Texp/s (16/clk/SM)`;
  return '–';
}

export async function ceilingBench(
  ctx: WebGpuContext,
  o: { quick: boolean; reps: number; focus?: boolean; storage?: boolean; storageSecond?: { mib: number; early: boolean } },
): Promise<number> {
  const shapes = await allMatrixShapes(ctx);
  console.log(
    `\nceiling microbenchmarks (${o.quick ? 'small sizes: correctness only' : 'full size'}); matrix shapes: ${shapes.map((m) => `${m.componentType}→${m.resultComponentType} ${m.M}×${m.N}×${m.K}`).join(', ') || 'none'}`,
  );
  const suite = await runCeilingSuite(
    ctx,
    {
      small: o.quick || ctx.isFallback,
      matrixShapes: shapes,
      reps: o.reps,
      focus: o.focus,
      storage: o.storage,
      storageSecond: o.storageSecond,
    },
    (l) => console.log(`  ${l}`),
  );
  if (o.storageSecond) return suite.failures.length > 0 ? 1 : 0;
  const cuda = runPythonAnchor('ceiling-anchor.py', { reps: o.reps }, 300_000);
  console.log(`\nCUDA figures: ${cuda.note}`);
  const cudaRows = cuda.lines.filter((l) => l.error === undefined) as ((typeof cuda.lines)[number] & { rate: number; unit: string })[];
  for (const l of cuda.lines) if (l.error !== undefined) console.log(`  ${l.key}: FAILED ${l.error}`);
  console.log(`\n| ceiling (${ctx.adapterName}) | WebGPU measured | datasheet (${H200_DATASHEET.source}) |`);
  console.log('|---|---|---|');
  for (const r of suite.rows) console.log(`| ${r.name} | ${formatRate(r)} | ${datasheetFor(r)} |`);
  for (const f of suite.failures) console.log(`| ${f.name} | not run: ${f.error.slice(0, 160)} | – |`);
  for (const c of cudaRows)
    console.log(
      `| CUDA: ${c.key} | ${c.unit === 'FLOP' ? `${(c.rate / 1e12).toFixed(1)} TFLOP/s` : `${(c.rate / 1e12).toFixed(2)} TB/s`} | – |`,
    );
  const file = process.env.FLASHSCOPE_CEILING_JSON;
  if (file)
    writeFileSync(
      file,
      JSON.stringify(
        { adapter: ctx.adapterName, rows: suite.rows, failures: suite.failures, cuda: { note: cuda.note, rows: cudaRows } },
        null,
        1,
      ),
    );
  return suite.rows.length > 0 ? 0 : 1;
}
