// Which legend ticks to label: pure, for the tests.

/** Approximate width of one tick-label character at the legend's 10 px font. */
export const CHAR_PX = 6;

/**
 * Ticks whose labels do not overlap: on a square-root scale small values crowd the left end
 * (0, 0.001, 0.002, … within a few pixels), so a tick is kept only when its label clears the
 * one kept before it.
 */
export function spacedTicks(values: number[], at: (v: number) => number): { t: number; x: number; label: string }[] {
  const out: { t: number; x: number; label: string }[] = [];
  for (const t of values) {
    const label = String(t);
    const x = at(t);
    const prev = out[out.length - 1];
    if (prev && x - prev.x < ((prev.label.length + label.length) / 2) * CHAR_PX + 4) continue;
    out.push({ t, x, label });
  }
  return out;
}
