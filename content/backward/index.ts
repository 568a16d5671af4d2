// Pseudo-code and explanations of the backward passes, by the line-id prefix of their trace
// events ('fa2bwd', …): the pseudo-code view shows these for a backward run.
import type { AlgorithmContent } from '../types.ts';
import { fa1BackwardContent } from './fa1.ts';
import { fa2BackwardContent } from './fa2.ts';
import { fa3BackwardContent } from './fa3.ts';
import { fa4BackwardContent } from './fa4.ts';
import { standardBackwardContent } from './standard.ts';

export const BACKWARD_CONTENT: readonly AlgorithmContent[] = [
  standardBackwardContent,
  fa1BackwardContent,
  fa2BackwardContent,
  fa3BackwardContent,
  fa4BackwardContent,
];

/** The content id of an algorithm's backward (its events' line-id prefix). */
export const backwardContentId = (algorithm: string) => `${algorithm}bwd`;
