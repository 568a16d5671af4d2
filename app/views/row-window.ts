// Which rows of a long scrolling table to put in the DOM: the ones in view plus a margin each
// side, so a 128-row tile costs the page as many rows as it shows, not 128.

/** Rows kept beyond each edge of the view: small tiles (up to about 24 rows) render whole. */
export const ROW_OVERSCAN = 8;

export interface RowWindow {
  /** First row rendered (index into the table's rows). */
  first: number;
  /** One past the last row rendered. */
  end: number;
}

/** The rows of `count` equal rows of height `rowHeight` that a view `viewHeight` tall scrolled to `scrollTop` shows, widened by `overscan`. */
export function rowWindow(count: number, scrollTop: number, viewHeight: number, rowHeight: number, overscan = ROW_OVERSCAN): RowWindow {
  if (count <= 0) return { first: 0, end: 0 };
  const h = rowHeight > 0 ? rowHeight : 1;
  const top = Math.max(0, scrollTop);
  const first = Math.min(count - 1, Math.max(0, Math.floor(top / h) - overscan));
  const end = Math.min(count, Math.max(first + 1, Math.ceil((top + Math.max(0, viewHeight)) / h) + overscan));
  return { first, end };
}
