import { describe, expect, it } from 'vitest';
import { DESCRIPTORS } from './algorithms/registry.ts';
import type { AlgorithmResult } from './algorithms/types.ts';
import { randomInputs } from './core/inputs.ts';
import type { AttentionProblem } from './core/problem.ts';
import { type LoadRequest, passBlocks, startPass } from './request.ts';

/** Head dims where the kernels' tile tables and the on-chip-memory sizing change their answer. */
const PROBLEMS: AttentionProblem[] = [
  { batch: 1, hq: 1, hk: 1, nq: 40, nk: 72, d: 64, dv: 64, causal: false, dtype: 'fp16' },
  { batch: 1, hq: 1, hk: 1, nq: 40, nk: 72, d: 128, dv: 128, causal: true, dtype: 'bf16' },
];

/** The tile the pass itself reports when it has run to the end. */
function ranBlocks(req: LoadRequest): { blockM: number; blockN: number } {
  const x = randomInputs(req.problem, { seed: 0 });
  const { gen } = startPass(req, req.problem, x, { ...req.blocks, trace: false });
  for (;;) {
    const r = gen.next();
    if (r.done) return (r.value as AlgorithmResult).blocks;
  }
}

describe('passBlocks: the tile a load resolves once is the one its pass runs', () => {
  for (const a of DESCRIPTORS)
    for (const pass of a.backward ? (['forward', 'backward'] as const) : (['forward'] as const))
      it(`${a.id} ${pass}: no tile given, and only the on-chip memory given`, () => {
        for (const problem of PROBLEMS)
          for (const blocks of [{}, { sramBytes: 8 * 1024 }]) {
            const req: LoadRequest = { algorithm: a.id, problem, seed: 0, distribution: 'normal', blocks, pass };
            expect(passBlocks(req, problem), `${a.id} ${pass} d=${problem.d} ${JSON.stringify(blocks)}`).toEqual(ranBlocks(req));
          }
      });
});
