// Which pass of attention a debugger run steps through. The forward computes O and LSE;
// the backward computes dQ, dK and dV from a dO (random from the run's seed, or the
// person's file), recomputing P from the forward's LSE tile by tile.

export type Pass = 'forward' | 'backward';

export const PASSES: readonly Pass[] = ['forward', 'backward'];

/** Algorithms with a stepped backward pass (the others model forward-only kernels). */
export const BACKWARD_ALGORITHMS: readonly string[] = ['standard', 'fa1', 'fa2', 'fa3'];

export function hasBackward(algorithm: string): boolean {
  return BACKWARD_ALGORITHMS.includes(algorithm);
}
