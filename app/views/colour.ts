// Colour scales for heatmaps: d3's colour-blind-safe schemes sampled once into a lookup
// table, so painting a 512×512 matrix is a table lookup per cell, not a colour parse.

import { interpolateRdBu, interpolateViridis, rgb } from 'd3';

export type Scheme = 'diverging' | 'sequential';

export interface ColourScale {
  scheme: Scheme;
  domain: [number, number];
  /** 256 RGBA entries. */
  lut: Uint8ClampedArray;
  interpolate: (t: number) => string;
}

const LUT_SIZE = 256;
const lutCache = new Map<Scheme, Uint8ClampedArray>();

/** Blue for negative, red for positive (RdBu reversed); viridis for values that are never negative. */
function interpolator(scheme: Scheme): (t: number) => string {
  return scheme === 'diverging' ? (t) => interpolateRdBu(1 - t) : interpolateViridis;
}

function lutFor(scheme: Scheme): Uint8ClampedArray {
  let lut = lutCache.get(scheme);
  if (!lut) {
    lut = new Uint8ClampedArray(LUT_SIZE * 4);
    const f = interpolator(scheme);
    for (let i = 0; i < LUT_SIZE; i++) {
      const c = rgb(f(i / (LUT_SIZE - 1)));
      lut.set([c.r, c.g, c.b, 255], i * 4);
    }
    lutCache.set(scheme, lut);
  }
  return lut;
}

/** Diverging scales are symmetric around 0 so white means zero. */
export function colourScale(scheme: Scheme, range: [number, number]): ColourScale {
  let domain: [number, number] = range;
  if (scheme === 'diverging') {
    const a = Math.max(Math.abs(range[0]), Math.abs(range[1]), 1e-12);
    domain = [-a, a];
  }
  return { scheme, domain, lut: lutFor(scheme), interpolate: interpolator(scheme) };
}

/** Colours of cells that hold no value yet, and of masked cells (two tones, drawn as a checker / stripe). */
export const NOT_COMPUTED: [number, number, number][] = [
  [38, 42, 50],
  [46, 51, 60],
];
export const MASKED: [number, number, number][] = [
  [92, 92, 92],
  [60, 60, 60],
];
