// Running softmax statistics of the rows of the current Q tile: m and l now, and how m grew
// over the K/V blocks visited so far, with the rescale factor exp(m_old − m_new) marked
// where m grew. The factor is computed from m itself, not taken from the rescale step,
// because FA1's rescale step also folds in the renormalization l_old / l_new.

import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import type { RowHistoryEntry } from '../../engine/api.ts';

function num(v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return '—';
  if (v === -Infinity) return '−∞';
  return Number(v.toPrecision(5)).toString();
}

/** exp(m_old − m_new) (2^(m_old − m_new) for FA4's log2-unit max) where this block raised a finite running max, else undefined. */
function growth(e: RowHistoryEntry | undefined, r: number): number | undefined {
  const before = e?.mBefore?.[r];
  const after = e?.mAfter?.[r];
  if (before === undefined || after === undefined || !Number.isFinite(before) || !(after > before)) return undefined;
  return e?.base2 ? 2 ** (before - after) : Math.exp(before - after);
}

function Spark({ entries, r }: { entries: RowHistoryEntry[]; r: number }) {
  const ms = entries.map((e) => e.mAfter?.[r]).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const W = 150;
  const H = 28;
  if (ms.length === 0) return <svg width={W} height={H} aria-hidden="true" />;
  const lo = Math.min(...ms);
  const hi = Math.max(...ms);
  const y = (v: number) => (hi === lo ? H / 2 : H - 3 - ((v - lo) / (hi - lo)) * (H - 6));
  const x = (i: number) => (entries.length <= 1 ? W / 2 : 4 + (i * (W - 8)) / (entries.length - 1));
  const pts = entries
    .map((e, i) => (e.mAfter && Number.isFinite(e.mAfter[r]) ? `${x(i)},${y(e.mAfter[r])}` : ''))
    .filter(Boolean)
    .join(' ');
  return (
    <svg width={W} height={H} aria-hidden="true">
      <polyline points={pts} fill="none" stroke="var(--accent)" strokeWidth={1.5} />
      {entries.map((e, i) => {
        const f = growth(e, r);
        if (f === undefined || !e.mAfter) return null;
        return (
          <circle key={i} cx={x(i)} cy={y(e.mAfter[r])} r={3} fill="var(--warn)">
            <title>{`K/V block ${e.kvBlock}: m grew, rescale ×${num(f)}`}</title>
          </circle>
        );
      })}
    </svg>
  );
}

export function StatsView() {
  const { pane } = usePane();
  const frame = useApp((s) => s.playback[pane].textFrame);
  const selected = useApp((s) => s.selection[pane].row);
  const patchSelection = useApp((s) => s.patchSelection);
  if (!frame) return null;
  const { history } = frame;
  const [r0, r1] = history.rows;
  const activeRow = selected !== null && selected >= r0 && selected < r1 ? selected : r0;
  const last = history.entries[history.entries.length - 1];
  const base2 = history.entries.some((e) => e.base2);
  return (
    <section className="view stats" aria-label="Running statistics">
      <h3>
        Running max m and sum l — Q tile {history.qBlock} (rows {r0}–{r1 - 1}), {history.entries.length} K/V block
        {history.entries.length === 1 ? '' : 's'} so far
      </h3>
      <div className="stats-scroll">
        <table className="stats-table">
          <thead>
            <tr>
              <th>row</th>
              <th>m</th>
              <th>l</th>
              <th>{base2 ? '2^(m_old−m_new)' : 'e^(m_old−m_new)'}</th>
              <th>m over K/V blocks</th>
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: r1 - r0 }, (_, i) => r0 + i).map((row) => {
              const r = row - r0;
              const f = growth(last, r);
              return (
                <tr key={row} className={row === activeRow ? 'selected' : undefined} data-row={row}>
                  <td>
                    <button
                      type="button"
                      className="row-btn"
                      aria-label={`Select row ${row}`}
                      aria-pressed={row === activeRow}
                      onClick={() => patchSelection(pane, { row })}
                    >
                      {row}
                    </button>
                  </td>
                  <td className="num" data-testid={`m-${row}`}>
                    {num(frame.m[row])}
                  </td>
                  <td className="num" data-testid={`l-${row}`}>
                    {num(frame.l[row])}
                  </td>
                  <td className={`num ${f !== undefined ? 'grew' : ''}`} title="rescale factor of this K/V block where m grew">
                    {f === undefined ? '—' : `×${num(f)}`}
                  </td>
                  <td>
                    <Spark entries={history.entries} r={r} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
