// The paged K/V cache: the block table (one row per sequence, one column per logical page,
// each cell the physical page it maps to) above the page pool it points into. Cells light
// up as the current step loads their page; pages this head has loaded so far are marked;
// for flash-decoding the cells are banded by the split that walks them (splits end on page
// boundaries). Pool pages no sequence owns are hatched: they are never read.

import { useEffect, useLayoutEffect, useMemo, useRef, useState, type RefObject } from 'react';
import type { ServingRun } from '../../engine/api.ts';
import { seqColour } from './serving-colours.ts';
import { columnWindow, scrollForColumn } from './column-window.ts';

interface Props {
  run: ServingRun;
  stepIndex: number;
  seq: number;
}

// Only the cells in view are in the DOM: a valid block table can have 10⁶ columns, a pool as many pages.
const ROW_H = 40;
const HEAD_H = 40;
const TABLE_MAX_H = 320;
/** Column widths: a phone's narrower ones fit four pages beside the sequence and token columns. */
const WIDE = { col: 84, lead: [76, 64], seqLabel: 'sequence', keysWord: 'keys ' };
const NARROW = { col: 64, lead: [44, 56], seqLabel: 'seq', keysWord: '' };
const NARROW_BELOW = 480;
const POOL_W = 64;
const POOL_H = 40;
const POOL_GAP = 4;
const POOL_MAX_H = 220;
const OVERSCAN = 3;

interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** The scroll position and size of a scrolling element, kept current. */
function useScrollBox(ref: RefObject<HTMLElement | null>): Box {
  const [box, setBox] = useState<Box>({ left: 0, top: 0, width: 1200, height: TABLE_MAX_H });
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const update = () =>
      setBox((b) =>
        b.left === el.scrollLeft && b.top === el.scrollTop && b.width === el.clientWidth && b.height === el.clientHeight
          ? b
          : { left: el.scrollLeft, top: el.scrollTop, width: el.clientWidth, height: el.clientHeight },
      );
    update();
    const ro = new ResizeObserver(update);
    ro.observe(el);
    el.addEventListener('scroll', update, { passive: true });
    return () => {
      ro.disconnect();
      el.removeEventListener('scroll', update);
    };
  }, [ref]);
  return box;
}

/** The items [first, last) of size `item` that a viewport of `size` at `pos` shows, with a margin. */
export function visibleRange(pos: number, size: number, item: number, count: number): [number, number] {
  const first = Math.max(0, Math.min(count, Math.floor(pos / item) - OVERSCAN));
  const last = Math.max(first, Math.min(count, Math.ceil((pos + size) / item) + OVERSCAN));
  return [first, last];
}

/** The logical page (column) of sequence `b` that maps to physical page `phys`, or -1. */
function columnOf(run: ServingRun, b: number, phys: number): number {
  const n = Math.min(run.maxPages!, Math.ceil(run.cacheSeqlens![b] / run.pageSize!));
  for (let j = 0; j < n; j++) if (run.blockTable![b * run.maxPages! + j] === phys) return j;
  return -1;
}

/** Which sequence and logical page owns each physical page. */
function ownerOf(run: ServingRun): Map<number, [number, number]> {
  const m = new Map<number, [number, number]>();
  const maxPages = run.maxPages!;
  run.cacheSeqlens!.forEach((len, b) => {
    const n = Math.min(maxPages, Math.ceil(len / run.pageSize!));
    for (let j = 0; j < n; j++) m.set(run.blockTable![b * maxPages + j], [b, j]);
  });
  return m;
}

export function PagedView({ run, stepIndex, seq }: Props) {
  const B = run.cacheSeqlens!.length;
  const ps = run.pageSize!;
  const maxPages = run.maxPages!;
  const numPages = run.numPages!;
  const table = run.blockTable!;
  const cur = run.steps[stepIndex];
  const owned = (b: number) => Math.ceil(run.cacheSeqlens![b] / ps);
  const lit = new Set(cur?.pages ?? []);
  const pagesPerSplit = run.blocksPerSplit ? Math.max(1, (run.blocksPerSplit * run.blocks.blockN) / ps) : undefined;
  // Pages loaded so far by the current step's sequence and head.
  const loaded = useMemo(() => {
    const out = new Set<number>();
    if (!cur) return out;
    for (let i = 0; i <= stepIndex; i++) {
      const s = run.steps[i];
      if (s.kind === 'load' && s.b === cur.b && s.h === cur.h && s.pages) for (const p of s.pages) out.add(p);
    }
    return out;
  }, [run, stepIndex, cur]);
  const owner = useMemo(() => ownerOf(run), [run]);

  const tableRef = useRef<HTMLElement>(null);
  const poolRef = useRef<HTMLElement>(null);
  const tb = useScrollBox(tableRef);
  const pb = useScrollBox(poolRef);
  const { col: colW, lead: leadW, seqLabel, keysWord } = tb.width < NARROW_BELOW ? NARROW : WIDE;
  const lead = leadW[0] + leadW[1];
  const cw = columnWindow(tb.left, Math.max(0, tb.width - lead), colW, maxPages, OVERSCAN);
  const [c0, c1] = [cw.first, cw.last];
  const [r0, r1] = visibleRange(tb.top, Math.max(0, tb.height - HEAD_H), ROW_H, B);
  const perRow = Math.max(1, Math.floor((pb.width + POOL_GAP) / (POOL_W + POOL_GAP)));
  const poolRows = Math.ceil(numPages / perRow);
  const [p0, p1] = visibleRange(pb.top, pb.height, POOL_H + POOL_GAP, poolRows);

  // The step's pages are brought into view when they are outside it.
  useEffect(() => {
    const el = tableRef.current;
    const first = cur?.pages?.[0];
    if (!el || !cur || first === undefined) return;
    const j = columnOf(run, cur.b, first);
    if (j < 0) return;
    const x = j * colW;
    const at = el.scrollLeft * cw.scale;
    if (x < at || x + colW > at + el.clientWidth - lead) el.scrollLeft = Math.max(0, scrollForColumn(j - 1, colW, cw.scale));
    const y = cur.b * ROW_H;
    if (y < el.scrollTop || y + ROW_H > el.scrollTop + el.clientHeight - HEAD_H) el.scrollTop = Math.max(0, y - ROW_H);
    const pool = poolRef.current;
    if (!pool) return;
    const py = Math.floor(first / perRow) * (POOL_H + POOL_GAP);
    if (py < pool.scrollTop || py + POOL_H > pool.scrollTop + pool.clientHeight) pool.scrollTop = Math.max(0, py - POOL_H);
  }, [run, cur, perRow, cw.scale, colW, lead]);

  const cols = Array.from({ length: c1 - c0 }, (_, i) => c0 + i);
  const gap = (px: number, key: string, header = false) => {
    const Cell = header ? 'th' : 'td';
    return px > 0 ? <Cell key={key} className="bt-gap" style={{ width: px, padding: 0, border: 0 }} /> : null;
  };
  const sticky = (left: number, w: number) => ({ position: 'sticky' as const, left, zIndex: 1, width: w, background: 'var(--panel)' });
  return (
    <section className="serving-view" aria-label="Block table and page pool" data-testid="paged-view">
      <h3>
        Block table — page size {ps}, {numPages} pages in the pool, {run.pagesTouched} read by the run
        {pagesPerSplit !== undefined && (
          <span data-testid="split-pages">
            ; flash-decoding: {pagesPerSplit} page{pagesPerSplit === 1 ? '' : 's'} per split
          </span>
        )}
        {(lead + maxPages * colW > tb.width || HEAD_H + B * ROW_H > tb.height) && (
          <span className="dim" data-testid="bt-extent">
            {' '}
            ({B} sequences × {maxPages} pages; scroll to see the rest)
          </span>
        )}
      </h3>
      <section ref={tableRef} className="block-table-scroll" style={{ overflow: 'auto', maxHeight: TABLE_MAX_H }} aria-label="Block table">
        <table
          className={tb.width < NARROW_BELOW ? 'block-table narrow' : 'block-table'}
          data-testid="block-table"
          style={{ tableLayout: 'fixed', width: lead + cw.width, borderCollapse: 'separate', borderSpacing: 0 }}
        >
          <thead>
            <tr style={{ height: HEAD_H, position: 'sticky', top: 0, zIndex: 2, background: 'var(--panel)' }}>
              <th scope="col" style={sticky(0, leadW[0])}>
                {seqLabel}
              </th>
              <th scope="col" style={sticky(leadW[0], leadW[1])}>
                tokens
              </th>
              {gap(cw.before, 'before', true)}
              {cols.map((j) => (
                <th key={j} scope="col" style={{ width: colW }}>
                  page {j}
                  <div className="dim" title={`keys ${j * ps}…${(j + 1) * ps - 1}`}>
                    {keysWord}
                    {j * ps}…{(j + 1) * ps - 1}
                  </div>
                </th>
              ))}
              {gap(cw.after, 'after', true)}
            </tr>
          </thead>
          <tbody>
            {r0 > 0 && <tr style={{ height: r0 * ROW_H }} />}
            {Array.from({ length: r1 - r0 }, (_, i) => {
              const b = r0 + i;
              return (
                <tr key={b} className={b === seq ? 'picked' : undefined} style={{ height: ROW_H }}>
                  <th scope="row" style={{ ...sticky(0, leadW[0]), borderLeft: `4px solid ${seqColour(b)}` }}>
                    {b}
                  </th>
                  <td style={sticky(leadW[0], leadW[1])}>{run.cacheSeqlens![b]}</td>
                  {gap(cw.before, 'before')}
                  {cols.map((j) => {
                    if (j >= owned(b)) {
                      return (
                        <td key={j} className="unused" title="entry past the sequence's pages: unused, never read">
                          ·
                        </td>
                      );
                    }
                    const phys = table[b * maxPages + j];
                    const isLit = cur?.b === b && lit.has(phys);
                    const wasLoaded = cur?.b === b && loaded.has(phys);
                    const split = pagesPerSplit ? Math.floor(j / pagesPerSplit) : undefined;
                    const fill = Math.min(ps, run.cacheSeqlens![b] - j * ps);
                    return (
                      <td
                        key={j}
                        data-testid={`bt-${b}-${j}`}
                        className={[
                          'page',
                          isLit ? 'lit' : '',
                          wasLoaded ? 'loaded' : '',
                          split !== undefined ? `split${split % 4}` : '',
                        ].join(' ')}
                        title={`sequence ${b}, logical page ${j} (keys ${j * ps}…${j * ps + fill - 1}) → physical page ${phys}${split !== undefined ? `, split ${split}` : ''}`}
                      >
                        <span className="phys">→ {phys}</span>
                        {split !== undefined && <span className="split-tag">split {split}</span>}
                        <span className="fill" style={{ width: `${(100 * fill) / ps}%`, background: seqColour(b) }} />
                      </td>
                    );
                  })}
                  {gap(cw.after, 'after')}
                </tr>
              );
            })}
            {r1 < B && <tr style={{ height: (B - r1) * ROW_H }} />}
          </tbody>
        </table>
      </section>
      <h3>Page pool (physical pages)</h3>
      <section ref={poolRef} style={{ overflowY: 'auto', maxHeight: POOL_MAX_H }} aria-label="Page pool">
        <div style={{ height: poolRows * (POOL_H + POOL_GAP), position: 'relative' }}>
          <div className="pool" data-testid="pool" style={{ position: 'absolute', top: p0 * (POOL_H + POOL_GAP), gap: POOL_GAP }}>
            {Array.from({ length: Math.min(numPages, p1 * perRow) - p0 * perRow }, (_, i) => {
              const p = p0 * perRow + i;
              const o = owner.get(p);
              const isLit = lit.has(p) && o?.[0] === cur?.b;
              return (
                <div
                  key={p}
                  data-testid={`pool-${p}`}
                  className={['pool-page', o ? '' : 'free', isLit ? 'lit' : ''].join(' ')}
                  style={{
                    width: POOL_W,
                    height: POOL_H,
                    minWidth: 0,
                    boxSizing: 'border-box',
                    ...(o ? { borderColor: seqColour(o[0]) } : {}),
                  }}
                  title={
                    o
                      ? `physical page ${p}: sequence ${o[0]}, logical page ${o[1]}`
                      : `physical page ${p}: owned by no sequence — never read`
                  }
                >
                  <b>{p}</b>
                  <span>{o ? `s${o[0]}·p${o[1]}` : 'free'}</span>
                </div>
              );
            })}
          </div>
        </div>
      </section>
      <p className="serving-legend dim">
        Yellow: pages the current step loads. Outlined: pages this sequence and head have loaded so far. Hatched pool pages belong to no
        sequence and are never read; nor is any slot past a sequence's last token in its final page (the bar shows how full each page is).
      </p>
    </section>
  );
}
