// Colour scales for heatmaps: d3's colour-blind-safe schemes sampled once into a lookup
// table, so painting a 512×512 matrix is a table lookup per cell, not a colour parse.

import { interpolateRdBu, interpolateViridis, rgb } from 'd3';

export type Scheme = 'diverging' | 'sequential';

export interface ColourScale {
  scheme: Scheme;
  domain: [number, number];
  /** The values span past the domain: cells beyond it are painted CLIPPED, not the end colour. */
  clips: boolean;
  /** Transfer exponent: the colour position is ((v − lo) / (hi − lo))^gamma; 1 is linear, 0.5 a square-root scale. */
  gamma: number;
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

export interface ScaleOptions {
  /** The values themselves: the domain then covers their bulk (robustExtent) and marks the rest as clipped. */
  values?: ArrayLike<number>;
  gamma?: number;
}

/**
 * Diverging scales are symmetric around 0 so white means zero. With `values`, the domain is
 * the robust extent of |x| instead of the whole range, so one planted outlier row does not
 * wash every other value out to white.
 */
export function colourScale(scheme: Scheme, range: [number, number], opts: ScaleOptions = {}): ColourScale {
  let domain: [number, number] = range;
  let clips = false;
  if (scheme === 'diverging') {
    const full = Math.max(Math.abs(range[0]), Math.abs(range[1]), 1e-12);
    const robust = opts.values ? Math.max(robustExtent(opts.values), 1e-12) : full;
    // Clip only where it shows something: the tail of a normal sample (4.5 σ at most) stays.
    const a = full <= ROBUST_SLACK * robust ? full : robust;
    clips = a < full;
    domain = [-a, a];
  }
  return { scheme, domain, clips, gamma: opts.gamma ?? 1, lut: lutFor(scheme), interpolate: interpolator(scheme) };
}

/** How many robust standard deviations the diverging scale spans each way. */
export const ROBUST_SIGMAS = 4;
/** The whole range is kept when it is at most this many times the robust extent. */
export const ROBUST_SLACK = 1.5;
/** The percentile of |x| the extent never goes below (for data that are mostly zeros). */
export const ROBUST_FLOOR_PERCENTILE = 0.95;

/**
 * The extent that shows the bulk of the finite values: ROBUST_SIGMAS standard deviations
 * estimated from the median |x| (|x| of a normal sample has median 0.6745 σ, and an outlier
 * row moves the median hardly at all), but never below the 95th percentile of |x|.
 * Of normal data this clips about 6 values in 100 000; of a planted outlier row, the row.
 */
export function robustExtent(values: ArrayLike<number>): number {
  const abs: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (Number.isFinite(v)) abs.push(Math.abs(v));
  }
  if (abs.length === 0) return 0;
  const sorted = Float64Array.from(abs).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))];
  const sigma = at(0.5) / 0.6745;
  return Math.min(sorted[sorted.length - 1], Math.max(ROBUST_SIGMAS * sigma, at(ROBUST_FLOOR_PERCENTILE)));
}

/** Index into the 256-entry LUT of a finite value; -1 below the domain, 256 above it (clipped). */
export function colourIndex(scale: ColourScale, v: number): number {
  const [lo, hi] = scale.domain;
  const span = hi - lo;
  if (v < lo) return span > 0 && (lo - v) / span > 1e-9 ? -1 : 0;
  if (v > hi) return span > 0 && (v - hi) / span > 1e-9 ? 256 : 255;
  const t = span > 0 ? (v - lo) / span : 0;
  return Math.round((scale.gamma === 1 ? t : t ** scale.gamma) * 255);
}

/** Colour of cells beyond a clipping scale's domain: a magenta that neither RdBu nor viridis holds. */
export const CLIPPED: [number, number, number] = [255, 0, 255];

/** Colours of cells that hold no value yet, and of masked cells (two tones, drawn as a checker / stripe). */
export const NOT_COMPUTED: [number, number, number][] = [
  [38, 42, 50],
  [46, 51, 60],
];
export const MASKED: [number, number, number][] = [
  [92, 92, 92],
  [60, 60, 60],
];
