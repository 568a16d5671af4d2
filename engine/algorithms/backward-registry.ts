// The algorithms that have a backward pass, by the id of their forward (their descriptors
// say). Algorithms without one (cute-fa2, fmha_v2, flash-decoding, sage) are refused by name.

import { DESCRIPTORS, findDescriptor } from './registry.ts';
import { ProblemError } from '../core/problem.ts';
import type { BackwardAlgorithm } from '../backward/types.ts';

/** The backward passes of the registered algorithms, in menu order. */
export function backwardAlgorithms(): BackwardAlgorithm[] {
  return DESCRIPTORS.flatMap((d) => (d.backward ? [d.backward.algorithm] : []));
}

/** The built-in backward passes, in menu order. */
export const BACKWARD_ALGORITHMS: readonly BackwardAlgorithm[] = backwardAlgorithms();

export function hasBackward(id: string): boolean {
  return findDescriptor(id)?.backward !== undefined;
}

/** The backward of algorithm `id`; a ProblemError on 'algo' names the ones that have one. */
export function backwardById(id: string): BackwardAlgorithm {
  const d = findDescriptor(id);
  if (d?.backward) return d.backward.algorithm;
  const known = backwardAlgorithms()
    .map((x) => x.id)
    .join(', ');
  if (d) throw new ProblemError('algo', `${id} has no backward pass in FlashScope; backward passes exist for ${known}`);
  throw new ProblemError('algo', `unknown algorithm '${id}'; backward passes exist for ${known}`);
}
