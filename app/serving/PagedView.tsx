// The paged K/V cache: the block table (one row per sequence, one column per logical page,
// each cell the physical page it maps to) above the page pool it points into. Cells light
// up as the current step loads their page; pages this head has loaded so far are marked;
// for flash-decoding the cells are banded by the split that walks them (splits end on page
// boundaries). Pool pages no sequence owns are hatched: they are never read.

import { useMemo } from 'react';
import type { ServingRun } from '../../engine/api.ts';
import { seqColour } from './serving-colours.ts';

interface Props {
  run: ServingRun;
  stepIndex: number;
  seq: number;
}

export function PagedView({ run, stepIndex, seq }: Props) {
  const B = run.cacheSeqlens!.length;
  const ps = run.pageSize!;
  const maxPages = run.maxPages!;
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
  const owner = useMemo(() => {
    const m = new Map<number, [number, number]>();
    for (let b = 0; b < B; b++) for (let j = 0; j < owned(b); j++) m.set(table[b * maxPages + j], [b, j]);
    return m;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [run]);
  return (
    <section className="serving-view" aria-label="Block table and page pool" data-testid="paged-view">
      <h3>
        Block table — page size {ps}, {run.numPages} pages in the pool, {run.pagesTouched} read by the run
        {pagesPerSplit !== undefined && (
          <span data-testid="split-pages">
            ; flash-decoding: {pagesPerSplit} page{pagesPerSplit === 1 ? '' : 's'} per split
          </span>
        )}
      </h3>
      <table className="block-table" data-testid="block-table">
        <thead>
          <tr>
            <th scope="col">sequence</th>
            <th scope="col">tokens</th>
            {Array.from({ length: maxPages }, (_, j) => (
              <th key={j} scope="col">
                page {j}
                <div className="dim">
                  keys {j * ps}…{(j + 1) * ps - 1}
                </div>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {Array.from({ length: B }, (_, b) => (
            <tr key={b} className={b === seq ? 'picked' : undefined}>
              <th scope="row" style={{ borderLeft: `4px solid ${seqColour(b)}` }}>
                {b}
              </th>
              <td>{run.cacheSeqlens![b]}</td>
              {Array.from({ length: maxPages }, (_, j) => {
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
                    className={['page', isLit ? 'lit' : '', wasLoaded ? 'loaded' : '', split !== undefined ? `split${split % 4}` : ''].join(
                      ' ',
                    )}
                    title={`sequence ${b}, logical page ${j} (keys ${j * ps}…${j * ps + fill - 1}) → physical page ${phys}${split !== undefined ? `, split ${split}` : ''}`}
                  >
                    <span className="phys">→ {phys}</span>
                    {split !== undefined && <span className="split-tag">split {split}</span>}
                    <span className="fill" style={{ width: `${(100 * fill) / ps}%`, background: seqColour(b) }} />
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Page pool (physical pages)</h3>
      <div className="pool" data-testid="pool">
        {Array.from({ length: run.numPages! }, (_, p) => {
          const o = owner.get(p);
          const isLit = lit.has(p) && o?.[0] === cur?.b;
          return (
            <div
              key={p}
              data-testid={`pool-${p}`}
              className={['pool-page', o ? '' : 'free', isLit ? 'lit' : ''].join(' ')}
              style={o ? { borderColor: seqColour(o[0]) } : undefined}
              title={
                o ? `physical page ${p}: sequence ${o[0]}, logical page ${o[1]}` : `physical page ${p}: owned by no sequence — never read`
              }
            >
              <b>{p}</b>
              <span>{o ? `s${o[0]}·p${o[1]}` : 'free'}</span>
            </div>
          );
        })}
      </div>
      <p className="serving-legend dim">
        Yellow: pages the current step loads. Outlined: pages this sequence and head have loaded so far. Hatched pool pages belong to no
        sequence and are never read; nor is any slot past a sequence's last token in its final page (the bar shows how full each page is).
      </p>
    </section>
  );
}
