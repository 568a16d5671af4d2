// How the precision data of a tile reads in tooltips and the Precision view's tile list.

import type { TilePrecision } from '../../engine/api.ts';

export const num = (v: number | undefined, digits = 3): string =>
  v === undefined || Number.isNaN(v)
    ? '—'
    : v === 0
      ? '0'
      : Math.abs(v) >= 1e-3 && Math.abs(v) < 1e4
        ? Number(v.toPrecision(digits)).toString()
        : v.toExponential(digits - 1);

/** The tile's quantization scales and P-cast factor, as tooltip lines (none for a run without them). */
export function scaleLines(t: TilePrecision | undefined, withFlushed = true): string[] {
  if (!t) return [];
  const lines: string[] = [];
  const qkv = [
    ['Q', t.qScale, t.qSaturated],
    ['K', t.kScale, t.kSaturated],
    ['V', t.vScale, t.vSaturated],
  ] as const;
  // One line per tensor keeps a tooltip narrow enough to stay inside its view; four digits
  // let a scale times the format's largest value come out right to three.
  for (const [n, s, sat] of qkv) if (s !== undefined) lines.push(`${n} scale ${num(s, 4)}${sat ? ` (${sat} saturated)` : ''}`);
  if (t.pScale !== undefined) lines.push(withFlushed ? `pScale ${t.pScale}, flushed ${t.flushed}` : `pScale ${t.pScale}`);
  return lines;
}

/** Tiles by "qBlock,kvBlock". */
export function tileIndex(tiles: readonly TilePrecision[]): Map<string, TilePrecision> {
  return new Map(tiles.map((t) => [`${t.qBlock},${t.kvBlock}`, t]));
}
