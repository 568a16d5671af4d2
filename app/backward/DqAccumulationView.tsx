// The dQ accumulation of a K/V-outer backward (FA2, FA3): one row per dQ row block i, one
// column per K/V column block j (one worker each). A cell fills once worker j has added
// τ·dS_ij K_j into dQ_i; the current add is outlined, and the adds that would land on the
// same row block at the same moment if every worker ran in step are marked — the adds the
// atomics (or FA3's deterministic ordering) have to serialize.

import './backward.css';
import { useMemo } from 'react';
import { dqAccumulationAt } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';

type CellState = 'done' | 'current' | 'together' | 'pending' | 'skipped';

const LEGEND: [CellState, string][] = [
  ['done', 'added'],
  ['current', 'adding now'],
  ['together', 'would add at the same moment'],
  ['pending', 'adds later'],
  ['skipped', 'never adds (masked)'],
];

export function DqAccumulationView() {
  const { pane } = usePane();
  const frame = useApp((s) => s.playback[pane].textFrame);
  const summary = useApp((s) => s.playback[pane].summary);
  const adds = summary?.backward?.dqAdds;
  const state = useMemo(
    () =>
      frame && summary && adds ? dqAccumulationAt(adds, frame.step, frame.b, frame.h, summary.tiles.rows, summary.tiles.cols) : undefined,
    [adds, frame, summary],
  );
  if (!frame || !summary || !state) return null;
  const ev = frame.event;
  const dq = ev.kind === 'dq' ? ev : undefined;
  // The engine's own list of simultaneous adds, where this step is an add.
  const together = dq ? dq.collidesWith : [];
  const { rows, cols, count, contributors } = state;
  const cellState = (i: number, j: number): CellState => {
    if (dq && i === dq.tile.qBlock && j === dq.tile.kvBlock) return 'current';
    if (dq && i === dq.tile.qBlock && together.includes(j)) return 'together';
    if (count[i * cols + j] > 0) return 'done';
    return contributors[i].includes(j) ? 'pending' : 'skipped';
  };
  const { blockM } = summary.blocks;
  const current = state.current;
  return (
    <section className="view dq-accum" aria-label="dQ accumulation">
      <h3>dQ accumulation</h3>
      <p className="dq-now" data-testid="dq-now">
        {dq && current ? (
          <>
            Worker {dq.worker} (K/V block {dq.worker}) adds τ·dS·K into dQ row block {dq.tile.qBlock} (rows {dq.tile.rows[0]}–
            {dq.tile.rows[1] - 1}) with {dq.atomic ? 'an atomic add' : 'a read-modify-write'}. Row block {dq.tile.qBlock} has now received
            adds from {dq.contributors.length} of {contributors[dq.tile.qBlock].length} workers.{' '}
            {together.length > 0
              ? `With every worker running at once, each at its own ${ordinal((state.position ?? 0) + 1)} row block, worker${together.length > 1 ? 's' : ''} ${together.join(', ')} would add into the same rows at the same moment: the atomics serialize these ${together.length + 1} adds.`
              : 'With every worker running at once, no other worker adds into these rows at the same moment.'}
            {dq.turn !== undefined &&
              ` Deterministic mode: this is add number ${dq.turn + 1} in the fixed order of row block ${dq.tile.qBlock}.`}
          </>
        ) : (
          `This step (${ev.kind}) adds nothing to dQ. ${count.reduce((a, b) => a + b, 0)} of ${summary.backward?.dqAdds.filter((a) => a.b === frame.b && a.h === frame.h).length ?? 0} adds of this head are done.`
        )}
      </p>
      <table className="dq-grid" aria-label="dQ row blocks by worker">
        <thead>
          <tr>
            <th scope="col">dQ rows \ worker j</th>
            {Array.from({ length: cols }, (_, j) => (
              <th key={j} scope="col">
                {j}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {Array.from({ length: rows }, (_, i) => (
            <tr key={i} className={dq && dq.tile.qBlock === i ? 'current-row' : undefined}>
              <th scope="row">
                {i}{' '}
                <span className="dim">
                  ({i * blockM}–{Math.min(frame.nq, (i + 1) * blockM) - 1})
                </span>
              </th>
              {Array.from({ length: cols }, (_, j) => {
                const st = cellState(i, j);
                return (
                  <td
                    key={j}
                    data-state={st}
                    className={`dq-${st}`}
                    title={`dQ row block ${i}, worker ${j}: ${LEGEND.find((l) => l[0] === st)![1]}`}
                  />
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
      <ul className="dq-legend" aria-label="Legend">
        {LEGEND.map(([st, label]) => (
          <li key={st}>
            <span className={`dq-swatch dq-${st}`} /> {label}
          </li>
        ))}
      </ul>
    </section>
  );
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
}

export default DqAccumulationView;
