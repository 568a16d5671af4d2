// Which algorithm and pass can run a low-precision problem, found by asking the engine
// itself: a tiny problem with the same dtype, head dims and modifiers is started and its
// first step taken. A refusal names the field at fault (a ProblemError), which the problem
// panel turns into a one-click fix. Asking instead of keeping a list means a new FP8 or
// INT8 path (SageAttention's) is picked up without touching the panel.

import { algorithmById } from './algorithms/registry.ts';
import { startPass } from './request.ts';
import type { Pass } from './pass.ts';
import { randomInputs } from './core/inputs.ts';
import { ProblemError, type AttentionProblem } from './core/problem.ts';

export interface Refusal {
  /** The problem field the engine refused: 'dtype', 'alibi', 'sinks', 'dv', 'pass', … */
  field: string;
  message: string;
}

const cache = new Map<string, Refusal | null>();

/**
 * The engine's refusal of `problem` (only its dtype, head dims and modifiers matter: the
 * sizes are shrunk to one 16×16 head) on `algorithm`'s `pass`, or null when it starts.
 */
export function refusalOf(
  algorithm: string,
  pass: Pass,
  problem: AttentionProblem,
  features?: Record<string, boolean | number>,
): Refusal | null {
  const tiny: AttentionProblem = {
    ...problem,
    batch: 1,
    hq: 1,
    hk: 1,
    nq: 16,
    nk: 16,
    window: undefined,
    sinks: problem.sinks ? [problem.sinks[0]] : undefined,
    alibi: problem.alibi === undefined ? undefined : 'standard',
  };
  const key = JSON.stringify([algorithm, pass, tiny, features ?? {}]);
  const known = cache.get(key);
  if (known !== undefined) return known;
  let out: Refusal | null = null;
  try {
    algorithmById(algorithm);
    const x = randomInputs(tiny, { seed: 0 });
    startPass({ algorithm, problem: tiny, seed: 0, distribution: 'normal', blocks: { blockM: 16, blockN: 16 }, pass, features }, tiny, x, {
      blockM: 16,
      blockN: 16,
      features,
      trace: true,
    }).gen.next();
  } catch (e) {
    if (e instanceof ProblemError) out = { field: e.field, message: e.message };
  }
  cache.set(key, out);
  return out;
}
