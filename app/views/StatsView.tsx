// Running softmax statistics of the rows of the current Q tile: m and ℓ now, and how m grew
// over the K/V blocks visited so far, with the rescale factor exp(m_old − m_new) marked
// where m grew. The factor is computed from m itself, not taken from the rescale step,
// because FA1's rescale step also folds in the renormalization l_old / l_new.

import { memo, useCallback, useEffect, useLayoutEffect, useRef, useState, type UIEvent } from 'react';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import type { RowHistory, RowHistoryEntry, TraceEvent } from '../../engine/api.ts';
import { rowWindow } from './row-window.ts';
import { mergedTitle, statsTitle } from './stats-title.ts';

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

/** One row's m after each K/V block visited (NaN where absent) and the rescale factor where m grew. */
export interface SparkSeries {
  kv: number[];
  m: number[];
  grew: (number | undefined)[];
}

export function sparkSeries(entries: RowHistoryEntry[], r: number): SparkSeries {
  return { kv: entries.map((e) => e.kvBlock), m: entries.map((e) => e.mAfter?.[r] ?? Number.NaN), grew: entries.map((e) => growth(e, r)) };
}

function sameSeries(a: SparkSeries, b: SparkSeries): boolean {
  if (a.m.length !== b.m.length) return false;
  for (let i = 0; i < a.m.length; i++) if (!Object.is(a.m[i], b.m[i]) || a.grew[i] !== b.grew[i] || a.kv[i] !== b.kv[i]) return false;
  return true;
}

/** The theme's colours, read once per theme: reading computed style per row would recompute styles 128 times a step. */
let colourCache: { line: string; grew: string; theme: string } | undefined;
function sparkColours(el: Element, theme: string): { line: string; grew: string } {
  if (colourCache?.theme !== theme) {
    const style = getComputedStyle(el);
    colourCache = {
      line: style.getPropertyValue('--accent').trim() || '#4fb3ff',
      grew: style.getPropertyValue('--warn').trim() || '#ff9f1c',
      theme,
    };
  }
  return colourCache;
}

/**
 * From the combine step on the splits' running m and ℓ are spent: the rows hold the merged LSE
 * and each split's weight w_k = e^(LSE_k − LSE) in it.
 */
function CombineStats({ ev, history }: { ev: TraceEvent; history: RowHistory }) {
  const merged = ev.kind === 'combine' ? ev : history.merged!;
  const [r0] = ev.tile.rows;
  const splits = merged.splitLse[0]?.length ?? 0;
  return (
    <section className="view stats" aria-label="Running statistics">
      <h3>{mergedTitle(ev, ev.tile.qBlock, ev.tile.rows, splits)}</h3>
      <div className="stats-scroll">
        <table className="stats-table combine-table">
          <thead>
            <tr>
              <th>row</th>
              <th>LSE</th>
              {merged.splitLse[0]?.map((_l, k) => (
                <th key={k}>
                  w<sub>{k}</sub>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {merged.lse.map((lse, i) => (
              <tr key={i} data-row={r0 + i}>
                <td>{r0 + i}</td>
                <td>{num(lse)}</td>
                {merged.splitLse[i].map((l, k) => (
                  <td key={k}>{num(Math.exp(l - lse))}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

const SPARK_W = 150;
const SPARK_H = 28;

/** The row's sparkline on a canvas: one element per row instead of an SVG tree, redrawn only when the series changed. */
function Spark({ series }: { series: SparkSeries }) {
  const ref = useRef<HTMLCanvasElement>(null);
  const theme = useApp((s) => s.layout.theme);
  // Drawn at the width the stylesheet gives it (a phone's table narrows the line rather than scrolling),
  // as a resize observer reports it: reading clientWidth here would force a layout inside the step's task.
  const [cssWidth, setCssWidth] = useState(SPARK_W);
  useEffect(() => {
    const c = ref.current;
    if (!c) return;
    const observer = new ResizeObserver(([e]) => setCssWidth(Math.round(e.contentRect.width) || SPARK_W));
    observer.observe(c);
    return () => observer.disconnect();
  }, []);
  useLayoutEffect(() => {
    const c = ref.current;
    const g = c?.getContext('2d');
    if (!c || !g) return;
    const dpr = Math.min(2, window.devicePixelRatio || 1);
    const w = cssWidth;
    if (c.width !== w * dpr) {
      c.width = w * dpr;
      c.height = SPARK_H * dpr;
    }
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, SPARK_H);
    const finite = series.m.filter((v) => Number.isFinite(v));
    if (finite.length === 0) return;
    const lo = Math.min(...finite);
    const hi = Math.max(...finite);
    const n = series.m.length;
    const y = (v: number) => (hi === lo ? SPARK_H / 2 : SPARK_H - 3 - ((v - lo) / (hi - lo)) * (SPARK_H - 6));
    const x = (i: number) => (n <= 1 ? w / 2 : 4 + (i * (w - 8)) / (n - 1));
    const colours = sparkColours(c, theme);
    g.strokeStyle = colours.line;
    g.lineWidth = 1.5;
    g.beginPath();
    let first = true;
    series.m.forEach((v, i) => {
      if (!Number.isFinite(v)) return;
      if (first) g.moveTo(x(i), y(v));
      else g.lineTo(x(i), y(v));
      first = false;
    });
    g.stroke();
    g.fillStyle = colours.grew;
    series.grew.forEach((f, i) => {
      if (f === undefined || !Number.isFinite(series.m[i])) return;
      g.beginPath();
      g.arc(x(i), y(series.m[i]), 3, 0, 2 * Math.PI);
      g.fill();
    });
  }, [series, theme, cssWidth]);
  const rescales = series.grew.flatMap((f, i) => (f === undefined ? [] : [`K/V block ${series.kv[i]}: m grew, rescale ×${num(f)}`]));
  return (
    <canvas
      ref={ref}
      className="spark"
      role="img"
      aria-label={`m over ${series.m.length} K/V blocks, ${rescales.length} rescales`}
      data-points={series.m.filter((v) => Number.isFinite(v)).length}
      data-rescales={rescales.length}
      title={rescales.join('\n') || undefined}
    />
  );
}

interface RowProps {
  row: number;
  m: number;
  l: number;
  factor: number | undefined;
  active: boolean;
  series: SparkSeries;
  onSelect: (row: number) => void;
}

/** One row of the table; re-rendered only when its own numbers or sparkline changed, so a step touches the rows it changed. */
const StatsRow = memo(
  function StatsRow({ row, m, l, factor, active, series, onSelect }: RowProps) {
    return (
      <tr className={active ? 'selected' : undefined} data-row={row}>
        <td>
          <button type="button" className="row-btn" aria-label={`Select row ${row}`} aria-pressed={active} onClick={() => onSelect(row)}>
            {row}
          </button>
        </td>
        <td className="num" data-testid={`m-${row}`}>
          {num(m)}
        </td>
        <td className="num" data-testid={`l-${row}`}>
          {num(l)}
        </td>
        <td className={`num ${factor !== undefined ? 'grew' : ''}`} title="rescale factor of this K/V block where m grew">
          {factor === undefined ? '—' : `×${num(factor)}`}
        </td>
        <td>
          <Spark series={series} />
        </td>
      </tr>
    );
  },
  (a, b) =>
    a.row === b.row &&
    Object.is(a.m, b.m) &&
    Object.is(a.l, b.l) &&
    a.factor === b.factor &&
    a.active === b.active &&
    a.onSelect === b.onSelect &&
    sameSeries(a.series, b.series),
);

/** The rows out of view, as one empty row of their height: the scroll box keeps its length. */
function Gap({ height }: { height: number }) {
  return (
    <tr className="stats-gap">
      <td colSpan={5} style={{ height }} />
    </tr>
  );
}

/** A row's height before one has been measured: the sparkline canvas's 28 px. */
const ROW_H_GUESS = 28;
/** The scroll box's height before it has scrolled (styles.css: .stats-scroll max-height). */
const VIEW_H_GUESS = 330;

export function StatsView() {
  const { pane } = usePane();
  const frame = useApp((s) => s.playback[pane].textFrame);
  const selected = useApp((s) => s.selection[pane].row);
  const patchSelection = useApp((s) => s.patchSelection);
  const onSelect = useCallback((row: number) => patchSelection(pane, { row }), [patchSelection, pane]);
  // Where the rows' box is scrolled, read in its scroll event (layout is clean then): only the rows in view are in the DOM.
  const [view, setView] = useState({ top: 0, height: VIEW_H_GUESS, rowH: ROW_H_GUESS });
  const onScroll = useCallback((e: UIEvent<HTMLDivElement>) => {
    const box = e.currentTarget;
    const rowH = (box.querySelector('tr[data-row]') as HTMLElement | null)?.offsetHeight || ROW_H_GUESS;
    setView({ top: box.scrollTop, height: box.clientHeight, rowH });
  }, []);
  if (!frame) return null;
  const { history } = frame;
  if (frame.event.kind === 'combine' || history.merged) return <CombineStats ev={frame.event} history={history} />;
  const [r0, r1] = history.rows;
  const activeRow = selected !== null && selected >= r0 && selected < r1 ? selected : r0;
  const last = history.entries[history.entries.length - 1];
  const base2 = history.entries.some((e) => e.base2);
  const { first, end } = rowWindow(r1 - r0, view.top, view.height, view.rowH);
  return (
    <section className="view stats" aria-label="Running statistics">
      <h3>{statsTitle(history)}</h3>
      <div className="stats-scroll" onScroll={onScroll}>
        <table className="stats-table" data-rows={r1 - r0} data-rendered={end - first}>
          <thead>
            <tr>
              <th>row</th>
              <th>m</th>
              <th>ℓ</th>
              <th>{base2 ? '2^(m_old−m_new)' : 'e^(m_old−m_new)'}</th>
              <th>m over K/V blocks</th>
            </tr>
          </thead>
          <tbody>
            {first > 0 && <Gap height={first * view.rowH} />}
            {Array.from({ length: end - first }, (_, i) => r0 + first + i).map((row) => (
              // Keyed by place in the tile, so the next tile's rows reuse these elements and their canvases.
              <StatsRow
                key={row - r0}
                row={row}
                m={frame.m[row]}
                l={frame.l[row]}
                factor={growth(last, row - r0)}
                active={row === activeRow}
                series={sparkSeries(history.entries, row - r0)}
                onSelect={onSelect}
              />
            ))}
            {end < r1 - r0 && <Gap height={(r1 - r0 - end) * view.rowH} />}
          </tbody>
        </table>
      </div>
    </section>
  );
}
