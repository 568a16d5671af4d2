// The warp-role timeline's cycle axis: as many labelled ticks as the plot has room for.

/** Pixels a cycle label needs (four or five digits at 10 px, and a gap). */
export const TICK_LABEL_PX = 64;

/** Ticks to ask d3 for on a plot `plotPx` wide: about one label per TICK_LABEL_PX, between 2 and 8. */
export function axisTickCount(plotPx: number): number {
  return Math.max(2, Math.min(8, Math.floor(plotPx / TICK_LABEL_PX)));
}

/** A tick's label: cycles, in thousands (k) from 10 000. */
export function tickLabel(tick: number): string {
  return tick >= 1e4 ? `${tick / 1e3}k` : String(tick);
}
