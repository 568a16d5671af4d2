import { describe, expect, it } from 'vitest';
import { decodeFp8, encodeFp8, roundFp8, type Fp8Format } from './fp8.ts';
import { int8Scale, quantizeInt8, roundHalfEven } from './int8.ts';

// The formats written out independently of the implementation: field widths and the special
// codes as the OCP 8-bit float specification (v1.0) lists them.
const DEF = {
  e4m3: { E: 4, M: 3, bias: 7, max: 448, nanCodes: [0x7f, 0xff], infCodes: [] as number[] },
  e5m2: { E: 5, M: 2, bias: 15, max: 57344, nanCodes: [0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff], infCodes: [0x7c, 0xfc] },
};
function valueByDefinition(f: Fp8Format, code: number): number {
  const d = DEF[f];
  if (d.nanCodes.includes(code)) return NaN;
  if (d.infCodes.includes(code)) return code & 0x80 ? -Infinity : Infinity;
  const sign = code & 0x80 ? -1 : 1;
  const e = (code >> d.M) & ((1 << d.E) - 1);
  const m = code & ((1 << d.M) - 1);
  const mag = e === 0 ? (m / 2 ** d.M) * 2 ** (1 - d.bias) : (1 + m / 2 ** d.M) * 2 ** (e - d.bias);
  return sign * mag;
}
const codes = Array.from({ length: 256 }, (_, c) => c);

for (const f of ['e4m3', 'e5m2'] as const) {
  const d = DEF[f];
  const finite = codes.filter((c) => Number.isFinite(valueByDefinition(f, c)));
  // Non-negative finite values in increasing order (+0 first).
  const ladder = finite
    .filter((c) => c < 0x80)
    .map((c) => valueByDefinition(f, c))
    .sort((a, b) => a - b);

  describe(`fp8 ${f}`, () => {
    it('decodes all 256 codes as the definition says (NaN, inf, -0, subnormals)', () => {
      for (const c of codes)
        expect(
          Object.is(decodeFp8(f, c), valueByDefinition(f, c)) || (Number.isNaN(decodeFp8(f, c)) && Number.isNaN(valueByDefinition(f, c))),
          `code ${c}`,
        ).toBe(true);
      expect(decodeFp8(f, 0x80)).toBe(-0);
      expect(Math.max(...ladder)).toBe(d.max);
      expect(ladder[1]).toBe(2 ** (1 - d.bias - d.M)); // smallest subnormal
      expect(codes.filter((c) => Number.isNaN(decodeFp8(f, c))).length).toBe(d.nanCodes.length);
    });
    it('encodes every finite code value back to its own code and rounds it to itself', () => {
      for (const c of finite) {
        const v = valueByDefinition(f, c);
        expect(encodeFp8(f, v), `code ${c} = ${v}`).toBe(c);
        expect(Object.is(roundFp8(f, v), v)).toBe(true);
      }
      if (f === 'e5m2') for (const c of d.infCodes) expect(encodeFp8(f, valueByDefinition(f, c), 'overflow')).toBe(c);
    });
    it('rounds every midpoint between neighbours to the one with the even mantissa, and nearby values to the nearest', () => {
      for (let i = 0; i + 1 < ladder.length; i++) {
        const lo = ladder[i];
        const hi = ladder[i + 1];
        const mid = (lo + hi) / 2;
        const evenIsLo = (encodeFp8(f, lo) & 1) === 0;
        expect(roundFp8(f, mid), `mid ${lo}..${hi}`).toBe(evenIsLo ? lo : hi);
        expect(roundFp8(f, -mid)).toBe(-(evenIsLo ? lo : hi));
        const eps = (hi - lo) * 1e-6;
        expect(roundFp8(f, mid - eps)).toBe(lo);
        expect(roundFp8(f, mid + eps)).toBe(hi);
      }
      // Below half the smallest subnormal flushes to (signed) zero; the half itself ties to 0.
      expect(Object.is(roundFp8(f, -ladder[1] / 2), -0)).toBe(true);
      expect(roundFp8(f, ladder[1] * 0.50001)).toBe(ladder[1]);
    });
    it('saturates past max with satfinite and overflows per format otherwise', () => {
      const ulpTop = d.max - ladder[ladder.length - 2];
      const mid = d.max + ulpTop / 2; // midpoint to the (unrepresentable) next value
      for (const x of [d.max + 1, mid, 1e6, Infinity]) {
        expect(roundFp8(f, x)).toBe(d.max);
        expect(roundFp8(f, -x)).toBe(-d.max);
      }
      // Just below the midpoint rounds down to max in both modes.
      expect(roundFp8(f, mid - 1e-9, 'overflow')).toBe(d.max);
      if (f === 'e4m3') {
        // 464 ties to even: 448 = 1.110·2^8 has the even mantissa, so it stays finite.
        expect(roundFp8(f, mid, 'overflow')).toBe(448);
        expect(roundFp8(f, mid + 1e-9, 'overflow')).toBeNaN();
        expect(roundFp8(f, Infinity, 'overflow')).toBeNaN();
        expect(encodeFp8(f, 1000, 'overflow')).toBe(0x7f);
      } else {
        // 61440 ties to even: 57344 = 1.11·2^15 is odd, so the tie goes up, to inf.
        expect(roundFp8(f, mid, 'overflow')).toBe(Infinity);
        expect(roundFp8(f, -mid, 'overflow')).toBe(-Infinity);
        expect(encodeFp8(f, -Infinity, 'overflow')).toBe(0xfc);
      }
      expect(encodeFp8(f, 1e9)).toBe(encodeFp8(f, d.max));
    });
    it('keeps NaN as NaN in both modes', () => {
      expect(roundFp8(f, NaN)).toBeNaN();
      expect(roundFp8(f, NaN, 'overflow')).toBeNaN();
      expect(Number.isNaN(decodeFp8(f, encodeFp8(f, NaN)))).toBe(true);
    });
  });
}

describe('int8 symmetric quantization', () => {
  it('rounds half to even and saturates at ±127', () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 2.5001].map(roundHalfEven)).toEqual([0, 2, 2, 0, -2, -2, 2, 3]);
    const s = int8Scale(254); // scale 2
    expect(s).toBe(2);
    expect(quantizeInt8(254, s)).toBe(127);
    expect(quantizeInt8(-254, s)).toBe(-127);
    expect(quantizeInt8(1000, s)).toBe(127);
    expect(quantizeInt8(-1000, s)).toBe(-127);
    expect(quantizeInt8(3, s)).toBe(2); // 1.5 → 2
    expect(quantizeInt8(5, s)).toBe(2); // 2.5 → 2
    expect(int8Scale(0)).toBe(1);
  });
  it('reconstructs within half a quantum for every code', () => {
    const s = int8Scale(3.3);
    for (let c = -127; c <= 127; c++) expect(quantizeInt8(c * s, s)).toBe(c);
    for (let i = 0; i < 1000; i++) {
      const x = -3.3 + (6.6 * i) / 999;
      expect(Math.abs(quantizeInt8(x, s) * s - x)).toBeLessThanOrEqual(s / 2 + 1e-12);
    }
  });
});
