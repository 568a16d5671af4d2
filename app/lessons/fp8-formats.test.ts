// The widget's view of e4m3/e5m2 (fp8-formats.ts: fields, kinds, the value table, the
// saturated and flushed flags) against engine/lowprec/fp8.ts, whose rounding it uses: every
// one of the 256 codes reads back the engine's value, every finite value rounds to itself with
// its own code, and the points between neighbours (midpoints, where ties go to the even
// mantissa, and just either side of them) pair the engine's value with the engine's code.

import { describe, expect, it } from 'vitest';
import { decodeFp8, encodeFp8, FP8, roundFp8 } from '../../engine/lowprec/fp8.ts';
import { codeFields, finiteValues, formatMax, FORMATS, nearest, parseValue, type Fp8Name } from './fp8-formats.ts';

const names: Fp8Name[] = ['e4m3', 'e5m2'];

describe('FP8 formats widget against engine/lowprec/fp8.ts', () => {
  for (const n of names) {
    const f = FORMATS[n];
    it(`${n}: all 256 codes decode to the engine's value`, () => {
      for (let code = 0; code < 256; code++) {
        const mine = codeFields(f, code).value;
        const eng = decodeFp8(n, code);
        if (Number.isNaN(eng)) expect(mine, `code ${code}`).toBeNaN();
        else expect(Object.is(mine, eng), `code ${code}: ${mine} vs ${eng}`).toBe(true);
      }
    });

    it(`${n}: every finite code's value rounds to itself with that code, as in the engine`, () => {
      let finite = 0;
      for (let code = 0; code < 256; code++) {
        const v = decodeFp8(n, code);
        if (!Number.isFinite(v)) continue;
        finite++;
        const r = nearest(f, v);
        expect(Object.is(r.value, roundFp8(n, v)), `code ${code}`).toBe(true);
        expect(r.code, `code ${code}`).toBe(encodeFp8(n, v));
        expect(r.code).toBe(code);
        expect(r.relError).toBe(0);
      }
      // e4m3 loses only its two NaN codes; e5m2 loses ±inf and six NaNs.
      expect(finite).toBe(n === 'e4m3' ? 254 : 248);
    });

    it(`${n}: between neighbours (midpoints and either side) the widget rounds as the engine`, () => {
      const t = finiteValues(f);
      for (let i = 0; i + 1 < t.length; i++) {
        const a = t[i].value;
        const b = t[i + 1].value;
        const mid = (a + b) / 2;
        for (const x of [mid, mid * (1 - 1e-9), mid * (1 + 1e-9), a + (b - a) * 0.25, a + (b - a) * 0.75]) {
          for (const s of [1, -1]) {
            const r = nearest(f, s * x);
            expect(Object.is(r.value, roundFp8(n, s * x)), `${s * x}: ${r.value} vs ${roundFp8(n, s * x)}`).toBe(true);
            expect(r.code).toBe(encodeFp8(n, s * x));
          }
        }
      }
    });

    it(`${n}: past the largest value it saturates to ±max, as the satfinite cast does`, () => {
      const max = formatMax(f);
      expect(max).toBe(FP8[n].max);
      for (const x of [max * 1.01, max * 1.2, max * 1000, Infinity]) {
        const r = nearest(f, -x);
        expect(r.saturated).toBe(true);
        expect(r.value).toBe(roundFp8(n, -x));
      }
      expect(nearest(f, max).saturated).toBe(false);
    });

    it(`${n}: below half the smallest subnormal a value flushes to zero`, () => {
      const tiny = FP8[n].minSubnormal;
      expect(nearest(f, tiny / 2).flushed).toBe(true); // the tie goes to 0, the even code
      expect(nearest(f, tiny / 2).value).toBe(roundFp8(n, tiny / 2));
      expect(nearest(f, tiny * 0.51).value).toBe(tiny);
      expect(codeFields(f, 1).kind).toBe('subnormal');
    });
  }

  it('the field breakdown of e4m3 448 and e5m2 57344', () => {
    const a = codeFields(FORMATS.e4m3, 0x7e);
    expect(a.bits).toEqual({ sign: '0', exponent: '1111', mantissa: '110' });
    expect(a.value).toBe(448);
    const b = codeFields(FORMATS.e5m2, 0x7b);
    expect(b.bits).toEqual({ sign: '0', exponent: '11110', mantissa: '11' });
    expect(b.value).toBe(57344);
    expect(codeFields(FORMATS.e5m2, 0x7c).kind).toBe('inf');
  });

  it('typed values: numbers, powers of two, and clear messages for the rest', () => {
    expect(parseValue(' 300 ')).toEqual({ value: 300 });
    expect(parseValue('2^-9')).toEqual({ value: 2 ** -9 });
    expect(parseValue('\u22121e-3')).toEqual({ value: -1e-3 });
    expect(parseValue('')).toEqual({ error: 'Type a number.' });
    expect('error' in parseValue('abc')).toBe(true);
    expect('error' in parseValue('1e999')).toBe(true);
  });
});
