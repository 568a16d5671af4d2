// Which algorithm and pass can run a problem. The dtype, head dims, modifiers and pass are
// answered from the descriptor's declaration (engine/algorithms/capabilities.ts) without
// running anything; only switches, whose rules live with each algorithm's feature reader,
// are still asked of the engine by starting a tiny pass. A refusal names the field at fault,
// which the problem panel turns into a one-click fix.

import { descriptorOf } from './algorithms/registry.ts';
import { startPass } from './request.ts';
import type { Pass } from './pass.ts';
import { randomInputs } from './core/inputs.ts';
import { ProblemError, type AttentionProblem, validateProblem } from './core/problem.ts';
import { declaredRefusal } from './algorithms/capabilities.ts';
import { requireBackwardMask } from './backward/setup.ts';

export interface Refusal {
  /** The problem field the engine refused: 'dtype', 'alibi', 'sinks', 'dv', 'pass', … */
  field: string;
  message: string;
}

const cache = new Map<string, Refusal | null>();

/**
 * The refusal of `problem` (only its dtype, head dims, mask and modifiers matter: the sizes
 * are shrunk to one 16×16 head) on `algorithm`'s `pass`, or null when it is accepted.
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
    const descriptor = descriptorOf(algorithm);
    validateProblem(tiny);
    const declared = declaredRefusal(descriptor, pass, tiny);
    if (declared) throw new ProblemError(declared.field, declared.message);
    if (pass === 'backward') requireBackwardMask(tiny);
    if (!features || Object.keys(features).length === 0) {
      cache.set(key, null);
      return null;
    }
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
