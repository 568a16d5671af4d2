import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { roundFp16 } from '../core/dtype.ts';
import { halfBits, halfToFloat, toHalfArray } from './half.ts';

describe('f16 packing for GPU upload', () => {
  it('halfBits then halfToFloat equals the engine rounding to fp16', () => {
    fc.assert(
      fc.property(fc.double({ min: -70000, max: 70000, noNaN: true }), (x) => {
        const f = Math.fround(x);
        expect(halfToFloat(halfBits(f))).toBe(roundFp16(f));
      }),
      { numRuns: 5000 },
    );
  });
  it('handles subnormals, ties to even and overflow', () => {
    for (const x of [2 ** -24, 3 * 2 ** -25, 2 ** -14, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504, 65520, -0.1]) {
      expect(halfToFloat(halfBits(x))).toBe(roundFp16(Math.fround(x)));
    }
  });
  it('pads odd lengths to whole 32-bit words', () => {
    expect(toHalfArray(new Float32Array([1, 2, 3])).length).toBe(4);
  });
});
