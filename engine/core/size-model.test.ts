// The size model: its input and output bytes agree with the tensors a problem really has,
// every dimension counts (d as well as dv), and a refusal names the dimension to change
// with a largest value that truly fits.

import { describe, expect, it } from 'vitest';
import { inputSizes, randomInputs } from './inputs.ts';
import type { AttentionProblem } from './problem.ts';
import { capBlocks, checkSize, MAX_KERNEL_TILE, problemSize, SIZE_DIMS, SizeError, type SizeLimit, type SizeQuery } from './size-model.ts';

const P: AttentionProblem = { batch: 2, hq: 4, hk: 2, nq: 19, nk: 13, d: 8, dv: 6, causal: false, dtype: 'fp32' };
const Q: SizeQuery = { ...P, blockM: 8, blockN: 4 };

describe('size model', () => {
  it('counts the bytes of the tensors a problem really allocates', () => {
    const x = randomInputs(P, { seed: 1 });
    const s = problemSize(Q);
    expect(s.inputBytes).toBe(x.q.byteLength + x.k.byteLength + x.v.byteLength);
    const n = inputSizes(P);
    expect(s.outputBytes).toBe(4 * (n.o + n.lse));
  });

  it('grows with every dimension, d included', () => {
    const base = problemSize({ ...Q, pass: 'forward' });
    for (const dim of SIZE_DIMS) {
      if (dim === 'blockM' || dim === 'blockN') continue;
      const bigger = problemSize({ ...Q, [dim]: Q[dim] * 10 });
      expect(bigger.runBytes, dim).toBeGreaterThan(base.runBytes);
      // The stepping views hold one head's K and V, whatever the number of K/V heads.
      if (dim !== 'hk') expect(bigger.steppingBytes, dim).toBeGreaterThan(base.steppingBytes);
    }
    expect(problemSize({ ...Q, pass: 'backward' }).steppingBytes).toBeGreaterThan(base.steppingBytes);
  });

  it('caps block sizes past every kernel tile at the sequence lengths', () => {
    expect(capBlocks({ nq: 19, nk: 13 }, 1e9, 4)).toEqual({ blockM: 19, blockN: 4 });
    // A kernel's own tile (at most MAX_KERNEL_TILE) stays, even on a shorter sequence.
    expect(capBlocks({ nq: 19, nk: 13 }, 128, MAX_KERNEL_TILE)).toEqual({ blockM: 128, blockN: MAX_KERNEL_TILE });
    expect(problemSize({ ...Q, blockM: 1e9, blockN: 1e9 })).toEqual(problemSize({ ...Q, blockM: 19, blockN: 13 }));
    expect(problemSize({ ...Q, blockM: 128, blockN: 128 })).toEqual(problemSize({ ...Q, blockM: 19, blockN: 13 }));
  });

  it('names the dimension far above its usual size, with a largest value that fits', () => {
    const limit: SizeLimit = { measure: (s) => s.steppingBytes, budget: 200 * 2 ** 20, what: 'its trace', names: { d: 'the head dim' } };
    const huge = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 1_000_000, dv: 32, blockM: 16, blockN: 16 };
    let err: unknown;
    try {
      checkSize(huge, limit);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SizeError);
    const e = err as SizeError;
    expect(e.field).toBe('d');
    expect(e.message).toMatch(
      /^its trace would need about [\d.,]+ (MB|GB), over the limit of 200 MB: make the head dim smaller \(1000000; at most \d+ fits/,
    );
    expect(checkSize({ ...huge, d: e.largestFitting }, limit)).toBeLessThanOrEqual(limit.budget);
    expect(() => checkSize({ ...huge, d: e.largestFitting + 1 }, limit)).toThrow(SizeError);
  });

  it('stays finite for the largest sizes an option accepts', () => {
    const s = problemSize({
      batch: 2 ** 31 - 1,
      hq: 2 ** 31 - 1,
      hk: 1,
      nq: 2 ** 31 - 1,
      nk: 2 ** 31 - 1,
      d: 2 ** 31 - 1,
      dv: 2 ** 31 - 1,
      blockM: 1,
      blockN: 1,
    });
    for (const v of Object.values(s)) expect(Number.isFinite(v)).toBe(true);
  });
});
