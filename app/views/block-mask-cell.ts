// The cell size of the block mask's canvas grid: square cells that fit the box's width.

/** The cell bounds in CSS pixels: below 3 px a tile loses its gap and is hard to tap, so the box scrolls instead. */
export const CANVAS_MIN_CELL = 3;
export const CANVAS_MAX_CELL = 24;

/** The largest square cell that fits `boxWidth` for a grid of qBlocks rows by kvBlocks columns, within the bounds above. */
export function canvasCell(boxWidth: number, qBlocks: number, kvBlocks: number): number {
  return Math.max(CANVAS_MIN_CELL, Math.min(CANVAS_MAX_CELL, Math.floor(boxWidth / Math.max(qBlocks, kvBlocks))));
}
