// The incoming gradient dO: checked against the problem's O shape, or drawn at random
// (for `trace --backward` and the debugger when no dO file is given).

import { roundArray } from '../core/dtype.ts';
import { ProblemError, type AttentionProblem } from '../core/problem.ts';
import { mulberry32, normalSource } from '../core/random.ts';

/** Throws a ProblemError naming dO and the expected [B, Hq, Nq, dv] when the length is wrong. */
export function checkGradOutput(p: AttentionProblem, dO: ArrayLike<number> | undefined): void {
  const n = p.batch * p.hq * p.nq * p.dv;
  if (!dO) throw new ProblemError('dO', `the backward pass needs dO, shaped like O: [${p.batch}, ${p.hq}, ${p.nq}, ${p.dv}]`);
  if (dO.length !== n) {
    throw new ProblemError(
      'dO',
      `expected ${n} elements, O's shape [B, Hq, Nq, dv] = [${p.batch}, ${p.hq}, ${p.nq}, ${p.dv}]; got ${dO.length}`,
    );
  }
}

/** N(0, 1) entries from their own stream of the seed (not Q's), rounded to the problem's dtype. */
export function randomGradOutput(p: AttentionProblem, seed: number): Float32Array {
  const normal = normalSource(mulberry32((seed ^ 0x9e3779b9) >>> 0));
  const a = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  for (let i = 0; i < a.length; i++) a[i] = normal();
  return roundArray(p.dtype, a);
}
