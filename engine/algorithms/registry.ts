// Every step algorithm FlashScope knows, by id. Adding an algorithm = one file + one line here.

import { fa2 } from './fa2.ts';
import type { StepAlgorithm } from './types.ts';

export const ALGORITHMS: readonly StepAlgorithm[] = [fa2];

export function algorithmById(id: string): StepAlgorithm {
  const a = ALGORITHMS.find((x) => x.id === id);
  if (!a) throw new Error(`unknown algorithm '${id}'; known: ${ALGORITHMS.map((x) => x.id).join(', ')}`);
  return a;
}
