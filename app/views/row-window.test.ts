import { describe, expect, it } from 'vitest';
import { rowWindow } from './row-window.ts';

describe('rows of a scrolling table put in the DOM', () => {
  it('a 128-row tile in a 330 px view of 30 px rows: the 11 rows in view and 8 each side', () => {
    expect(rowWindow(128, 0, 330, 30)).toEqual({ first: 0, end: 19 });
    // Scrolled to row 50: rows 50–60 are in view.
    expect(rowWindow(128, 1500, 330, 30)).toEqual({ first: 42, end: 69 });
    // At the bottom the window ends at the last row.
    expect(rowWindow(128, 128 * 30 - 330, 330, 30)).toEqual({ first: 109, end: 128 });
  });
  it('a tile no taller than the view and its margin renders whole', () => {
    expect(rowWindow(16, 0, 330, 30)).toEqual({ first: 0, end: 16 });
  });
  it('a scroll position past the end (a tile that shrank) still shows its last rows', () => {
    const w = rowWindow(16, 3000, 330, 30);
    expect(w.end).toBe(16);
    expect(w.first).toBeLessThan(16);
  });
  it('no rows, or a view not yet measured, give an empty or one-row window, never a negative one', () => {
    expect(rowWindow(0, 0, 330, 30)).toEqual({ first: 0, end: 0 });
    expect(rowWindow(40, 0, 0, 0, 0)).toEqual({ first: 0, end: 1 });
  });
});
