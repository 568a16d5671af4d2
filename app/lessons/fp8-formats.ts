// What the FP8 formats widget shows about e4m3 and e5m2: the bit fields of a code, the table
// of every finite value, and the value a number becomes. The numbers themselves (decoding a
// code, rounding ties to even, the satfinite clamp) come from engine/lowprec/fp8.ts, the
// rounding the FP8 paths run; this file only names fields and kinds for the page.

import { decodeFp8, encodeFp8, FP8, roundFp8, type Fp8Format, type Fp8Spec } from '../../engine/api.ts';

export type Fp8Name = Fp8Format;

export interface FormatDef extends Fp8Spec {
  name: Fp8Name;
}

export const FORMATS: Record<Fp8Name, FormatDef> = {
  e4m3: { name: 'e4m3', ...FP8.e4m3 },
  e5m2: { name: 'e5m2', ...FP8.e5m2 },
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
  const sg = sign ? '−' : '+';
  const frac = mantissa / (1 << f.manBits);
  const value = decodeFp8(f.name, code);
  let kind: CodeKind;
  let formula: string;
  if (Number.isNaN(value)) {
    kind = 'nan';
    formula = f.hasInf ? 'NaN (exponent all ones)' : 'NaN (the only e4m3 code with all exponent and mantissa bits set)';
  } else if (!Number.isFinite(value)) {
    kind = 'inf';
    formula = `${sg}∞ (exponent all ones, mantissa 0)`;
  } else if (exponent === 0) {
    kind = mantissa === 0 ? 'zero' : 'subnormal';
    formula = mantissa === 0 ? `${sg}0` : `${sg}2^(1−${f.bias}) × ${frac} (subnormal: no implicit 1)`;
  } else {
    kind = 'normal';
    formula = `${sg}2^(${exponent}−${f.bias}) × ${1 + frac}`;
  }
  return {
    code,
    sign,
    exponent,
    mantissa,
    bits: { sign: bin(sign, 1), exponent: bin(exponent, f.expBits), mantissa: bin(mantissa, f.manBits) },
    kind,
    value,
    formula,
  };
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
    if (c.kind === 'zero' || c.kind === 'subnormal' || c.kind === 'normal')
      out.push({ value: c.value, code, subnormal: c.kind === 'subnormal' });
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
  const value = roundFp8(f.name, x);
  const code = encodeFp8(f.name, x);
  const a = Math.abs(x);
  return {
    value,
    code,
    fields: codeFields(f, code),
    saturated: a > f.max,
    flushed: x !== 0 && value === 0,
    relError: x === 0 ? 0 : Math.abs(value - x) / a,
  };
}

/** A typed value, or a message saying what is wrong with it (the text is kept as typed). */
export function parseValue(text: string): { value: number } | { error: string } {
  const t = text
    .trim()
    .replace(/\u2212/g, '-')
    .replace(/\s+/g, '');
  if (t === '') return { error: 'Type a number.' };
  const m = /^([+-]?)2\^\(?(-?\d+(?:\.\d+)?)\)?$/.exec(t);
  const v = m ? (m[1] === '-' ? -1 : 1) * 2 ** Number(m[2]) : Number(t);
  if (Number.isNaN(v)) return { error: `"${text.trim()}" is not a number (try 300, 1e-3 or 2^-9).` };
  if (!Number.isFinite(v)) return { error: 'Type a finite number; anything past the largest value saturates anyway.' };
  return { value: v };
}
