// Counters up to the current step: HBM traffic by tensor, FLOPs, exponentials, rescales.

import { totalBytes, type Counters } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../pane/context.ts';

const si = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(2)} G` : n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : String(n);

export function CountersTable({ c }: { c: Counters }) {
  const byTensor = (m: Partial<Record<string, number>>) =>
    Object.entries(m)
      .map(([t, n]) => `${t} ${si(n ?? 0)}B`)
      .join(', ') || '—';
  return (
    <table className="counters">
      <tbody>
        <tr>
          <th>HBM read</th>
          <td>
            {si(totalBytes(c.hbmRead))}B <span className="dim">({byTensor(c.hbmRead)})</span>
          </td>
        </tr>
        <tr>
          <th>HBM written</th>
          <td>
            {si(totalBytes(c.hbmWritten))}B <span className="dim">({byTensor(c.hbmWritten)})</span>
          </td>
        </tr>
        <tr>
          <th>matmul FLOPs</th>
          <td>{si(c.matmulFlops)}</td>
        </tr>
        <tr>
          <th>other FLOPs</th>
          <td>{si(c.nonMatmulFlops)}</td>
        </tr>
        <tr>
          <th>exp</th>
          <td>{si(c.expCount)}</td>
        </tr>
        <tr>
          <th>row rescales</th>
          <td>{si(c.rescaleCount)}</td>
        </tr>
        {c.atomicAdds > 0 && (
          <tr>
            <th>atomic adds</th>
            <td>{si(c.atomicAdds)}</td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

export function CountersView() {
  const { pane } = usePane();
  const counters = useApp((s) => s.playback[pane].textFrame?.counters);
  if (!counters) return null;
  return (
    <section className="view counters-view" aria-label="Counters so far">
      <h3>Counters so far</h3>
      <CountersTable c={counters} />
    </section>
  );
}
