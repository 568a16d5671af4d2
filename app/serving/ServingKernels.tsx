// What upstream's FA3 and FA4 kernels make of the problem the page just stepped: the
// configuration each dispatch picks (tile, GQA packing, splits, paged K/V path) with the
// upstream lines deciding it, and the simulated time and HBM bytes on its GPU.

import type { ServingKernel, ServingRun } from '../../engine/api.ts';
import { UpstreamDecisions } from '../hardware/UpstreamChoice.tsx';

const bytes = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(2)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} B`;
/** Three significant digits at most, without an exponent: 4.34, 0.0016, 512. */
const short = (x: number) => (x >= 100 ? x.toFixed(0) : String(Number(x.toPrecision(3))));

/** "4 sequences, cu_seqlens_q/k, Hq 2 / Hk 1, num_splits heuristic" */
function problemLine(run: ServingRun): string {
  const s = run.hardware.shape;
  const layout = s.pageSize !== undefined ? `paged K/V, page size ${s.pageSize}, seqused_k` : 'packed, cu_seqlens_q / cu_seqlens_k';
  const splits =
    s.numSplits === undefined
      ? "each kernel's default split count"
      : s.numSplits === 0
        ? 'num_splits heuristic'
        : `num_splits ${s.numSplits}`;
  const dtype = run.hardware.runDtype ? `${run.hardware.runDtype} inputs taken as ${s.dtype}` : s.dtype;
  return `${s.batch} sequences (${layout}), Hq ${s.hq} / Hk ${s.hk}, d ${s.d}, max seqlen_q ${s.nq}, seqlen_k ${s.nk}, ${splits}, ${dtype}${s.causal ? ', causal' : ''}.`;
}

function Kernel({ k }: { k: ServingKernel }) {
  return (
    <article className="serving-kernel" data-testid={`serving-kernel-${k.algorithm}`} aria-label={`${k.name} on ${k.gpuName}`}>
      <h4>
        {k.name} <span className="dim">on {k.gpuName}</span>
      </h4>
      {k.time_us !== undefined && (
        <p data-testid="kernel-figures">
          Simulated: <b>{short(k.time_us)} µs</b>, {short(k.tflops ?? 0)} TFLOP/s, {bytes(k.hbm_bytes ?? 0)} of HBM traffic (
          {k.bound === 'hbm' ? 'bandwidth-bound' : 'schedule-bound'})
        </p>
      )}
      {k.refused && (
        <p className="error" data-testid="kernel-refused">
          Does not run this problem: {k.refused}
        </p>
      )}
      {k.upstream && <UpstreamDecisions upstream={k.upstream} />}
    </article>
  );
}

export function ServingKernels({ run }: { run: ServingRun }) {
  return (
    <section className="serving-kernels" aria-label="Upstream kernels" data-testid="serving-kernels">
      <h3>Upstream kernels on this problem</h3>
      <p className="dim">{problemLine(run)}</p>
      {run.hardware.kernels.map((k) => (
        <Kernel key={k.algorithm} k={k} />
      ))}
    </section>
  );
}
