// The FP8 formats widget's own model of e4m3 and e5m2: bit fields read from a code, the
// table of every finite value, and "nearest value" found by searching that table. It is
// written from the format definitions, not from engine/lowprec/fp8.ts, so the test that
// compares the two over all 256 codes checks one against the other.

export type Fp8Name = 'e4m3' | 'e5m2';

export interface FormatDef {
  name: Fp8Name;
  expBits: number;
  manBits: number;
  bias: number;
  /** IEEE-style specials (exponent all ones = inf/NaN); e4m3 keeps only S.1111.111 as NaN. */
  ieeeSpecials: boolean;
}

export const FORMATS: Record<Fp8Name, FormatDef> = {
  e4m3: { name: 'e4m3', expBits: 4, manBits: 3, bias: 7, ieeeSpecials: false },
  e5m2: { name: 'e5m2', expBits: 5, manBits: 2, bias: 15, ieeeSpecials: true },
};

export type CodeKind = 'zero' | 'subnormal' | 'normal' | 'inf' | 'nan';

export interface CodeFields {
  code: number;
  sign: number;
  /** Biased exponent field. */
  exponent: number;
  mantissa: number;
  /** The three fields as bit strings. */
  bits: { sign: string; exponent: string; mantissa: string };
  kind: CodeKind;
  value: number;
  /** How the value follows from the fields, e.g. "+2^(8−7) × 1.125". */
  formula: string;
}

const bin = (v: number, n: number) => v.toString(2).padStart(n, '0');

export function codeFields(f: FormatDef, code: number): CodeFields {
  if (!Number.isInteger(code) || code < 0 || code > 255) throw new RangeError(`an fp8 code is an integer from 0 to 255, got ${code}`);
  const sign = code >> 7;
  const exponent = (code >> f.manBits) & ((1 << f.expBits) - 1);
  const mantissa = code & ((1 << f.manBits) - 1);
  const allOnes = (1 << f.expBits) - 1;
  const s = sign ? -1 : 1;
  const sg = sign ? '−' : '+';
  const frac = mantissa / (1 << f.manBits);
  let kind: CodeKind;
  let value: number;
  let formula: string;
  if (f.ieeeSpecials && exponent === allOnes) {
    kind = mantissa === 0 ? 'inf' : 'nan';
    value = mantissa === 0 ? s * Infinity : NaN;
    formula = mantissa === 0 ? `${sg}∞ (exponent all ones, mantissa 0)` : 'NaN (exponent all ones)';
  } else if (!f.ieeeSpecials && exponent === allOnes && mantissa === (1 << f.manBits) - 1) {
    kind = 'nan';
    value = NaN;
    formula = 'NaN (the only e4m3 code with all exponent and mantissa bits set)';
  } else if (exponent === 0) {
    kind = mantissa === 0 ? 'zero' : 'subnormal';
    value = s * frac * 2 ** (1 - f.bias);
    formula = mantissa === 0 ? `${sg}0` : `${sg}2^(1−${f.bias}) × ${frac} (subnormal: no implicit 1)`;
  } else {
    kind = 'normal';
    value = s * (1 + frac) * 2 ** (exponent - f.bias);
    formula = `${sg}2^(${exponent}−${f.bias}) × ${1 + frac}`;
  }
  return { code, sign, exponent, mantissa, bits: { sign: bin(sign, 1), exponent: bin(exponent, f.expBits), mantissa: bin(mantissa, f.manBits) }, kind, value, formula };
}

export interface FiniteValue {
  value: number;
  code: number;
  subnormal: boolean;
}

const tables = new Map<Fp8Name, FiniteValue[]>();

/** Every finite value ≥ 0 of the format with its code, ascending. */
export function finiteValues(f: FormatDef): FiniteValue[] {
  const hit = tables.get(f.name);
  if (hit) return hit;
  const out: FiniteValue[] = [];
  for (let code = 0; code < 128; code++) {
    const c = codeFields(f, code);
    if (c.kind === 'zero' || c.kind === 'subnormal' || c.kind === 'normal') out.push({ value: c.value, code, subnormal: c.kind === 'subnormal' });
  }
  out.sort((a, b) => a.value - b.value);
  tables.set(f.name, out);
  return out;
}

export function formatMax(f: FormatDef): number {
  const t = finiteValues(f);
  return t[t.length - 1].value;
}

export interface Rounded {
  value: number;
  code: number;
  fields: CodeFields;
  /** |x| was past the largest finite value and was clamped to it (the kernels' satfinite cast). */
  saturated: boolean;
  /** x was not zero and rounded to zero. */
  flushed: boolean;
  /** |rounded − x| / |x|; 0 for x = 0. */
  relError: number;
}

/**
 * The value x becomes in the format: the nearest finite value, ties to the code with an even
 * mantissa, and anything past the largest finite value clamped to it. x must be finite or ±∞.
 */
export function nearest(f: FormatDef, x: number): Rounded {
  if (Number.isNaN(x)) throw new RangeError('nearest: x is NaN');
  const t = finiteValues(f);
  const a = Math.abs(x);
  const neg = x < 0 || Object.is(x, -0);
  let pick: FiniteValue;
  let saturated = false;
  if (a > t[t.length - 1].value) {
    pick = t[t.length - 1];
    saturated = true;
  } else {
    // Binary search for the first table value ≥ a.
    let lo = 0;
    let hi = t.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t[mid].value < a) lo = mid + 1;
      else hi = mid;
    }
    const up = t[lo];
    const down = lo > 0 ? t[lo - 1] : up;
    const dUp = up.value - a;
    const dDown = a - down.value;
    pick = dDown < dUp ? down : dUp < dDown ? up : (down.code & 1) === 0 ? down : up;
  }
  const code = pick.code | (neg ? 0x80 : 0);
  const value = neg ? -pick.value : pick.value;
  return { value, code, fields: codeFields(f, code), saturated, flushed: x !== 0 && pick.value === 0, relError: x === 0 ? 0 : Math.abs(value - x) / a };
}

/** A typed value, or a message saying what is wrong with it (the text is kept as typed). */
export function parseValue(text: string): { value: number } | { error: string } {
  const t = text.trim().replace(/\u2212/g, '-').replace(/\s+/g, '');
  if (t === '') return { error: 'Type a number.' };
  const m = /^([+-]?)2\^\(?(-?\d+(?:\.\d+)?)\)?$/.exec(t);
  const v = m ? (m[1] === '-' ? -1 : 1) * 2 ** Number(m[2]) : Number(t);
  if (Number.isNaN(v)) return { error: `"${text.trim()}" is not a number (try 300, 1e-3 or 2^-9).` };
  if (!Number.isFinite(v)) return { error: 'Type a finite number; anything past the largest value saturates anyway.' };
  return { value: v };
}
