// The block mask of the loaded problem at its tile size: which (Q tile, K/V tile) pairs the
// mask empties (skipped), leaves partial (masked inside) or full (no mask work), with the
// density and what skipping saves. Standard attention's one row block spans every key, so
// there the view gives the density per score and the block mask at FA2's tiles beside it.

import { type ReactNode, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { counterFigure } from '../../content/counter-figures.ts';
import {
  BLOCK_EMPTY,
  BLOCK_FULL,
  blockMask,
  elementDensity,
  BUILT_IN_ALGORITHMS,
  findDescriptor,
  passBlocks,
  tileVisibleCount,
  type AttentionProblem,
  type BlockMask,
  type ElementDensity,
} from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { canvasCell } from './block-mask-cell.ts';
import { useApp } from '../store/store.ts';

const COLOURS = ['var(--panel2)', 'var(--warn)', 'var(--accent)'] as const;
const NAMES = ['empty (skipped)', 'partial (masked inside)', 'full (no mask work)'] as const;

const si = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(2)} G` : n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : `${n} `;

/** Above this many tile pairs the grid is one canvas: an SVG element per pair (59k at N 2748 with 16×16 tiles) slows every layout and paint of the page. */
export const SVG_GRID_MAX_CELLS = 4096;

/** The grid's width budget in CSS pixels (a phone's column holds it), the largest cell, and the margins its tile numbers take. */
const GRID_PX = 300;
const MAX_CELL = 40;
const ROW_NUMBERS_PX = 24;
const COLUMN_NUMBERS_PX = 18;

/** Every how many tiles a number fits: numbers of 12 px type need about 18 px apart across, 14 px down. */
const numberEvery = (cell: number, px: number) => Math.max(1, Math.ceil(px / cell));

/** The inner width of the element behind `ref`, followed as its box resizes (undefined before the first layout). */
function useBoxWidth(ref: React.RefObject<HTMLElement | null>): number | undefined {
  const [width, setWidth] = useState<number | undefined>(undefined);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(el.clientWidth);
    measure();
    const watch = new ResizeObserver(measure);
    watch.observe(el);
    return () => watch.disconnect();
  }, [ref]);
  return width;
}

/** A tile pair of the grid: Q tile (row) and K/V tile (column). */
interface Tile {
  q: number;
  kv: number;
}

/** The line under the grid for the chosen tile: what hovering says, for a tap or the keyboard. */
function tileLine(p: AttentionProblem, bm: BlockMask, t: Tile, b: number, h: number): string {
  const s = bm.state[((b * bm.heads + h) * bm.qBlocks + t.q) * bm.kvBlocks + t.kv];
  const { visible, total } = tileVisibleCount(p, bm.blockM, bm.blockN, { ...t, b, h });
  return `Q tile ${t.q} × K/V tile ${t.kv}: ${NAMES[s]}, ${visible} of ${total} scores kept.`;
}

/** Arrow keys move the chosen tile; Enter or Space chooses the first one when none is. */
function onGridKey(e: React.KeyboardEvent, bm: BlockMask, sel: Tile | undefined, choose: (t: Tile) => void) {
  const t = sel ?? { q: 0, kv: 0 };
  const move: Record<string, Tile> = {
    ArrowUp: { q: t.q - 1, kv: t.kv },
    ArrowDown: { q: t.q + 1, kv: t.kv },
    ArrowLeft: { q: t.q, kv: t.kv - 1 },
    ArrowRight: { q: t.q, kv: t.kv + 1 },
    Enter: t,
    ' ': t,
  };
  const next = move[e.key];
  if (!next) return;
  // The arrows move within the grid, not the debugger's step.
  e.preventDefault();
  e.stopPropagation();
  choose({ q: Math.min(bm.qBlocks - 1, Math.max(0, next.q)), kv: Math.min(bm.kvBlocks - 1, Math.max(0, next.kv)) });
}

function Grid({ bm, b, h, sel, choose }: { bm: BlockMask; b: number; h: number; sel?: Tile; choose(t: Tile): void }) {
  const base = (b * bm.heads + h) * bm.qBlocks * bm.kvBlocks;
  const label = `Block mask: ${bm.qBlocks} Q tiles by ${bm.kvBlocks} K/V tiles; tap a tile, or press Enter and the arrow keys, to name it`;
  if (bm.qBlocks * bm.kvBlocks > SVG_GRID_MAX_CELLS) {
    return <CanvasGrid bm={bm} base={base} label={label} sel={sel} choose={choose} />;
  }
  const cell = Math.max(4, Math.min(MAX_CELL, Math.floor((GRID_PX - ROW_NUMBERS_PX) / Math.max(bm.qBlocks, bm.kvBlocks))));
  const x0 = ROW_NUMBERS_PX;
  const y0 = COLUMN_NUMBERS_PX;
  const cells = [];
  for (let i = 0; i < bm.qBlocks; i++)
    for (let j = 0; j < bm.kvBlocks; j++) {
      const s = bm.state[base + i * bm.kvBlocks + j];
      cells.push(
        // biome-ignore lint/a11y/noStaticElementInteractions: a tap names the tile below the grid; the keyboard's way is the grid's Enter and arrow keys
        <rect
          key={`${i}-${j}`}
          x={x0 + j * cell}
          y={y0 + i * cell}
          width={cell - 1}
          height={cell - 1}
          fill={COLOURS[s]}
          stroke="var(--dim)"
          strokeWidth={s === BLOCK_EMPTY ? 0.5 : 0}
          data-state={s}
          data-tile={`${i}-${j}`}
          onClick={() => choose({ q: i, kv: j })}
        >
          <title>{`Q tile ${i}, K/V tile ${j}: ${NAMES[s]}`}</title>
        </rect>,
      );
    }
  const across = numberEvery(cell, 18);
  const down = numberEvery(cell, 14);
  return (
    <svg
      width={x0 + bm.kvBlocks * cell}
      height={y0 + bm.qBlocks * cell}
      viewBox={`0 0 ${x0 + bm.kvBlocks * cell} ${y0 + bm.qBlocks * cell}`}
      role="img"
      aria-label={label}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: the grid is one tab stop whose Enter and arrow keys name a tile, as a tap does
      tabIndex={0}
      className="bm-grid"
      onKeyDown={(e) => onGridKey(e, bm, sel, choose)}
    >
      <g className="bm-numbers">
        {Array.from({ length: bm.kvBlocks }, (_, j) =>
          j % across ? null : (
            <text key={`c${j}`} x={x0 + j * cell + (cell - 1) / 2} y={y0 - 5} textAnchor="middle">
              {j}
            </text>
          ),
        )}
        {Array.from({ length: bm.qBlocks }, (_, i) =>
          i % down ? null : (
            <text key={`r${i}`} x={x0 - 5} y={y0 + i * cell + (cell - 1) / 2} textAnchor="end" dominantBaseline="central">
              {i}
            </text>
          ),
        )}
      </g>
      {cells}
      {sel && (
        <rect
          className="bm-chosen"
          x={x0 + sel.kv * cell - 1}
          y={y0 + sel.q * cell - 1}
          width={cell + 1}
          height={cell + 1}
          fill="none"
          stroke="var(--text)"
          strokeWidth={2}
          pointerEvents="none"
        />
      )}
    </svg>
  );
}

function CanvasGrid({ bm, base, label, sel, choose }: { bm: BlockMask; base: number; label: string; sel?: Tile; choose(t: Tile): void }) {
  const ref = useRef<HTMLCanvasElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const cell = canvasCell(useBoxWidth(box) ?? GRID_PX, bm.qBlocks, bm.kvBlocks);
  const [tip, setTip] = useState<string | undefined>(undefined);
  const w = bm.kvBlocks * cell;
  const hgt = bm.qBlocks * cell;
  useLayoutEffect(() => {
    const c = ref.current;
    const g = c?.getContext('2d');
    if (!c || !g) return;
    c.width = w;
    c.height = hgt;
    const style = getComputedStyle(c);
    const fills = COLOURS.map((v) => style.getPropertyValue(v.slice(4, -1)).trim() || '#888');
    const gap = cell >= 3 ? 1 : 0;
    for (let i = 0; i < bm.qBlocks; i++)
      for (let j = 0; j < bm.kvBlocks; j++) {
        g.fillStyle = fills[bm.state[base + i * bm.kvBlocks + j]];
        g.fillRect(j * cell, i * cell, cell - gap, cell - gap);
      }
  }, [bm, base, cell, w, hgt]);
  const tileAt = (e: React.MouseEvent<HTMLCanvasElement>): Tile => {
    const r = e.currentTarget.getBoundingClientRect();
    return {
      q: Math.min(bm.qBlocks - 1, Math.max(0, Math.floor((e.clientY - r.top) / cell))),
      kv: Math.min(bm.kvBlocks - 1, Math.max(0, Math.floor((e.clientX - r.left) / cell))),
    };
  };
  const onMove = (e: React.MouseEvent<HTMLCanvasElement>) => {
    const t = tileAt(e);
    setTip(`Q tile ${t.q}, K/V tile ${t.kv}: ${NAMES[bm.state[base + t.q * bm.kvBlocks + t.kv]]}`);
  };
  return (
    <div ref={box} className="bm-canvas-box" data-testid="bm-canvas-box">
      <canvas
        ref={ref}
        role="img"
        aria-label={label}
        title={tip}
        style={{ width: w, height: hgt }}
        data-cells={bm.qBlocks * bm.kvBlocks}
        data-cell={cell}
        data-chosen={sel ? `${sel.q}-${sel.kv}` : undefined}
        tabIndex={0}
        onMouseMove={onMove}
        onClick={(e) => choose(tileAt(e))}
        onKeyDown={(e) => onGridKey(e, bm, sel, choose)}
      />
    </div>
  );
}

export function BlockMaskView() {
  const { pane } = usePane();
  const applied = useApp((s) => s.problem[pane].applied);
  const summary = useApp((s) => s.playback[pane].summary);
  const [head, setHead] = useState(0);
  const [chosen, setChosen] = useState<Tile | undefined>(undefined);
  const result = useMemo((): { bm?: BlockMask; scores?: ElementDensity; error?: string } | undefined => {
    if (!applied || !summary) return undefined;
    try {
      // Scores kept whole in HBM (standard attention): no tiles of its own, so FA2's tiling is drawn beside the per-score density.
      if (findDescriptor(applied.algorithm)?.rowStats !== 'materialized')
        return { bm: blockMask(applied.problem, summary.blocks.blockM, summary.blocks.blockN) };
      const fa2 = passBlocks({ algorithm: BUILT_IN_ALGORITHMS.fa2.id, blocks: applied.blocks }, applied.problem);
      return { bm: blockMask(applied.problem, fa2.blockM, fa2.blockN), scores: elementDensity(applied.problem) };
    } catch (e) {
      return { error: (e as Error).message };
    }
  }, [applied, summary]);
  if (!result) return <Frame>{<p className="dim">Load a problem to see its block mask.</p>}</Frame>;
  if (!result.bm) return <Frame>{<p className="dim">{result.error}</p>}</Frame>;
  const { bm, scores } = result;
  const pairs = bm.batch * bm.heads;
  const hSel = Math.min(head, pairs - 1);
  const total = bm.counts.empty + bm.counts.partial + bm.counts.full;
  // A tile chosen on a larger problem may lie outside this one's grid.
  const sel = chosen && chosen.q < bm.qBlocks && chosen.kv < bm.kvBlocks ? chosen : undefined;
  const bSel = Math.floor(hSel / bm.heads);
  const density = <strong>density {(bm.density * 100).toFixed(1)}%</strong>;
  return (
    <Frame>
      {scores && (
        <p data-testid="element-density">
          Standard attention computes every score and masks it afterwards: no tile to skip.{' '}
          <strong>Density per score {(scores.density * 100).toFixed(1)}%</strong> — {counterFigure(scores.visible)} of{' '}
          {counterFigure(scores.total)} (query, key) pairs visible.
        </p>
      )}
      <p>
        {scores ? "At FlashAttention-2's tiles" : 'Tiles'} {bm.blockM} × {bm.blockN}: {density} — {bm.counts.empty} of {total} tile pairs
        empty, {bm.counts.partial} partial, {bm.counts.full} full.
      </p>
      <p>
        Skipping the empty tiles {scores ? 'would save' : 'saves'} {si(bm.skippedFlops)}FLOP and {si(bm.skippedBytes)}B of K/V reads.
      </p>
      {pairs > 1 && (
        <label className="field">
          <span>batch, head</span>
          <select aria-label="Block mask head" value={hSel} onChange={(e) => setHead(Number(e.target.value))}>
            {Array.from({ length: pairs }, (_, k) => (
              <option key={k} value={k}>
                b {Math.floor(k / bm.heads)}, h {k % bm.heads}
              </option>
            ))}
          </select>
        </label>
      )}
      <p className="dim bm-axes">Rows: Q tiles; columns: K/V tiles.</p>
      <Grid bm={bm} b={bSel} h={hSel % bm.heads} sel={sel} choose={setChosen} />
      <p className="bm-tile-line" data-testid="bm-tile-line" aria-live="polite">
        {sel && applied
          ? tileLine(applied.problem, bm, sel, bSel, hSel % bm.heads)
          : 'Tap or click a tile to see how many of its scores the mask keeps.'}
      </p>
      <p className="dim">
        {[BLOCK_EMPTY, 1, BLOCK_FULL].map((s) => (
          <span key={s} className="bm-legend-item">
            <span className="legend-swatch" style={{ background: COLOURS[s] }} />
            {NAMES[s]}
          </span>
        ))}
      </p>
    </Frame>
  );
}

function Frame({ children }: { children: ReactNode }) {
  return (
    <section className="view block-mask" aria-label="Block mask">
      <h3>Block mask</h3>
      {children}
    </section>
  );
}
