// Every step algorithm FlashScope knows, by id. Adding an algorithm = one file + one line here.

import { fa2 } from './fa2.ts';
import { fa1 } from './fa1.ts';
import { standard } from './standard.ts';
import type { StepAlgorithm } from './types.ts';

export const ALGORITHMS: readonly StepAlgorithm[] = [fa2, fa1, standard];

export function algorithmById(id: string): StepAlgorithm {
  const a = ALGORITHMS.find((x) => x.id === id);
  if (!a) throw new Error(`unknown algorithm '${id}'; known: ${ALGORITHMS.map((x) => x.id).join(', ')}`);
  return a;
}
