// Every step algorithm FlashScope knows, by id. Adding an algorithm = one file + one line here.

import { fa2 } from './fa2/forward.ts';
import { fa1 } from './fa1/forward.ts';
import { standard } from './standard/forward.ts';
import { fa3 } from './fa3/forward.ts';
import { fa4 } from './fa4/forward.ts';
import { fmhaV2 } from './fmha-v2/forward.ts';
import { cuteFa2 } from './cute-fa2/forward.ts';
import { flashDecoding } from './flash-decoding/forward.ts';
import { sage } from './sage/forward.ts';
import type { StepAlgorithm } from './types.ts';

export const ALGORITHMS: readonly StepAlgorithm[] = [standard, fa1, fa2, cuteFa2, fmhaV2, fa3, fa4, flashDecoding, sage];

export function algorithmById(id: string): StepAlgorithm {
  const a = ALGORITHMS.find((x) => x.id === id);
  if (!a) throw new Error(`unknown algorithm '${id}'; known: ${ALGORITHMS.map((x) => x.id).join(', ')}`);
  return a;
}
