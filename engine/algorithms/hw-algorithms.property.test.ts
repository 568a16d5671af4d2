// Property test over random small problems, block sizes and feature settings: every
// hardware-modelling algorithm matches the float64 reference (fp32 inputs) and its
// counters do not depend on tracing. Catches schedule bugs that only show up for odd tile
// counts (the producer models throw if a copy is awaited before it could be issued).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
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
  batch: fc.integer({ min: 1, max: 2 }),
  group: fc.integer({ min: 1, max: 3 }),
  hk: fc.integer({ min: 1, max: 2 }),
  nq: fc.integer({ min: 1, max: 50 }),
  nk: fc.integer({ min: 1, max: 60 }),
  d: fc.integer({ min: 1, max: 24 }),
  dv: fc.integer({ min: 1, max: 24 }),
  causal: fc.boolean(),
  window: fc.option(fc.record({ left: fc.integer({ min: -1, max: 20 }), right: fc.integer({ min: -1, max: 20 }) }), { nil: undefined }),
  softcap: fc.option(fc.constantFrom(3, 8), { nil: undefined }),
  alibi: fc.boolean(),
  sinks: fc.boolean(),
  blockM: fc.integer({ min: 3, max: 40 }),
  blockN: fc.integer({ min: 3, max: 40 }),
  seed: fc.integer({ min: 0, max: 1000 }),
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
        fc.property(problems, (r) => {
          const hq = r.hk * r.group;
          const p: AttentionProblem = {
            batch: r.batch,
            hq,
            hk: r.hk,
            nq: r.nq,
            nk: r.nk,
            d: r.d,
            dv: r.dv,
            causal: r.causal,
            window: r.window,
            softcap: r.softcap,
            alibi: r.alibi ? 'standard' : undefined,
            sinks: r.sinks ? Array.from({ length: hq }, (_, i) => i - 1) : undefined,
            dtype: 'fp32',
          };
          const x = randomInputs(p, { seed: r.seed });
          const ref = referenceAttention(p, x);
          const opts = { blockM: r.blockM, blockN: r.blockN, features: features[algo.id](r.flags, r.splits) };
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
