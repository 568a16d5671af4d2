// Counters up to the current step: HBM traffic by tensor, FLOPs, exponentials, rescales.

import { useState } from 'react';
import { tensorName, totalBytes, type Counters } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { counterFigure } from '../../content/counter-figures.ts';

/** A rounded figure whose exact value shows on hover, and beside it on a tap or Enter (a phone cannot hover; a byte question wants the exact one). */
function Fig({ n, unit = '' }: { n: number; unit?: string }) {
  const [open, setOpen] = useState(false);
  const f = counterFigure(n);
  const exact = `${n.toLocaleString('en-US')}${unit ? ` ${unit === 'B' ? 'bytes' : unit}` : ''}`;
  if (f === String(n))
    return (
      <>
        {f}
        {unit && ` ${unit}`}
      </>
    );
  return (
    <>
      <button type="button" className="fig-exact" title={exact} aria-expanded={open} onClick={() => setOpen(!open)}>
        {f}
        {unit}
      </button>
      {open && <span className="fig-exact-value"> = {exact}</span>}
    </>
  );
}

function ByTensor({ m }: { m: Partial<Record<string, number>> }) {
  const entries = Object.entries(m);
  if (entries.length === 0) return <>—</>;
  return (
    <>
      {entries.map(([t, n], i) => (
        <span key={t}>
          {i > 0 && ', '}
          {tensorName(t)} <Fig n={n ?? 0} unit="B" />
        </span>
      ))}
    </>
  );
}

export function CountersTable({ c }: { c: Counters }) {
  return (
    <table className="counters">
      <tbody>
        <tr>
          <th>HBM read</th>
          <td>
            <Fig n={totalBytes(c.hbmRead)} unit="B" />{' '}
            <span className="dim">
              (<ByTensor m={c.hbmRead} />)
            </span>
          </td>
        </tr>
        <tr>
          <th>HBM written</th>
          <td>
            <Fig n={totalBytes(c.hbmWritten)} unit="B" />{' '}
            <span className="dim">
              (<ByTensor m={c.hbmWritten} />)
            </span>
          </td>
        </tr>
        <tr>
          <th>matmul FLOPs</th>
          <td>
            <Fig n={c.matmulFlops} />
          </td>
        </tr>
        <tr>
          <th>other FLOPs</th>
          <td>
            <Fig n={c.nonMatmulFlops} />
          </td>
        </tr>
        <tr>
          <th>exp</th>
          <td>
            <Fig n={c.expCount} />
          </td>
        </tr>
        <tr>
          <th>row rescales</th>
          <td>
            <Fig n={c.rescaleCount} />
          </td>
        </tr>
        {c.sparsity && c.sparsity.tilesSkipped + c.sparsity.tilesFull + c.sparsity.tilesPartial === 0 && (
          <tr>
            <th>mask</th>
            <td data-testid="counters-sparsity">
              no tiles to skip: <Fig n={c.sparsity.maskEvals} /> mask checks, one per score
            </td>
          </tr>
        )}
        {c.sparsity && c.sparsity.tilesSkipped + c.sparsity.tilesFull + c.sparsity.tilesPartial > 0 && (
          <tr>
            <th>block mask</th>
            <td data-testid="counters-sparsity">
              {c.sparsity.tilesSkipped} tiles skipped, saving <Fig n={c.sparsity.skippedFlops} /> FLOPs and{' '}
              <Fig n={c.sparsity.skippedBytes} unit="B" />{' '}
              <span className="dim">
                ({c.sparsity.tilesFull} full, no mask; {c.sparsity.tilesPartial} partial, <Fig n={c.sparsity.maskEvals} /> mask checks)
              </span>
            </td>
          </tr>
        )}
        {c.atomicAdds > 0 && (
          <tr>
            <th>atomic adds</th>
            <td>
              <Fig n={c.atomicAdds} />
            </td>
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
