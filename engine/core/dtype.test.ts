import { describe, expect, it } from 'vitest';
import { roundFp16 } from './dtype.ts';

/** The definition, written the slow way: nearest multiple of the binade's quantum, ties to even. */
function fp16ByDefinition(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  if (a >= 65520) return x > 0 ? Infinity : -Infinity;
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  if (2 ** (e + 1) <= a) e += 1;
  e = Math.max(e, -14);
  const q = 2 ** (e - 10);
  const lo = Math.floor(a / q);
  const d = a / q - lo;
  const n = d > 0.5 || (d === 0.5 && lo % 2 === 1) ? lo + 1 : lo;
  return Math.sign(x) * n * q;
}

describe('roundFp16', () => {
  it('agrees with the definition on random values across the whole range, ties and subnormals', () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const xs: number[] = [
      1,
      -1,
      0.5,
      65504,
      65519.99,
      65520,
      2 ** -24,
      2 ** -25,
      3 * 2 ** -26,
      2 ** -14,
      2 ** -15,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
      -2049,
      2049,
      2051,
      1e-30,
    ];
    for (let i = 0; i < 200_000; i++) xs.push((rnd() < 0.5 ? -1 : 1) * 2 ** (rnd() * 44 - 28) * (1 + rnd()));
    for (const x of xs) expect(roundFp16(x), String(x)).toBe(fp16ByDefinition(x));
  });
  it('keeps the exact values of fp16 and rounds ties to even', () => {
    expect(roundFp16(2049)).toBe(2048); // tie between 2048 and 2050: even mantissa wins
    expect(roundFp16(2051)).toBe(2052);
    expect(roundFp16(2 ** -25)).toBe(0); // half the smallest subnormal: ties to even (0)
    expect(roundFp16(3 * 2 ** -25)).toBe(2 * 2 ** -24);
    expect(roundFp16(-0.1)).toBe(-0.0999755859375);
  });
});
