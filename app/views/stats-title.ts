// The statistics view's titles: which rows, and which K/V blocks the running m and ℓ cover.
// In a flash-decoding split the statistics restart, so the title names the split and its blocks;
// from the combine on the rows hold the merged LSE, and the title says how many splits it merged.

import type { Range, RowHistory, TraceEvent } from '../../engine/api.ts';

/** "row 0" for a one-row tile, "rows 0–63" otherwise (a half-open range). */
export function rowsLabel([r0, r1]: Range): string {
  return r1 - r0 === 1 ? `row ${r0}` : `rows ${r0}–${r1 - 1}`;
}

/** The K/V blocks the entries cover: "3 K/V blocks so far", or within a split "K/V blocks 2–3 so far". */
function blocksLabel(h: RowHistory): string {
  const n = h.entries.length;
  if (h.split === undefined) return `${n} K/V block${n === 1 ? '' : 's'} so far`;
  if (n === 0) return 'no K/V block yet';
  const a = h.entries[0].kvBlock;
  const b = h.entries[n - 1].kvBlock;
  return a === b ? `K/V block ${a} so far` : `K/V blocks ${a}–${b} so far`;
}

export function statsTitle(h: RowHistory): string {
  const where = `Q tile ${h.qBlock} (${rowsLabel(h.rows)})`;
  return h.split === undefined
    ? `Running max m and sum ℓ — ${where}, ${blocksLabel(h)}`
    : `Running max m and sum ℓ — split ${h.split}, ${where}: ${blocksLabel(h)}`;
}

/** The combine step's title, and the title of every step after it, which shows the same merged rows. */
export function mergedTitle(ev: TraceEvent, qBlock: number, rows: Range, splits: number): string {
  const where = `Q tile ${qBlock} (${rowsLabel(rows)})`;
  if (ev.kind === 'combine') return `Combine — ${where}: ${splits} splits merged by their LSE`;
  const step = ev.kind === 'write' ? `Write ${ev.tensors.join(' and ')}` : ev.kind;
  return `${step} — ${where}: the ${splits} splits merged`;
}
