// Which pass of attention a debugger run steps through. The forward computes O and LSE;
// the backward computes dQ, dK and dV from a dO (in the debugger drawn from the run's
// seed), recomputing P from the forward's LSE tile by tile.

export type Pass = 'forward' | 'backward';

export const PASSES: readonly Pass[] = ['forward', 'backward'];

/** Whether an algorithm has a stepped backward pass (engine/algorithms/backward-registry.ts; the others model forward-only kernels). */
export { hasBackward } from './algorithms/backward-registry.ts';
