// The difference table (whole-run totals, predictions, error vs float64: max abs, mean,
// RMSE, rel-L1, with how many times lower the best pane is) and the element-wise difference
// of two panes' outputs as a heatmap. The numbers come from each pane's worker
// (compareData, which also computes the float64 reference); here they are only laid side
// by side. A pane refused for its dtype, or whose load failed, has no column, and says why.

import { useEffect, useMemo, useState } from 'react';
import { diffTable, diffTableCsv, outputDifference, ratioNotes, GPUS } from '../../engine/api.ts';
import { messageOf } from '../store/pane-controller.ts';
import { downloadText } from '../export/download.ts';
import { useApp } from '../store/store.ts';
import { colourScale } from '../views/colour.ts';
import { Heatmap } from '../views/Heatmap.tsx';
import { useCompare } from './compare-store.ts';
import { controllers } from '../store/controllers.ts';
import { comparePaneId } from './pane-config.ts';
import { paneLabel } from './pane-label.ts';
import { paneRefusal } from './pane-dtype.ts';
import { SHARED_PANE } from './shared-request.ts';
import { paneDifferences, sameTilesPlan, type PaneFacts } from './pane-differences.ts';
import { useHw } from '../store/hw-store.ts';
import { choiceKey, defaultGpu } from '../store/gpus.ts';
import { hasHardwareModel } from '../../engine/api.ts';
import { paneFacts } from './pane-facts.ts';
import { diffState, pairState, type PaneOutcome } from './diff-state.ts';

/** Per pane: why it is not run (its algorithm cannot take its dtype), or undefined. A string key keeps the selector stable. */
function useRefusals(): (string | undefined)[] {
  const panes = useCompare((s) => s.panes);
  const key = useApp((s) => JSON.stringify(panes.map((c) => paneRefusal(c, s.problem[SHARED_PANE]?.applied) ?? null)));
  return useMemo(() => (JSON.parse(key) as (string | null)[]).map((r) => r ?? undefined), [key]);
}

/** Per pane: why it is not run (refused for its dtype, or its load failed), whether its result is in, and its algorithm. */
function useOutcomes(): PaneOutcome[] {
  const panes = useCompare((s) => s.panes);
  const results = useCompare((s) => s.results);
  const failures = useCompare((s) => s.failures);
  const refusals = useRefusals();
  return panes.map((c, i) => ({ algorithm: c.algorithm, refusal: refusals[i] ?? failures[i], ready: !!results[i] }));
}

/** Fetches each loaded pane's whole-run results whenever its run or the GPU changes. */
function useResults(): void {
  const panes = useCompare((s) => s.panes);
  const gpu = useCompare((s) => s.gpu);
  const failures = useCompare((s) => s.failures);
  // A string key, so the selector returns a stable value (a fresh array would re-render forever).
  const key = useApp((s) =>
    panes
      .map((c, i) => {
        const pb = s.playback[comparePaneId(i)];
        // A refused pane still holds its previous run in the worker; that run is not this pane's configuration.
        // Nor is the run of a pane whose last load failed.
        if (paneRefusal(c, s.problem[SHARED_PANE]?.applied) || failures[i]) return '';
        return pb?.summary && pb.status === 'ready' ? `${pb.summary.algorithm}:${pb.summary.total}:${pb.summary.loadMs}` : '';
      })
      .join('|'),
  );
  useEffect(() => {
    let live = true;
    key.split('|').forEach((k, i) => {
      const c = controllers.get(comparePaneId(i));
      if (!k || !c) return;
      c.api
        .compareData(gpu)
        .then((r) => live && useCompare.getState().setResult(i, r))
        .catch(
          (e: unknown) =>
            live &&
            useApp.getState().patchPlayback(comparePaneId(i), { error: { place: 'worker', message: `Comparing failed: ${messageOf(e)}` } }),
        );
    });
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, gpu]);
}

function DiffHeatmap() {
  const panes = useCompare((s) => s.panes);
  const results = useCompare((s) => s.results);
  const [a, b] = useCompare((s) => s.diff);
  const setDiff = useCompare((s) => s.setDiff);
  const summaryA = useApp((s) => s.playback[comparePaneId(a)]?.summary);
  const inputs = useApp((s) => s.playback[comparePaneId(a)]?.inputs);
  const shared = useApp((s) => s.problem[SHARED_PANE]?.applied);
  const [head, setHead] = useState(0);
  const pair = pairState(useOutcomes(), a, b);
  const ra = results[a];
  const rb = results[b];
  const diff = useMemo(() => {
    if (!ra || !rb) return undefined;
    try {
      return { ...outputDifference(ra.output, rb.output) };
    } catch (e) {
      return { error: messageOf(e) };
    }
  }, [ra, rb]);
  const nq = inputs?.nq ?? 0;
  // A backward compares dQ (width d); a forward compares O (width dv).
  const name = ra?.outputName ?? 'O';
  const dv = (name === 'dQ' ? inputs?.d : inputs?.dv) ?? 0;
  const heads = nq && dv && diff && 'diff' in diff ? diff.diff.length / (nq * dv) : 0;
  const h = Math.min(head, Math.max(0, heads - 1));
  const slice = diff && 'diff' in diff && heads ? diff.diff.subarray(h * nq * dv, (h + 1) * nq * dv) : undefined;
  const maxHead = slice ? slice.reduce((m, x) => Math.max(m, Number.isFinite(x) ? Math.abs(x) : 0), 0) : 0;
  const pick = (which: 0 | 1, v: number) => {
    const next: [number, number] = which === 0 ? [v, b] : [a, v];
    if (next[0] !== next[1]) setDiff(next);
  };
  return (
    <section className="view diff-heatmap" aria-label="Output difference">
      <h3>Output difference A − B{name === 'dQ' ? ' (dQ of the backward)' : ''}</h3>
      <div className="fields">
        {(['A', 'B'] as const).map((label, which) => (
          <label key={label} className="field">
            <span>{label}</span>
            <select
              aria-label={`Difference pane ${label}`}
              value={which === 0 ? a : b}
              onChange={(e) => pick(which as 0 | 1, Number(e.target.value))}
            >
              {panes.map((p, i) => (
                <option key={i} value={i} disabled={i === (which === 0 ? b : a)}>
                  {paneLabel(p, i, shared)}
                </option>
              ))}
            </select>
          </label>
        ))}
        {heads > 1 && (
          <label className="field">
            <span>head</span>
            <select aria-label="Difference head" value={h} onChange={(e) => setHead(Number(e.target.value))}>
              {Array.from({ length: heads }, (_, i) => (
                <option key={i} value={i}>
                  {i}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      {diff && 'error' in diff && (
        <p className="error" role="alert">
          {diff.error}
        </p>
      )}
      {pair.kind === 'refused' && (
        <p className="dim" data-testid="diff-pair-not-run">
          {pair.message}
        </p>
      )}
      {!diff && pair.kind !== 'refused' && <p className="dim">Waiting for both panes to finish loading…</p>}
      {slice && summaryA && (
        <>
          <p data-testid="diff-max">
            max |A − B| = {maxHead === 0 ? '0 (identical outputs)' : maxHead.toExponential(3)}
            {heads > 1 && ` in head ${h}; ${(diff && 'maxAbs' in diff ? diff.maxAbs : 0).toExponential(3)} over all heads`}
          </p>
          <Heatmap
            id="diff"
            title={`${name}_A − ${name}_B`}
            data={slice}
            rows={nq}
            cols={dv}
            scale={colourScale('diverging', [-maxHead, maxHead])}
            tileRows={summaryA.blocks.blockM}
            tileCols={dv}
            maxPx={260}
            rowLabel="query row"
            colLabel={name === 'dQ' ? 'd' : 'dv'}
          />
        </>
      )}
    </section>
  );
}

/** The panes' tiles, dtype and GPU in words, and "Same tiles in every pane" when the tiles differ. */
function PaneDifferencesNote({ shown }: { shown: number[] }) {
  const panes = useCompare((s) => s.panes);
  const shared = useApp((s) => s.problem[SHARED_PANE]?.applied);
  const hwGpus = useHw((s) => s.panes);
  const key = useApp((s) => JSON.stringify(shown.map((i) => s.playback[comparePaneId(i)]?.summary?.blocks ?? null)));
  const blocks = JSON.parse(key) as ({ blockM: number; blockN: number } | null)[];
  if (!shared || blocks.some((b) => b === null)) return null;
  const pass = shared.pass === 'backward' ? 'backward' : 'forward';
  const facts: PaneFacts[] = shown.map((i, k) => {
    const c = panes[i];
    const modelled = hasHardwareModel(c.algorithm, pass);
    const gpuId = modelled ? (hwGpus[comparePaneId(i)]?.gpu[choiceKey(c.algorithm, pass)] ?? defaultGpu(c.algorithm, pass)) : undefined;
    return paneFacts(shared, c, i, blocks[k]!, gpuId ? (GPUS.find((g) => g.id === gpuId)?.name ?? gpuId) : undefined);
  });
  const d = paneDifferences(facts);
  const plan = sameTilesPlan(facts);
  return (
    <div className="pane-differences" data-testid="pane-differences">
      <ul>
        {d.lines.map((l) => (
          <li key={l}>{l}</li>
        ))}
      </ul>
      {d.tilesDiffer && plan.changes && (
        <button
          type="button"
          onClick={() => {
            const store = useCompare.getState();
            shown.forEach((i, k) => {
              const [m, n] = plan.tiles[k];
              store.setPane(i, { blockM: String(m), blockN: String(n) });
            });
          }}
        >
          Same tiles in every pane ({plan.target[0]}×{plan.target[1]}
          {facts.some((f) => f.kernelTile) ? ' where the tile is free' : `, pane ${facts[0].pane}'s`})
        </button>
      )}
      {d.tilesDiffer && plan.note && <p className="dim">{plan.note}</p>}
    </div>
  );
}

export function DiffPanel() {
  useResults();
  const panes = useCompare((s) => s.panes);
  const results = useCompare((s) => s.results);
  const gpu = useCompare((s) => s.gpu);
  const setGpu = useCompare((s) => s.setGpu);
  const shared = useApp((s) => s.problem[SHARED_PANE]?.applied);
  // Columns: the panes that run; a refused pane is named below the table instead.
  const state = diffState(useOutcomes());
  const shown = state.kind === 'table' ? state.shown : [];
  const labels = shown.map((i) => paneLabel(panes[i], i, shared));
  const rows = state.kind === 'table' ? diffTable(shown.map((i, k) => ({ label: labels[k], ...results[i]! }))) : undefined;
  const names = shown.map((i) => `pane ${i + 1}`);
  return (
    <div className="diff-panel">
      <section className="view" aria-label="Difference table">
        <h3>Difference table (whole run)</h3>
        <div className="fields">
          <label className="field">
            <span>Predict on</span>
            <select aria-label="GPU for predictions" value={gpu} onChange={(e) => setGpu(e.target.value)}>
              {GPUS.map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            disabled={!rows}
            onClick={() => rows && downloadText('flashscope-compare.csv', diffTableCsv(labels, rows), 'text/csv')}
          >
            Table CSV
          </button>
        </div>
        {/* With one column there is nothing to set side by side. */}
        {rows && shown.length > 1 && <PaneDifferencesNote shown={shown} />}
        {state.kind === 'waiting' && <p className="dim">Waiting for every pane to finish loading…</p>}
        {state.kind === 'none' && (
          <p className="error" role="alert" data-testid="diff-not-run">
            {state.message}
          </p>
        )}
        {state.kind !== 'none' && state.notRun && (
          <p className="dim" data-testid="diff-not-run">
            {state.notRun}
          </p>
        )}
        {rows && (
          <div className="diff-table-scroll">
            <table className="diff-table" data-testid="diff-table">
              <thead>
                <tr>
                  <th>metric</th>
                  {labels.map((l) => (
                    <th key={l}>{l}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.metric} data-metric={r.metric} className={r.metric.endsWith('vs float64') ? 'error-row' : undefined}>
                    <th>{r.metric}</th>
                    {r.values.map((v, i) => (
                      <td key={i} className={r.best === i ? 'best' : undefined}>
                        {v}
                      </td>
                    ))}
                  </tr>
                ))}
                {rows
                  .filter((r) => r.metric === 'RMSE vs float64')
                  .map((r) => (
                    <tr key="ratio" data-metric="RMSE against the others" className="ratio-row">
                      <th>RMSE against the others</th>
                      {ratioNotes(r.raw, names).map((n, i) => (
                        <td key={i} className={r.best === i ? 'best' : undefined}>
                          {n || '—'}
                        </td>
                      ))}
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
        )}
        <p className="dim">
          Lowest value of a row in bold (marked ◀) where lower is better. Errors are against float64 attention of the unrounded inputs every
          pane shares (before any fp16 rounding or FP8 quantization). Predictions come from FlashScope's hardware model (one SM simulated,
          spread over the GPU); they are for the stepped problem's shape.
        </p>
      </section>
      <DiffHeatmap />
    </div>
  );
}
