// Random problems: every backward algorithm's gradients match the float64 reference in
// fp32, for arbitrary sizes, head groups, masks (fully masked rows included), modifiers
// and tile sizes (tiles of one row or column, tiles larger than the problem).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbitraryRun } from '../testing/arbitrary-problem.ts';
import { maxAbs } from '../algorithms/accuracy-matrix.ts';
import { randomInputs } from '../core/inputs.ts';
import { runToEnd } from '../run.ts';
import { randomGradOutput } from './grad-output.ts';
import { referenceBackward } from './reference-backward.ts';
import { BACKWARD_ALGORITHMS } from '../algorithms/backward-registry.ts';
import type { BackwardInputs, BackwardResult } from './types.ts';

describe('random problems: every backward matches the reference (fp32)', () => {
  it('holds for arbitrary sizes, heads, masks, modifiers and blocks', () => {
    const arb = arbitraryRun({ maxN: 20, maxD: 10, maxBlock: 24 });
    fc.assert(
      fc.property(arb, (r) => {
        const p = r.problem;
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
