// Do the heatmaps' colour scales stay readable for the common colour-vision deficiencies?
// Each scale (app/views/colour.ts: viridis for values that are never negative, RdBu reversed
// for signed ones) is sampled, passed through the Machado–Oliveira–Fernandes simulation of
// protanopia, deuteranopia and tritanopia at full severity, and compared with CIEDE2000:
//  - neighbouring samples must stay apart (the scale still orders values), and
//  - on the diverging scale, +x and −x must stay apart (the sign still reads).
// A red–green diverging scale is run through the same check and must fail it, so the check
// can tell a bad scale from a good one.

import { interpolateRdYlGn, rgb } from 'd3';
import { describe, expect, it } from 'vitest';
import { colourScale } from './colour.ts';

type Vec3 = [number, number, number];
type Mat3 = [Vec3, Vec3, Vec3];

// Machado, Oliveira & Fernandes, "A Physiologically-based Model for Simulation of Color
// Vision Deficiency", IEEE TVCG 15(6), 2009, Table 1 at severity 1.0; they act on linear RGB.
const MACHADO: Record<'protan' | 'deutan' | 'tritan', Mat3> = {
  protan: [
    [0.152286, 1.052583, -0.204868],
    [0.114503, 0.786281, 0.099216],
    [-0.003882, -0.048116, 1.051998],
  ],
  deutan: [
    [0.367322, 0.860646, -0.227968],
    [0.280085, 0.672501, 0.047413],
    [-0.01182, 0.04294, 0.968881],
  ],
  tritan: [
    [1.255528, -0.076749, -0.178779],
    [-0.078411, 0.930809, 0.147602],
    [0.004733, 0.691367, 0.3039],
  ],
};
const IDENTITY: Mat3 = [
  [1, 0, 0],
  [0, 1, 0],
  [0, 0, 1],
];

const toLinear = (c: number) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
const mul = (m: Mat3, v: Vec3): Vec3 => [0, 1, 2].map((i) => m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2]) as Vec3;

/** A CSS colour as seen with deficiency `m`, in CIELAB (D65). */
function labSeen(css: string, m: Mat3): Vec3 {
  const c = rgb(css);
  const lin = mul(m, [toLinear(c.r / 255), toLinear(c.g / 255), toLinear(c.b / 255)]).map(clamp01) as Vec3;
  // Linear sRGB to XYZ (D65), then to Lab.
  const [x, y, z] = mul(
    [
      [0.4124564, 0.3575761, 0.1804375],
      [0.2126729, 0.7151522, 0.072175],
      [0.0193339, 0.119192, 0.9503041],
    ],
    lin,
  );
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
  const [fx, fy, fz] = [f(x / 0.95047), f(y / 1), f(z / 1.08883)];
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

/** CIEDE2000 colour difference (Sharma, Wu & Dalal, Color Res. Appl. 30(1), 2005). */
function deltaE2000([L1, a1, b1]: Vec3, [L2, a2, b2]: Vec3): number {
  const rad = Math.PI / 180;
  const C1 = Math.hypot(a1, b1);
  const C2 = Math.hypot(a2, b2);
  const Cm = (C1 + C2) / 2;
  const G = 0.5 * (1 - Math.sqrt(Cm ** 7 / (Cm ** 7 + 25 ** 7)));
  const a1p = (1 + G) * a1;
  const a2p = (1 + G) * a2;
  const C1p = Math.hypot(a1p, b1);
  const C2p = Math.hypot(a2p, b2);
  const hue = (b: number, a: number) => (b === 0 && a === 0 ? 0 : (Math.atan2(b, a) / rad + 360) % 360);
  const h1p = hue(b1, a1p);
  const h2p = hue(b2, a2p);
  const dLp = L2 - L1;
  const dCp = C2p - C1p;
  let dhp = 0;
  if (C1p * C2p !== 0) {
    dhp = h2p - h1p;
    if (dhp > 180) dhp -= 360;
    else if (dhp < -180) dhp += 360;
  }
  const dHp = 2 * Math.sqrt(C1p * C2p) * Math.sin((dhp / 2) * rad);
  const Lm = (L1 + L2) / 2;
  const Cmp = (C1p + C2p) / 2;
  let hm = h1p + h2p;
  if (C1p * C2p !== 0) {
    if (Math.abs(h1p - h2p) <= 180) hm /= 2;
    else hm = h1p + h2p < 360 ? (hm + 360) / 2 : (hm - 360) / 2;
  }
  const T =
    1 -
    0.17 * Math.cos((hm - 30) * rad) +
    0.24 * Math.cos(2 * hm * rad) +
    0.32 * Math.cos((3 * hm + 6) * rad) -
    0.2 * Math.cos((4 * hm - 63) * rad);
  const dTheta = 30 * Math.exp(-(((hm - 275) / 25) ** 2));
  const Rc = 2 * Math.sqrt(Cmp ** 7 / (Cmp ** 7 + 25 ** 7));
  const Sl = 1 + (0.015 * (Lm - 50) ** 2) / Math.sqrt(20 + (Lm - 50) ** 2);
  const Sc = 1 + 0.045 * Cmp;
  const Sh = 1 + 0.015 * Cmp * T;
  const Rt = -Math.sin(2 * dTheta * rad) * Rc;
  return Math.sqrt((dLp / Sl) ** 2 + (dCp / Sc) ** 2 + (dHp / Sh) ** 2 + Rt * (dCp / Sc) * (dHp / Sh));
}

/** Steps a legend is read in: 16 bands across the scale. */
const STEPS = 16;
/** Neighbouring bands closer than this read as one colour (ΔE00 ≈ 2 is about one just-noticeable difference). */
const MIN_NEIGHBOUR = 2;
/** +x and −x at a quarter of the range or more must differ clearly, not just noticeably. */
const MIN_SIGN = 10;

const samples = (f: (t: number) => string) => Array.from({ length: STEPS + 1 }, (_, i) => f(i / STEPS));

function minNeighbour(f: (t: number) => string, m: Mat3): number {
  const lab = samples(f).map((c) => labSeen(c, m));
  return Math.min(...lab.slice(1).map((c, i) => deltaE2000(lab[i], c)));
}

/** The smallest ΔE00 between t and 1 − t for |t − ½| ≥ ¼ on a diverging scale. */
function minSign(f: (t: number) => string, m: Mat3): number {
  const out: number[] = [];
  for (let i = 0; i <= STEPS / 4; i++) out.push(deltaE2000(labSeen(f(i / STEPS), m), labSeen(f(1 - i / STEPS), m)));
  return Math.min(...out);
}

const SEQUENTIAL = colourScale('sequential', [0, 1]).interpolate;
const DIVERGING = colourScale('diverging', [-1, 1]).interpolate;
const VISIONS = { normal: IDENTITY, ...MACHADO };

describe('colour scales under colour-vision deficiencies', () => {
  it('CIEDE2000 matches the published test pairs', () => {
    // Sharma et al. 2005, Table 1, pairs 1, 7 and 17.
    expect(deltaE2000([50, 2.6772, -79.7751], [50, 0, -82.7485])).toBeCloseTo(2.0425, 4);
    expect(deltaE2000([50, 0, 0], [50, -1, 2])).toBeCloseTo(2.3669, 4);
    expect(deltaE2000([50, 2.5, 0], [73, 25, -18])).toBeCloseTo(27.1492, 4);
  });

  it.each(Object.entries(VISIONS))('viridis (sequential) keeps its %s bands apart', (_, m) => {
    expect(minNeighbour(SEQUENTIAL, m)).toBeGreaterThan(MIN_NEIGHBOUR);
  });

  it.each(Object.entries(VISIONS))('RdBu (diverging) keeps its %s bands apart and its sign readable', (_, m) => {
    expect(minNeighbour(DIVERGING, m)).toBeGreaterThan(MIN_NEIGHBOUR);
    expect(minSign(DIVERGING, m)).toBeGreaterThan(MIN_SIGN);
  });

  it('a red–green diverging scale loses its sign for deuteranopes (the check can fail)', () => {
    const redGreen = (t: number) => interpolateRdYlGn(t);
    expect(minSign(redGreen, IDENTITY)).toBeGreaterThan(MIN_SIGN);
    expect(minSign(redGreen, MACHADO.deutan)).toBeLessThan(MIN_SIGN);
  });
});
