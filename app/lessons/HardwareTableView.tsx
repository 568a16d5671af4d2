// A chapter's hardware-model table: the simulated kernel with each switch setting, computed
// in the lesson worker from engine/hw. The row matching the debugger's switches is marked.

import { useEffect, useState } from 'react';
import type { HardwareTable, HwRow } from '../../content/lessons/chapters/types.ts';
import { lessonCall } from './lesson-client.ts';

type Row = HwRow & { label: string };

/** "tensor 93 · mufu 56 · tmem 13": the execution units, busiest first ('sm' is occupancy, not a unit). */
function busy(u: Record<string, number>): string {
  return Object.entries(u)
    .filter(([k]) => k !== 'sm')
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${Math.round(v * 100)}`)
    .join(' · ');
}

const sameSwitches = (a: Record<string, boolean | number>, b: Record<string, boolean | number> | undefined, keys: string[]) =>
  keys.length > 0 && keys.every((k) => (a[k] ?? true) === (b?.[k] ?? true));

export function HardwareTableView({
  chapter,
  table,
  current,
  toggleKeys,
}: {
  chapter: number;
  table: HardwareTable;
  current?: Record<string, boolean | number>;
  toggleKeys: string[];
}) {
  const [rows, setRows] = useState<Row[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setRows(null);
    lessonCall((api) => api.hardware(chapter)).then(
      (r) => live && setRows(r),
      (e: unknown) => live && setError(e instanceof Error ? e.message : String(e)),
    );
    return () => {
      live = false;
    };
  }, [chapter]);
  const base = rows?.[0]?.timeUs;
  return (
    <section className="widget hw-table" aria-label={table.caption}>
      <h3>
        {table.caption} <span className="dim">· {table.shapeNote}</span>
      </h3>
      {error && <p className="error">The hardware model failed: {error}</p>}
      {!rows && !error && <p className="dim">Simulating {table.rows.length} configurations in the lesson worker…</p>}
      {rows && (
        <table className="num-table" data-testid="hw-table">
          <thead>
            <tr>
              <th>configuration</th>
              <th>GPU</th>
              <th>time (µs)</th>
              <th>vs first row</th>
              <th>TFLOP/s</th>
              <th>units busy (% of kernel time)</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.label} className={sameSwitches(r.features, current, toggleKeys) ? 'current' : ''}>
                <td className="label">{r.label}</td>
                <td data-head="GPU">{r.gpu.toUpperCase()}</td>
                <td data-head="time (µs)">{r.timeUs.toFixed(1)}</td>
                <td data-head="vs first row">{base ? `${(r.timeUs / base).toFixed(3)}×` : ''}</td>
                <td data-head="TFLOP/s">{r.tflops.toFixed(0)}</td>
                <td className="units" data-head="units busy (% of kernel time)">
                  {busy(r.utilization)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="hint">
        A model of the kernel's schedule (engine/hw), not a measurement.{' '}
        {toggleKeys.length > 0 && 'The marked row has the same switches as the debugger above.'}
      </p>
    </section>
  );
}
