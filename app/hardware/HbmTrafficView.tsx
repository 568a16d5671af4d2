// HBM traffic so far, per tensor and direction, against the least any exact algorithm must
// move (Q, K, V read once, O written once). FA1 re-reads and re-writes O, l and m once per
// K/V block; FA2 and later stay at the floor; standard attention adds S and P.

import { type HbmTensor, dtypeBytes, tensorName } from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';
import { TENSOR_COLOUR } from './palette.ts';

const fmt = (n: number) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(2)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

export function HbmTrafficView() {
  const { pane } = usePane();
  const counters = useApp((s) => s.playback[pane].frame?.counters);
  const p = useApp((s) => s.problem[pane].applied?.problem);
  if (!counters || !p) return null;
  const eb = dtypeBytes(p.dtype);
  const floor: Partial<Record<HbmTensor, number>> = {
    Q: p.batch * p.hq * p.nq * p.d * eb,
    K: p.batch * p.hk * p.nk * p.d * eb,
    V: p.batch * p.hk * p.nk * p.dv * eb,
  };
  const floorOut = p.batch * p.hq * p.nq * p.dv * eb;
  const rows: { dir: 'read' | 'written'; t: string; n: number }[] = [];
  for (const [t, n] of Object.entries(counters.hbmRead)) rows.push({ dir: 'read', t, n: n ?? 0 });
  for (const [t, n] of Object.entries(counters.hbmWritten)) rows.push({ dir: 'written', t, n: n ?? 0 });
  const total = rows.reduce((a, r) => a + r.n, 0);
  const minimum = (floor.Q ?? 0) + (floor.K ?? 0) + (floor.V ?? 0) + floorOut;
  const max = Math.max(1, ...rows.map((r) => r.n), ...Object.values(floor).map((v) => v ?? 0), floorOut);
  return (
    <section className="view hw-hbm" aria-label="HBM traffic">
      <h3>HBM traffic so far</h3>
      <p className="dim">
        {fmt(total)} moved; the whole problem needs at least {fmt(minimum)} ({((100 * total) / minimum).toFixed(0)}% of that so far).
      </p>
      <table className="hw-hbm-table">
        <tbody>
          {rows.map((r) => {
            const fl = r.dir === 'read' ? floor[r.t as HbmTensor] : r.t === 'O' ? floorOut : undefined;
            return (
              <tr key={`${r.dir}${r.t}`} data-testid="hbm-row" data-tensor={r.t} data-dir={r.dir} data-bytes={r.n}>
                <th>
                  {tensorName(r.t)} {r.dir}
                </th>
                <td className="bar">
                  <span className="hw-bar" style={{ width: `${(100 * r.n) / max}%`, background: TENSOR_COLOUR[r.t] ?? 'var(--dim)' }} />
                  {fl !== undefined && (
                    <span className="hw-floor" style={{ left: `${(100 * fl) / max}%` }} title={`one pass: ${fmt(fl)}`} />
                  )}
                </td>
                <td className="num">{fmt(r.n)}</td>
                <td className="num dim">{fl ? `${(r.n / fl).toFixed(2)}×` : ''}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p className="dim">The tick on each bar is one pass over that tensor; the last column is passes so far.</p>
    </section>
  );
}
