// Which block-table columns a horizontal scroll position shows. Past MAX_SCROLL_PX the table's
// scroll width is capped and the position scaled (Chromium lays out nothing wider than about
// 33.5 million pixels, so 10⁶ columns of 84 px could not be scrolled to their end).

export const MAX_SCROLL_PX = 8_000_000;

export interface ColumnWindow {
  /** Columns [first, last) are drawn. */
  first: number;
  last: number;
  /** Pixels of empty space before the first drawn column and after the last. */
  before: number;
  after: number;
  /** The scrolled width of all columns. */
  width: number;
  /** Column positions per scroll pixel: 1 until the columns would be wider than MAX_SCROLL_PX. */
  scale: number;
}

/** The columns a viewport `view` px wide at scroll position `left` shows of `count` columns `col` px wide, with `overscan` more each side. */
export function columnWindow(left: number, view: number, col: number, count: number, overscan: number): ColumnWindow {
  const full = count * col;
  const width = Math.min(full, MAX_SCROLL_PX);
  const span = Math.max(0, width - view);
  const scale = full > width && span > 0 ? (full - view) / span : 1;
  const pos = Math.max(0, Math.min(left, span)) * scale;
  const first = Math.max(0, Math.min(count, Math.floor(pos / col) - overscan));
  const last = Math.max(first, Math.min(count, Math.ceil((pos + view) / col) + overscan));
  const before = Math.max(0, Math.min(width - (last - first) * col, left - (pos - first * col)));
  const after = Math.max(0, width - before - (last - first) * col);
  return { first, last, before, after, width, scale };
}

/** The scroll position that puts column `j` at the viewport's left edge. */
export function scrollForColumn(j: number, col: number, scale: number): number {
  return (j * col) / scale;
}
