// Chapter 4's measurement: FA1 counters for several M, run in the lesson worker, as a table
// and a log-log plot of HBM bytes against N²d²/M.

import { useEffect, useState } from 'react';
import type { IoPoint } from '../../content/lessons/chapters/io-sweep.ts';
import { SWEEP_PROBLEM } from '../../content/lessons/chapters/io-sweep.ts';
import { lessonCall } from './lesson-client.ts';
import { Tex } from './RichText.tsx';

const group = (n: number) => Math.round(n).toLocaleString('en-US').replace(/,/g, ' ');

function Plot({ pts }: { pts: IoPoint[] }) {
  const W = 300;
  const H = 170;
  const P = 34;
  const lx = pts.map((p) => Math.log2(p.bound));
  const ly = pts.map((p) => Math.log2(p.hbmBytes));
  const [x0, x1] = [Math.min(...lx) - 0.3, Math.max(...lx) + 0.3];
  const [y0, y1] = [Math.min(...ly) - 0.3, Math.max(...ly) + 0.3];
  const sx = (v: number) => P + ((v - x0) / (x1 - x0)) * (W - P - 8);
  const sy = (v: number) => H - P + 8 - ((v - y0) / (y1 - y0)) * (H - P);
  // A line of slope 1 through the median ratio: what "bytes ∝ N²d²/M" would look like.
  const ratios = pts.map((p) => p.hbmBytes / p.bound).sort((a, b) => a - b);
  const c = Math.log2(ratios[Math.floor(ratios.length / 2)]);
  return (
    <svg viewBox={`0 0 ${W} ${H + 10}`} className="io-plot" role="img" aria-label="HBM bytes against N squared d squared over M, log-log">
      <line x1={sx(x0)} y1={sy(x0 + c)} x2={sx(x1)} y2={sy(x1 + c)} className="io-fit" />
      {pts.map((p, i) => (
        <g key={p.sramBytes}>
          <circle cx={sx(lx[i])} cy={sy(ly[i])} r={4} className="io-pt" />
          {/* Labels point inwards so none is cut at the plot's edge. */}
          <text
            x={sx(lx[i]) + (sx(lx[i]) > W / 2 ? -7 : 7)}
            y={sy(ly[i]) + 4}
            textAnchor={sx(lx[i]) > W / 2 ? 'end' : 'start'}
            className="io-lbl"
          >
            {p.sramBytes / 1024} KiB
          </text>
        </g>
      ))}
      <line x1={P} x2={W - 4} y1={H - P + 8} y2={H - P + 8} className="io-axis" />
      <line x1={P} x2={P} y1={4} y2={H - P + 8} className="io-axis" />
      <text x={(W + P) / 2} y={H + 4} textAnchor="middle" className="io-lbl">
        N²d²/M (log scale)
      </text>
      <text x={10} y={H / 2} textAnchor="middle" className="io-lbl" transform={`rotate(-90 10 ${H / 2})`}>
        HBM bytes (log)
      </text>
    </svg>
  );
}

export function IoSweepView() {
  const [pts, setPts] = useState<IoPoint[] | null>(null);
  const [standard, setStandard] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    lessonCall((api) => api.ioSweep()).then(
      (r) => {
        if (!live) return;
        setPts(r.points);
        setStandard(r.standardBytes);
      },
      (e: unknown) => live && setError(e instanceof Error ? e.message : String(e)),
    );
    return () => {
      live = false;
    };
  }, []);
  const p = SWEEP_PROBLEM;
  return (
    <section className="widget io-sweep" aria-label="FA1 HBM traffic against on-chip memory">
      <h3>
        FA1 counters for several <Tex tex="M" /> (N = {p.nq}, d = {p.d}, fp32, tracing off)
      </h3>
      {error && <p className="error">The sweep failed: {error}</p>}
      {!pts && !error && <p className="dim">Running FA1 five times in the lesson worker…</p>}
      {pts && (
        <div className="io-body">
          <table className="num-table io-table" data-testid="io-table">
            <thead>
              <tr>
                <th>M</th>
                <th>
                  <Tex tex="B_r \times B_c" />
                </th>
                <th>HBM bytes</th>
                <th>
                  <Tex tex="N^2d^2/M" />
                </th>
                <th>bytes ÷ bound</th>
              </tr>
            </thead>
            <tbody>
              {pts.map((r) => (
                <tr key={r.sramBytes} data-testid={`io-row-${r.sramBytes}`}>
                  <td>{r.sramBytes / 1024} KiB</td>
                  <td>
                    {r.blockM} × {r.blockN}
                  </td>
                  <td data-testid={`io-bytes-${r.sramBytes}`}>{group(r.hbmBytes)}</td>
                  <td>{group(r.bound)}</td>
                  <td>{(r.hbmBytes / r.bound).toFixed(1)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Plot pts={pts} />
        </div>
      )}
      {standard !== null && (
        <p className="hint" data-testid="io-standard">
          Standard attention on the same problem: {group(standard)} HBM bytes.
        </p>
      )}
    </section>
  );
}
