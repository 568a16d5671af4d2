// Pseudo-code and explanations of the backward passes, by the line-id prefix of their trace
// events ('fa2bwd', …): the pseudo-code view shows these for a backward run.
import type { AlgorithmContent } from '../types.ts';
import { fa2BackwardContent } from './fa2.ts';

export const BACKWARD_CONTENT: readonly AlgorithmContent[] = [fa2BackwardContent];

/** The content id of an algorithm's backward (its events' line-id prefix). */
export const backwardContentId = (algorithm: string) => `${algorithm}bwd`;
