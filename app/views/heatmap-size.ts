// A heatmap's size on screen and the cells its image holds: square cells from the long side,
// a readable short side for thin matrices, and every k-th cell per axis below a pixel per cell.

/** The least pixels a side with n cells gets: up to 4 px per cell, 64 px in all (24 px at the least). */
export const shortSidePx = (n: number) => Math.max(24, Math.min(64, 4 * n));

export interface HeatmapSize {
  /** CSS pixels. */
  width: number;
  height: number;
  /** The image holds every kr-th row and kc-th column (1: every one). */
  kr: number;
  kc: number;
}

export function heatmapSize(rows: number, cols: number, maxPx: number): HeatmapSize {
  const cell = Math.max(0.25, Math.min(24, maxPx / Math.max(rows, cols)));
  const width = Math.max(shortSidePx(cols), Math.round(cols * cell));
  const height = Math.max(shortSidePx(rows), Math.round(rows * cell));
  return { width, height, kr: height < rows ? Math.ceil(rows / height) : 1, kc: width < cols ? Math.ceil(cols / width) : 1 };
}
