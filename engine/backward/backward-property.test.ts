// Random problems: every backward algorithm's gradients match the float64 reference in
// fp32, for arbitrary sizes, head groups, masks (fully masked rows included), modifiers
// and tile sizes (tiles of one row or column, tiles larger than the problem).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxAbs } from '../algorithms/accuracy-matrix.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import { randomGradOutput } from './grad-output.ts';
import { referenceBackward } from './reference-backward.ts';
import { BACKWARD_ALGORITHMS } from './registry.ts';
import type { BackwardInputs, BackwardResult } from './types.ts';

describe('random problems: every backward matches the reference (fp32)', () => {
  it('holds for arbitrary sizes, heads, masks, modifiers and blocks', () => {
    const arb = fc.record({
      nq: fc.integer({ min: 1, max: 20 }),
      nk: fc.integer({ min: 1, max: 20 }),
      d: fc.integer({ min: 1, max: 10 }),
      dv: fc.integer({ min: 1, max: 10 }),
      group: fc.integer({ min: 1, max: 3 }),
      hk: fc.integer({ min: 1, max: 2 }),
      causal: fc.boolean(),
      window: fc.option(fc.record({ left: fc.integer({ min: -1, max: 6 }), right: fc.integer({ min: -1, max: 6 }) }), { nil: undefined }),
      softcap: fc.option(fc.double({ min: 0.5, max: 30, noNaN: true }), { nil: undefined }),
      alibi: fc.boolean(),
      sink: fc.option(fc.double({ min: -4, max: 4, noNaN: true }), { nil: undefined }),
      blockM: fc.integer({ min: 1, max: 24 }),
      blockN: fc.integer({ min: 1, max: 24 }),
      seed: fc.nat(),
    });
    fc.assert(
      fc.property(arb, (r) => {
        const hq = r.hk * r.group;
        const p: AttentionProblem = { batch: 1, hq, hk: r.hk, nq: r.nq, nk: r.nk, d: r.d, dv: r.dv, causal: r.causal, dtype: 'fp32' };
        if (r.window) p.window = r.window;
        if (r.softcap !== undefined) p.softcap = r.softcap;
        if (r.alibi) p.alibi = 'standard';
        if (r.sink !== undefined) p.sinks = Array.from({ length: hq }, (_, h) => r.sink! - h);
        const x: BackwardInputs = { ...randomInputs(p, { seed: r.seed }), dO: randomGradOutput(p, r.seed) };
        const ref = referenceBackward(p, x);
        for (const algo of BACKWARD_ALGORITHMS) {
          const got = runToEnd(algo, p, x, { blockM: r.blockM, blockN: r.blockN }) as BackwardResult;
          for (const t of ['dq', 'dk', 'dv'] as const) expect(maxAbs(got[t], ref[t]), `${algo.id} ${t}`).toBeLessThanOrEqual(1e-4);
        }
      }),
      { numRuns: 120, seed: 20261124 },
    );
  });
});
