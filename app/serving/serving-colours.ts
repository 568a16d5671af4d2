// Colours of the serving views: one per sequence (Okabe–Ito, colour-blind safe, repeating
// after eight) and the blue–white–red scale for tensor values.

const SEQ = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#999999'];

export const seqColour = (b: number): string => SEQ[b % SEQ.length];

/** Diverging blue–white–red for a value, saturating at ±3; grey for NaN. */
export function valueColour(v: number): string {
  if (!Number.isFinite(v)) return '#777';
  const t = Math.max(-1, Math.min(1, v / 3));
  const a = Math.round(255 * (1 - Math.abs(t)));
  return t >= 0 ? `rgb(255,${a},${a})` : `rgb(${a},${a},255)`;
}
