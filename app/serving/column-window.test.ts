import { describe, expect, it } from 'vitest';
import { columnWindow, MAX_SCROLL_PX, scrollForColumn } from './column-window.ts';

const COL = 84;
const VIEW = 1000;

describe('columnWindow', () => {
  it('lays out narrow tables one pixel per pixel', () => {
    const w = columnWindow(840, VIEW, COL, 1000, 3);
    expect(w.scale).toBe(1);
    expect(w.width).toBe(84_000);
    expect(w.first).toBe(7);
    expect(w.before).toBe(7 * COL);
    expect(w.before + (w.last - w.first) * COL + w.after).toBe(w.width);
  });

  it('keeps 10⁶ columns within the scrollable width and reaches the last column at the end', () => {
    const count = 1_000_000;
    const start = columnWindow(0, VIEW, COL, count, 3);
    expect(start.width).toBeLessThanOrEqual(MAX_SCROLL_PX);
    expect(start.first).toBe(0);
    const end = columnWindow(start.width - VIEW, VIEW, COL, count, 3);
    expect(end.last).toBe(count);
    expect(end.first).toBeLessThan(count - Math.floor(VIEW / COL));
    // The drawn columns sit inside the scrolled width, covering the viewport.
    expect(end.before).toBeLessThanOrEqual(start.width - VIEW);
    expect(end.before + (end.last - end.first) * COL).toBeGreaterThanOrEqual(start.width);
    expect(end.before + (end.last - end.first) * COL + end.after).toBeCloseTo(end.width, 6);
  });

  it('covers the viewport with drawn columns at every scroll position', () => {
    const count = 1_000_000;
    const { width } = columnWindow(0, VIEW, COL, count, 3);
    for (const left of [1, 12_345.5, width / 3, width / 2, width - VIEW - 1]) {
      const w = columnWindow(left, VIEW, COL, count, 3);
      expect(w.before).toBeLessThanOrEqual(left);
      expect(w.before + (w.last - w.first) * COL).toBeGreaterThanOrEqual(left + VIEW);
      expect(w.last - w.first).toBeLessThan(30);
    }
  });

  it('scrolls to a column far along so that the column is drawn', () => {
    const count = 1_000_000;
    const { scale } = columnWindow(0, VIEW, COL, count, 3);
    const j = 765_432;
    const w = columnWindow(scrollForColumn(j, COL, scale), VIEW, COL, count, 3);
    expect(j).toBeGreaterThanOrEqual(w.first);
    expect(j).toBeLessThan(w.last);
  });
});
