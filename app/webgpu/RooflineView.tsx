// The WebGPU panel's roofline: the run as a point (FLOP per byte of the memory that feeds it,
// TFLOP/s reached) under the measured ceilings, and each resource's time at its ceiling beside
// the measured time, so a reader sees which ceiling binds and how much of it the kernel reaches.
// Numbers show on hover and on keyboard focus (every mark is a tab stop).

import { type ReactElement, useState } from 'react';
import { type AttentionProblem, H200_MEASURED, RESOURCE_LABEL, type Roofline, rooflineOfRun } from '../../engine/api.ts';
import type { RunReport } from './protocol.ts';

const W = 420;
const H = 240;
const PAD = { l: 48, r: 26, t: 10, b: 32 };

const log = Math.log10;
const fmtT = (flops: number) => `${(flops / 1e12).toPrecision(3)} TFLOP/s`;
const fmtMs = (s: number) => (s >= 1e-5 ? `${(s * 1e3).toFixed(3)} ms` : `${(s * 1e6).toPrecision(3)} µs`);
const pct = (f: number) => `${f >= 0.01 ? (f * 100).toFixed(0) : (f * 100).toPrecision(2)}%`;
/** A power of ten as a plain number (1000, 1, 0.01), or 1e-6 past four digits. */
const decade = (e: number) => (Math.abs(e) >= 4 ? `1e${e}` : e >= 0 ? String(10 ** e) : (10 ** e).toFixed(-e));

interface Mark {
  key: string;
  text: string;
}

function Plot({ r, onDetail }: { r: Roofline; onDetail: (text: string | null) => void }) {
  const decode = r.kernel === 'decode';
  const c = H200_MEASURED;
  const mma = r.kernel === 'forward' ? c.mmaWorkgroupRight : c.mmaWorkgroupBoth;
  const bw = decode ? c.storageBytes : c.workgroupBytes;
  const x = decode ? r.storageIntensity : r.workgroupIntensity;
  const y = r.achievedFlops;
  const x0 = Math.floor(log(Math.min(x, mma / bw) / 10));
  const x1 = Math.ceil(log(Math.max(x, mma / bw) * 10));
  const y0 = Math.floor(log(Math.min(y, bw * 10 ** x0)));
  const y1 = Math.ceil(log(mma * 1.5));
  const px = (v: number) => PAD.l + ((log(v) - x0) / (x1 - x0)) * (W - PAD.l - PAD.r);
  const py = (v: number) => H - PAD.b - ((log(v) - y0) / (y1 - y0)) * (H - PAD.t - PAD.b);
  const ridge = mma / bw;
  const memLabel = decode ? 'storage' : 'workgroup memory';
  const marks: (Mark & { el: (focus: boolean) => ReactElement })[] = [
    {
      key: 'mem',
      text: `${memLabel} roof: ${(bw / 1e12).toFixed(2)} TB/s × FLOP per byte, up to the ridge at ${ridge.toFixed(1)} FLOP/B`,
      el: (f) => (
        <line x1={px(10 ** x0)} y1={py(bw * 10 ** x0)} x2={px(ridge)} y2={py(mma)} stroke="var(--accent)" strokeWidth={f ? 4 : 2} />
      ),
    },
    {
      key: 'mma',
      text: `MMA roof: ${fmtT(mma)} (16×16×16 f16→f32, ${r.kernel === 'forward' ? 'one operand' : 'both operands'} from workgroup memory each MMA)`,
      el: (f) => <line x1={px(ridge)} y1={py(mma)} x2={px(10 ** x1)} y2={py(mma)} stroke="var(--accent)" strokeWidth={f ? 4 : 2} />,
    },
    {
      key: 'run',
      text: `this run: ${fmtT(y)} at ${x.toFixed(2)} FLOP per ${memLabel} byte; ${pct(r.fractionOfBinding)} of the binding ceiling (${RESOURCE_LABEL[r.binding.resource]}), ${pct(r.fractionOfSum)} of the sum of all`,
      el: (f) => <circle cx={px(x)} cy={py(y)} r={f ? 8 : 6} fill="var(--warn, #d9822b)" stroke="var(--fg, #222)" />,
    },
  ];
  const [focus, setFocus] = useState<string | null>(null);
  const show = (m: Mark | null) => {
    setFocus(m?.key ?? null);
    onDetail(m?.text ?? null);
  };
  const decades = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
  return (
    <svg width={W} height={H} className="wg-roofline" aria-label="roofline plot">
      {decades(x0, x1).map((e) => (
        <text key={`x${e}`} x={px(10 ** e)} y={H - PAD.b + 14} fontSize={10} textAnchor="middle" fill="var(--dim)">
          {decade(e)}
        </text>
      ))}
      {decades(y0, y1).map((e) => (
        <text key={`y${e}`} x={PAD.l - 4} y={py(10 ** e) + 3} fontSize={10} textAnchor="end" fill="var(--dim)">
          {decade(e - 12)}
        </text>
      ))}
      <text x={(W + PAD.l) / 2} y={H - 4} fontSize={10} textAnchor="middle" fill="var(--dim)">
        FLOP per {memLabel} byte (log)
      </text>
      <text x={10} y={PAD.t + 90} fontSize={10} fill="var(--dim)" transform={`rotate(-90 10 ${PAD.t + 90})`}>
        TFLOP/s (log)
      </text>
      <rect x={PAD.l} y={PAD.t} width={W - PAD.l - PAD.r} height={H - PAD.t - PAD.b} fill="none" stroke="var(--border, #ccc)" />
      {marks.map((m) => (
        // biome-ignore lint/a11y/noStaticElementInteractions: an SVG mark is a tab stop whose hover and focus show its numbers below the plot; it has no action
        <g
          key={m.key}
          tabIndex={0}
          aria-label={m.text}
          data-mark={m.key}
          onMouseEnter={() => show(m)}
          onMouseLeave={() => show(null)}
          onFocus={() => show(m)}
          onBlur={() => show(null)}
        >
          <title>{m.text}</title>
          {m.el(focus === m.key)}
        </g>
      ))}
    </svg>
  );
}

export function RooflineView({ report, problem }: { report: RunReport; problem: AttentionProblem | null }) {
  const [detail, setDetail] = useState<string | null>(null);
  if (report.backend !== 'webgpu' || !problem) return null;
  const r = rooflineOfRun({ pass: report.pass, path: report.path, config: report.config, ms: report.ms }, problem, H200_MEASURED);
  if (!r)
    return (
      <div className="wg-dim" data-testid="wg-roofline-none">
        Roofline: shown for the subgroup-matrix forward and backward and for decoding, the kernels whose ceilings{' '}
        <code>npm run bench:webgpu -- --ceiling</code> measures.
      </div>
    );
  return (
    <section className="wg-roofline-view" aria-label="roofline">
      <h4>Roofline: why this run takes {fmtMs(r.measuredSeconds)}</h4>
      <Plot r={r} onDetail={setDetail} />
      <div className="wg-roofline-detail" role="status" aria-label="roofline detail">
        {detail ?? 'Hover or tab to a mark for its numbers.'}
      </div>
      <table className="wg-table" aria-label="time at each ceiling">
        <thead>
          <tr>
            <th>resource</th>
            <th>time alone at its ceiling</th>
            <th>ceiling</th>
          </tr>
        </thead>
        <tbody>
          {r.bounds.map((b) => (
            <tr key={b.resource} className={b === r.binding ? 'wg-binding' : undefined}>
              <td>
                {RESOURCE_LABEL[b.resource]}
                {b === r.binding ? ' (binds)' : ''}
              </td>
              <td>{fmtMs(b.seconds)}</td>
              <td>{b.ceiling}</td>
            </tr>
          ))}
          <tr>
            <td>sum (no overlap between them)</td>
            <td>{fmtMs(r.sumSeconds)}</td>
            <td>{pct(r.fractionOfSum)} of the measured time</td>
          </tr>
          <tr>
            <td>measured</td>
            <td>{fmtMs(r.measuredSeconds)}</td>
            <td>
              {fmtT(r.achievedFlops)}; the binding ceiling's time is {pct(r.fractionOfBinding)} of it
            </td>
          </tr>
        </tbody>
      </table>
      <div className="wg-dim" data-testid="wg-roofline-source">
        Ceilings from the table, not measured in this browser: {r.ceilingsSource}. Counts from the kernel's tiles (
        {r.kernel === 'decode' ? 'K/V streamed once' : 'per query block and key tile'}).
      </div>
    </section>
  );
}
