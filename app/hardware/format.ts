// Number formatting for the hardware views. One shared formatter: toLocaleString() builds a
// new Intl formatter on every call, which shows up when the views redraw on every step.

const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 12,345 */
export function grouped(n: number): string {
  return fmt.format(n);
}
