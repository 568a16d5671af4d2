// The last successful run: its timings, configuration and float64 checks, the O (or dQ)
// heatmap, LSE per row, and the roofline for its problem.

import { type AttentionProblem, PATH_LABELS, type WebGpuPath } from '../../engine/api.ts';
import type { RunReport } from './protocol.ts';
import { GridHeatmap, LseChart } from './ResultViews.tsx';
import { RooflineView } from './RooflineView.tsx';

function backendLabel(report: RunReport): string {
  if (report.backend === 'cpu') return 'CPU (FA2 step engine)';
  if (report.pass !== 'backward') return PATH_LABELS[report.path as WebGpuPath];
  return report.path === 'flash-matrix'
    ? 'backward, f16 subgroup matrices (after the flash-matrix forward)'
    : 'backward, f32 (after the flash-f32 forward)';
}

export function RunResult({ report, problem }: { report: RunReport; problem: AttentionProblem | null }) {
  return (
    <section className="wg-result" aria-label="result">
      <table className="wg-table">
        <tbody>
          <tr>
            <th>backend</th>
            <td>{backendLabel(report)}</td>
          </tr>
          <tr>
            <th>time</th>
            <td data-testid="wg-time">
              {report.ms.toFixed(3)} ms ({report.clock})
            </td>
          </tr>
          <tr>
            <th>TFLOP/s</th>
            <td data-testid="wg-tflops">{report.tflops.toPrecision(3)}</td>
          </tr>
          {report.backend === 'webgpu' && report.pass === 'forward' && (
            <tr>
              <th>GB/s</th>
              <td>{report.gbs.toPrecision(3)} (Q, K, V read once, O and LSE written once)</td>
            </tr>
          )}
          <tr>
            <th>kernels</th>
            <td>{report.kernels.map((k) => `${k.name}: ${k.ms.toFixed(3)} ms`).join('; ')}</td>
          </tr>
          <tr>
            <th>configuration</th>
            <td>{report.config}</td>
          </tr>
          <tr>
            <th>check</th>
            <td data-testid="wg-check">
              {report.check.rows} sampled rows vs float64 CPU reference: max |ΔO| = {report.check.maxAbsErrO.toExponential(2)}, max |ΔLSE| ={' '}
              {report.check.maxAbsErrLse.toExponential(2)}
            </td>
          </tr>
          {report.gradCheck && (
            <tr>
              <th>gradient check</th>
              <td data-testid="wg-grad-check">
                {report.gradCheck.rows} sampled dQ rows vs float64: max |ΔdQ| = {report.gradCheck.maxAbsErrDq.toExponential(2)}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="wg-views">
        <figure>
          <GridHeatmap grid={report.heatmap} />
          <figcaption>
            {report.pass === 'backward' ? 'dQ' : 'O'} of batch 0, head 0: {report.heatmap.rows}×{report.heatmap.cols} cells, each the mean
            of a {report.heatmap.rowBlock}×{report.heatmap.colBlock} block of rows × columns
          </figcaption>
        </figure>
        <figure>
          <LseChart lse={report.lse} />
          <figcaption>LSE per query row, batch 0, head 0 ({report.lse.length} rows; gaps are fully masked rows)</figcaption>
        </figure>
      </div>
      <RooflineView report={report} problem={problem} />
    </section>
  );
}
