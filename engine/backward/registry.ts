// The algorithms that have a backward pass, by the id of their forward. Algorithms without
// one (cute-fa2, fmha_v2, fa4, flash-decoding) are refused by name.

import { standardBackward } from '../algorithms/standard/backward.ts';
import { fa1Backward } from '../algorithms/fa1/backward.ts';
import { fa2Backward } from '../algorithms/fa2/backward.ts';
import { fa3Backward } from '../algorithms/fa3/backward.ts';
import { ALGORITHMS } from '../algorithms/registry.ts';
import { ProblemError } from '../core/problem.ts';
import type { BackwardAlgorithm } from './types.ts';

export const BACKWARD_ALGORITHMS: readonly BackwardAlgorithm[] = [standardBackward, fa1Backward, fa2Backward, fa3Backward];

export function hasBackward(id: string): boolean {
  return BACKWARD_ALGORITHMS.some((a) => a.id === id);
}

/** The backward of algorithm `id`; a ProblemError on 'algo' names the ones that have one. */
export function backwardById(id: string): BackwardAlgorithm {
  const a = BACKWARD_ALGORITHMS.find((x) => x.id === id);
  if (a) return a;
  const known = BACKWARD_ALGORITHMS.map((x) => x.id).join(', ');
  if (ALGORITHMS.some((x) => x.id === id)) {
    throw new ProblemError('algo', `${id} has no backward pass in FlashScope; backward passes exist for ${known}`);
  }
  throw new ProblemError('algo', `unknown algorithm '${id}'; backward passes exist for ${known}`);
}
