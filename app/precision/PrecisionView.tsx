// The Precision view: the loaded run against float64. The worker computes the reference
// (engine/debugger/precision.ts, TRACE.md "Precision view data"); this view shows the
// output's error as a heatmap with its totals, the S and P error of what the steps so far
// wrote (the current tile outlined), the P values the FP8 cast flushed, each tile's
// quantization scales, and how many values each cast step flushed.
//
// It starts open for a run whose trace has low-precision fields and folded otherwise, since
// the reference costs O(N²d) in the worker; a folded view asks for nothing.

import { useMemo, useState } from 'react';
import type { PrecisionHead, PrecisionRun, TilePrecision, OutputError, Frame, LoadSummary } from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';
import { colourScale, type ColourScale } from '../views/colour.ts';
import type { Rect } from '../views/Heatmap.tsx';
import { TileHeatmap } from '../views/TileHeatmap.tsx';
import type { TileGeometry } from '../views/tile-geometry.ts';
import { FLUSHED_LABEL } from '../views/HeatmapsView.tsx';
import { flushedUpTo, keyOf, usePanePrecision, usePrecisionData, usePrecisionStore } from '../views/precision-store.ts';
import { num, scaleLines, tileIndex } from '../views/tile-info.ts';
import './precision.css';

/** Most tiles the keyboard tile list shows; beyond it the error maps' tooltips still give each tile's scales. */
const MAX_TILE_BUTTONS = 1024;

/** A sequential scale from 0 to the largest finite value, on a square-root scale so small errors still show. */
function errorScale(values: ArrayLike<number>): ColourScale {
  let hi = 0;
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i]) && values[i] > hi) hi = values[i];
  return colourScale('sequential', [0, hi > 0 ? hi : 1e-30], { gamma: 0.5 });
}

function Metrics({ label, e, testid }: { label: string; e: OutputError; testid: string }) {
  return (
    <tr data-testid={testid}>
      <th scope="row">{label}</th>
      <td data-metric="max_abs">{num(e.max_abs)}</td>
      <td data-metric="rmse">{num(e.rmse)}</td>
      <td data-metric="rel_l1">{num(e.rel_l1)}</td>
    </tr>
  );
}

function Totals({ run, head, summary }: { run: PrecisionRun; head: PrecisionHead; summary: LoadSummary }) {
  const s = run.stats;
  return (
    <div className="prec-totals">
      <table className="num-table" data-testid="precision-totals" aria-label="Output error against float64">
        <thead>
          <tr>
            <th>
              <span className="sr-only">output</span>
            </th>
            <th scope="col">max abs</th>
            <th scope="col">RMSE</th>
            <th scope="col">rel-L1</th>
          </tr>
        </thead>
        <tbody>
          <Metrics label={`O, whole output (${run.total.count} values)`} e={run.total} testid="precision-total-run" />
          <Metrics label={`O, head b=${head.b}, h=${head.h}`} e={head.oError} testid="precision-total-head" />
        </tbody>
      </table>
      <p className="dim note">
        {summary.algorithmName} against float64 attention on the same inputs (engine/core/reference.ts). rel-L1 = Σ|O − O64| / Σ|O64|.
        {s &&
          s.castP !== undefined &&
          ` The run cast ${s.castP} P values > 0; ${s.flushedP ?? 0} flushed to 0; ${s.saturated ?? 0} input entries saturated.`}
      </p>
    </div>
  );
}

/** Errors of the cells the run has computed by this step (NaN elsewhere, drawn as "not computed"). */
function soFar(err: Float32Array, written: Float32Array): Float32Array {
  const out = new Float32Array(err.length);
  for (let i = 0; i < err.length; i++) out[i] = Number.isNaN(written[i]) ? NaN : err[i];
  return out;
}

function tileMax(err: Float32Array, nk: number, rect: Rect | undefined): number {
  if (!rect) return NaN;
  let m = NaN;
  for (let r = rect.r0; r < rect.r1; r++)
    for (let c = rect.c0; c < rect.c1; c++) {
      const v = err[r * nk + c];
      if (Number.isFinite(v) && !(m >= v)) m = v;
    }
  return m;
}

function StepErrors({
  head,
  frame,
  summary,
  tiles,
  geometry,
}: {
  head: PrecisionHead;
  frame: Frame;
  summary: LoadSummary;
  tiles: Map<string, TilePrecision>;
  geometry: TileGeometry;
}) {
  const sScale = useMemo(() => errorScale(head.sErr), [head]);
  const pScale = useMemo(() => errorScale(head.pErr), [head]);
  // Rebuilt every render: the frame's arrays are written in place as the run steps.
  const seq = frame.seq;
  const s = soFar(head.sErr, frame.s);
  const p = soFar(head.pErr, frame.p);
  const flushed = useMemo(() => flushedUpTo(head.flushedAt, frame.step), [head, frame.step]);
  const info = (tr: number, tc: number) => scaleLines(tiles.get(`${tr},${tc}`));
  const [r0, r1] = frame.event.tile.rows;
  const [c0, c1] = frame.event.tile.cols;
  const rect: Rect | undefined = r1 > r0 && c1 > c0 ? { r0, r1, c0, c1 } : undefined;
  let flushedHere = 0;
  if (rect)
    for (const i of flushed)
      if (Math.floor(i / head.nk) >= r0 && Math.floor(i / head.nk) < r1 && i % head.nk >= c0 && i % head.nk < c1) flushedHere++;
  const sMax = tileMax(s, head.nk, rect);
  const pMax = tileMax(p, head.nk, rect);
  const px = 230;
  return (
    <div className="prec-step">
      <h4>
        Step {frame.step + 1}: {frame.event.kind}
        {rect
          ? ` on tile (${frame.event.tile.qBlock}, ${frame.event.tile.kvBlock}), rows ${r0}–${r1 - 1}, keys ${c0}–${c1 - 1}`
          : ', no S/P tile'}
      </h4>
      {rect && (
        <p data-testid="precision-step" className="prec-step-line">
          this tile so far: max |S − S64| <b>{num(sMax)}</b>, max |P − P64| <b>{num(pMax)}</b>, flushed P <b>{flushedHere}</b>
          {scaleLines(tiles.get(`${frame.event.tile.qBlock},${frame.event.tile.kvBlock}`), false).map((l) => (
            <span key={l}> · {l}</span>
          ))}
        </p>
      )}
      <div className="prec-maps">
        <TileHeatmap
          geometry={geometry}
          rows="q"
          cols="k"
          id="|S − S64|"
          title="|S − S64| so far"
          data={s}
          version={seq}
          scale={sScale}
          maxPx={px}
          tileInfo={info}
        />
        <TileHeatmap
          geometry={geometry}
          rows="q"
          cols="k"
          id="|P − P64|"
          title="|P − P64| so far"
          data={p}
          version={seq}
          scale={pScale}
          maxPx={px}
          marks={flushed}
          marksLabel={FLUSHED_LABEL}
          tileInfo={info}
        />
      </div>
      <p className="dim note">
        S64: the float64 scores of the stored Q and K (before any quantization or rotation).{' '}
        {summary.base2 ? 'S and m are in log₂ units here, so P64 = 2^(S64·log₂e − m)' : 'P64 = exp(S64 − m)'} with the m the step
        subtracted, so the P error shows what S’s error and P’s own rounding or cast did at that step.
      </p>
    </div>
  );
}

function TileList({ head, tiles, summary }: { head: PrecisionHead; tiles: Map<string, TilePrecision>; summary: LoadSummary }) {
  const [shown, setShown] = useState<string | null>(null);
  // A tapped tile stays shown when the pointer leaves (a touch screen has no hover).
  const [tapped, setTapped] = useState<string | null>(null);
  const { rows: tr, cols: tc } = summary.tiles;
  if (tr * tc > MAX_TILE_BUTTONS)
    return <p className="dim note">{tr * tc} tiles: too many to list here; hover the error maps for a tile’s scales.</p>;
  let worst = 0;
  for (const t of head.tiles) if (Number.isFinite(t.pMaxErr) && t.pMaxErr > worst) worst = t.pMaxErr;
  const scale = colourScale('sequential', [0, worst > 0 ? worst : 1e-30], { gamma: 0.5 });
  const t = shown ? tiles.get(shown) : undefined;
  const cell = Math.max(14, Math.min(28, Math.floor(260 / Math.max(tr, tc))));
  return (
    <div className="prec-tiles">
      <h4>Tiles: scales and error</h4>
      <div className="prec-tile-row">
        <fieldset
          className="prec-tile-grid bare"
          aria-label="Tiles of this head"
          style={{ gridTemplateColumns: `repeat(${tc}, ${cell}px)` }}
          onMouseLeave={() => setShown(tapped)}
        >
          {Array.from({ length: tr * tc }, (_, k) => {
            const key = `${Math.floor(k / tc)},${k % tc}`;
            const tile = tiles.get(key);
            const bg =
              tile && Number.isFinite(tile.pMaxErr)
                ? scale.interpolate(scale.gamma === 1 ? tile.pMaxErr / scale.domain[1] : (tile.pMaxErr / scale.domain[1]) ** scale.gamma)
                : undefined;
            return (
              <button
                key={key}
                type="button"
                className={`prec-tile${tile ? '' : ' empty'}${tile && tile.flushed > 0 ? ' has-flushed' : ''}`}
                style={{ width: cell, height: cell, background: bg }}
                aria-label={`tile (${key.replace(',', ', ')})${tile ? '' : ': skipped'}`}
                data-tile={key}
                onMouseEnter={() => setShown(key)}
                onFocus={() => setShown(key)}
                onClick={() => {
                  setTapped(key);
                  setShown(key);
                }}
              >
                {tile && tile.flushed > 0 ? '✕' : ''}
              </button>
            );
          })}
        </fieldset>
        <div className="prec-tile-detail" data-testid="tile-detail" aria-live="polite">
          {!shown && (
            <p className="dim">
              Hover, tap or focus a tile for its quantization scales and errors. Colour: max |P − P64| (0 to {num(worst)}); ✕: P values
              flushed.
            </p>
          )}
          {shown && !t && <p>Tile ({shown}): skipped (every entry masked).</p>}
          {t && (
            <dl>
              <dt>tile</dt>
              <dd>
                ({t.qBlock}, {t.kvBlock}): rows {t.rows[0]}–{t.rows[1] - 1}, keys {t.cols[0]}–{t.cols[1] - 1}
              </dd>
              <dt>Q scale</dt>
              <dd>
                {t.qScale === undefined
                  ? 'none (not quantized)'
                  : `${num(t.qScale, 4)}${t.qSaturated ? `, ${t.qSaturated} saturated` : ''}`}
              </dd>
              <dt>K scale</dt>
              <dd>{t.kScale === undefined ? 'none' : `${num(t.kScale, 4)}${t.kSaturated ? `, ${t.kSaturated} saturated` : ''}`}</dd>
              <dt>V scale</dt>
              <dd>{t.vScale === undefined ? 'none' : `${num(t.vScale, 4)}${t.vSaturated ? `, ${t.vSaturated} saturated` : ''}`}</dd>
              <dt>pScale</dt>
              <dd>{t.pScale === undefined ? 'none (P not cast)' : t.pScale}</dd>
              <dt>flushed P</dt>
              <dd>{t.flushed}</dd>
              <dt>max |S − S64|</dt>
              <dd>{num(t.sMaxErr)}</dd>
              <dt>max |P − P64|</dt>
              <dd>{num(t.pMaxErr)}</dd>
            </dl>
          )}
        </div>
      </div>
    </div>
  );
}

function FlushChart({ run, head, frame }: { run: PrecisionRun; head: PrecisionHead; frame: Frame }) {
  const steps = run.castSteps;
  if (steps.length === 0) {
    return (
      <p className="dim note" data-testid="flushed-none">
        This run casts no P to a narrow format, so no P value is flushed; the S and P errors are the rounding of its dtype alone.
      </p>
    );
  }
  let runSoFar = 0;
  let castSoFar = 0;
  for (let i = 0; i < steps.length; i++)
    if (steps[i] <= frame.step) {
      runSoFar += run.castFlushed[i];
      castSoFar++;
    }
  let headSoFar = 0;
  for (const v of head.flushedAt) if (v >= 0 && v <= frame.step) headSoFar++;
  const W = 320;
  const H = 56;
  // At most one bar per pixel: a long run's casts are summed into W bins (each bin's last
  // cast step decides whether it is done).
  const bins = Math.min(steps.length, W);
  const per = steps.length / bins;
  const binCount = new Float64Array(bins);
  const binLast = new Int32Array(bins);
  for (let i = 0; i < steps.length; i++) {
    const k = Math.min(bins - 1, Math.floor(i / per));
    binCount[k] += run.castFlushed[i];
    binLast[k] = steps[i];
  }
  let top = 1;
  for (const c of binCount) if (c > top) top = c;
  const bw = W / bins;
  const at = (s: number) => {
    // The bars are placed by cast order; the cursor sits after the last bin whose casts are done.
    let k = 0;
    while (k < bins && binLast[k] <= s) k++;
    return k * bw;
  };
  return (
    <div className="prec-flush">
      <h4>Flushed by step</h4>
      <p>
        P values flushed by step {frame.step + 1}: <b data-testid="flushed-head">{headSoFar}</b> in this head,{' '}
        <b data-testid="flushed-run-so-far">{runSoFar}</b> in the run ({castSoFar} of {steps.length} casts done); whole run:{' '}
        <b data-testid="flushed-total">{run.flushedTotal}</b>.
      </p>
      <svg
        width={W}
        height={H + 14}
        role="img"
        aria-label={`P values flushed by the ${steps.length} cast steps${bins < steps.length ? ` in ${bins} bars` : ''}, tallest bar ${top}`}
        className="prec-flush-chart"
      >
        <rect x={0} y={0} width={W} height={H} className="chart-bg" />
        {Array.from(binCount, (c, i) =>
          c > 0 ? (
            <rect
              key={i}
              x={i * bw}
              y={H - (H * c) / top}
              width={Math.max(1, bw - (bw > 3 ? 1 : 0))}
              height={(H * c) / top}
              className={binLast[i] <= frame.step ? 'bar done' : 'bar'}
            />
          ) : null,
        )}
        <line x1={at(frame.step)} x2={at(frame.step)} y1={0} y2={H} className="cursor" />
        <text x={0} y={H + 11} className="axis">
          first cast
        </text>
        <text x={W} y={H + 11} textAnchor="end" className="axis">
          cast {steps.length}
          {bins < steps.length ? ` (${per.toFixed(1)} per bar)` : ''} · tallest bar {top} flushed
        </text>
      </svg>
    </div>
  );
}

export function PrecisionView() {
  const { pane } = usePane();
  const summary = useApp((s) => s.playback[pane].summary);
  const frame = useApp((s) => s.playback[pane].frame);
  const userOpen = usePanePrecision(pane, (p) => p.open);
  const open = userOpen ?? !!summary?.lowPrecision;
  usePrecisionData(open);
  const data = usePanePrecision(pane, (p) => p.data);
  const dataKey = usePanePrecision(pane, (p) => p.key);
  const error = usePanePrecision(pane, (p) => p.error);
  const head = data?.ok ? data.head : undefined;
  const tiles = useMemo(() => tileIndex(head?.tiles ?? []), [head]);
  const oScale = useMemo(() => head && errorScale(head.oErr), [head]);
  const d = useApp((s) => s.playback[pane].inputs?.d);
  if (!summary || !frame) return null;
  const geometry: TileGeometry | undefined =
    head && d !== undefined
      ? { nq: head.nq, nk: head.nk, d, dv: head.dv, ...summary.blocks, rows: frame.event.tile.rows, cols: frame.event.tile.cols }
      : undefined;
  const current = dataKey !== undefined && dataKey === keyOf(pane);
  const toggle = () => usePrecisionStore.getState().patch(pane, { open: !open });
  return (
    <section className="view precision" aria-label="Precision">
      <h3 className="hw-title">
        <button
          type="button"
          className="hw-fold"
          aria-expanded={open}
          aria-label={`${open ? 'Hide' : 'Show'} precision against float64`}
          onClick={toggle}
        >
          {open ? '▾' : '▸'}
        </button>{' '}
        Precision against float64
      </h3>
      {!open && (
        <p className="dim note">
          Folded: opening it computes the float64 reference in the worker (O(N²d)).{' '}
          <button type="button" onClick={toggle}>
            Measure against float64
          </button>
        </p>
      )}
      {open && !current && !error && (
        <p className="dim" role="status">
          Computing the float64 reference…
        </p>
      )}
      {open && current && error && (
        <p className="error" role="alert">
          The precision data could not be computed: {error}
        </p>
      )}
      {open && current && data && !data.ok && (
        <p className="too-large" role="status" data-testid="precision-refused">
          {data.reason}
        </p>
      )}
      {open && current && head && data?.ok && oScale && geometry && (
        <>
          <Totals run={data.run} head={head} summary={summary} />
          <div className="prec-top">
            <TileHeatmap
              // The final output: no step is outlined on it.
              geometry={{ ...geometry, rows: [0, 0] }}
              rows="q"
              cols="dv"
              id="|O − O64|"
              title={`|O − O64|, head b=${head.b}, h=${head.h} (final output)`}
              data={head.oErr}
              scale={oScale}
              maxPx={230}
              complete
              tileInfo={(tr) => {
                const t = head.tiles.find((x) => x.qBlock === tr);
                return t?.qScale !== undefined ? [`Q scale ${num(t.qScale, 4)}${t.qSaturated ? ` (${t.qSaturated} saturated)` : ''}`] : [];
              }}
            />
            <FlushChart run={data.run} head={head} frame={frame} />
          </div>
          <StepErrors head={head} frame={frame} summary={summary} tiles={tiles} geometry={geometry} />
          <TileList head={head} tiles={tiles} summary={summary} />
        </>
      )}
    </section>
  );
}

export default PrecisionView;
