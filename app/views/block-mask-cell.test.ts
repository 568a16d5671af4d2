import { describe, expect, it } from 'vitest';
import { CANVAS_MAX_CELL, CANVAS_MIN_CELL, canvasCell } from './block-mask-cell.ts';

describe('canvasCell', () => {
  it('fits a 129 × 129 grid into a 408 px box: 3 px cells, 387 px wide', () => {
    const cell = canvasCell(408, 129, 129);
    expect(cell).toBe(3);
    expect(129 * cell).toBeLessThanOrEqual(408);
  });

  it('takes the larger side, so a tall grid fits its width and keeps square cells', () => {
    expect(canvasCell(800, 200, 50)).toBe(4);
    expect(canvasCell(1000, 100, 65)).toBe(10);
  });

  it('stops at the smallest cell below which the box scrolls, and at the largest', () => {
    expect(canvasCell(300, 400, 400)).toBe(CANVAS_MIN_CELL);
    expect(canvasCell(10_000, 65, 65)).toBe(CANVAS_MAX_CELL);
  });
});
