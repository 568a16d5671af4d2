// The warp-role timeline's cycle axis: as many labelled ticks as the plot has room for, in
// a type size a phone can read.

/** Pixels a cycle label needs at 10 px (four or five digits, and a gap). */
export const TICK_LABEL_PX = 64;

/** Below this chart width (a phone's column) the labels grow: the whole chart is small there and 10 px reads as a smudge. */
export const NARROW_CHART_PX = 480;

/** The axis labels' and lane names' type size on a chart `chartPx` wide. */
export function timelineFontPx(chartPx: number): { axis: number; lane: number } {
  return chartPx < NARROW_CHART_PX ? { axis: 12, lane: 12 } : { axis: 10, lane: 11 };
}

/** Ticks to ask d3 for on a plot `plotPx` wide with labels `fontPx` tall: about one label per label width, between 2 and 8. */
export function axisTickCount(plotPx: number, fontPx = 10): number {
  return Math.max(2, Math.min(8, Math.floor(plotPx / ((TICK_LABEL_PX * fontPx) / 10))));
}

/** A tick's label: cycles, in thousands (k) from 10 000. */
export function tickLabel(tick: number): string {
  return tick >= 1e4 ? `${tick / 1e3}k` : String(tick);
}

/**
 * Where each tick's label starts: right of its tick, pulled left where it would pass `rightPx`
 * (the last label was cut at the plot's edge), and null where that would run into the label before.
 */
export function tickLabelXs(ticks: { px: number; textPx: number }[], rightPx: number): (number | null)[] {
  let end = Number.NEGATIVE_INFINITY;
  return ticks.map(({ px, textPx }) => {
    const x = Math.min(px + 2, rightPx - textPx);
    if (x < end + 4) return null;
    end = x + textPx;
    return x;
  });
}
