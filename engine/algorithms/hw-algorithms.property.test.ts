// Property test over random small problems, block sizes and feature settings: every
// hardware-modelling algorithm matches the float64 reference (fp32 inputs) and its
// counters do not depend on tracing. Catches schedule bugs that only show up for odd tile
// counts (the producer models throw if a copy is awaited before it could be issued).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbitraryRun } from '../testing/arbitrary-problem.ts';
import { randomInputs } from '../core/inputs.ts';
import { referenceAttention } from '../core/reference.ts';
import { runToEnd } from '../run.ts';
import { maxAbs } from './accuracy-matrix.ts';
import { cuteFa2 } from './cute-fa2/forward.ts';
import { fa3 } from './fa3/forward.ts';
import { fa4 } from './fa4/forward.ts';
import { flashDecoding } from './flash-decoding/forward.ts';
import { fmhaV2 } from './fmha-v2/forward.ts';
import type { StepAlgorithm } from './types.ts';

const problems = fc.record({
  run: arbitraryRun({ maxN: 50, maxNk: 60, maxD: 24, minBlock: 3, maxBlock: 40, maxWindow: 20, maxBatch: 2 }),
  flags: fc.tuple(fc.boolean(), fc.boolean()),
  splits: fc.integer({ min: 0, max: 5 }),
});

const features: Record<string, (f: [boolean, boolean], splits: number) => Record<string, boolean | number>> = {
  fa3: ([a, b]) => ({ intraOverlap: a, pingpong: b }),
  fa4: ([a, b]) => ({ lazyRescale: a, exp2Emulation: false, rescaleThreshold: b ? 8 : 2 }),
  'fmha-v2': () => ({}),
  'cute-fa2': () => ({}),
  'flash-decoding': (_f, splits) => ({ splits }),
};

describe('hardware-model algorithms on random problems', () => {
  for (const algo of [fa3, fa4, fmhaV2, cuteFa2, flashDecoding] as StepAlgorithm[]) {
    it(`${algo.id} matches the float64 reference`, () => {
      fc.assert(
        fc.property(problems, ({ run: r, flags, splits }) => {
          // FA4 takes head dims in multiples of 8 only (interface.py _validate_head_dims).
          const p =
            algo.id === 'fa4' ? { ...r.problem, d: 8 * Math.ceil(r.problem.d / 8), dv: 8 * Math.ceil(r.problem.dv / 8) } : r.problem;
          const x = randomInputs(p, { seed: r.seed });
          const ref = referenceAttention(p, x);
          const opts = { blockM: r.blockM, blockN: r.blockN, features: features[algo.id](flags, splits) };
          const got = runToEnd(algo, p, x, opts);
          expect(maxAbs(got.o, ref.o)).toBeLessThan(2e-5);
          expect(maxAbs(got.lse, ref.lse)).toBeLessThan(2e-5);
          expect(runToEnd(algo, p, x, { ...opts, trace: true }).counters).toEqual(got.counters);
        }),
        { numRuns: 12, seed: 20261122 },
      );
    });
  }
});
