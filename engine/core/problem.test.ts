// Invalid problems are rejected with a ProblemError naming the field, by every algorithm,
// before it yields a single event.

import { describe, expect, it } from 'vitest';
import { fa1 } from '../algorithms/fa1/forward.ts';
import { fa2 } from '../algorithms/fa2/forward.ts';
import { standard } from '../algorithms/standard/forward.ts';
import { randomInputs } from './inputs.ts';
import { ProblemError, type AttentionProblem } from './problem.ts';

const OK: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 8, nk: 8, d: 4, dv: 4, causal: false, dtype: 'fp32' };
const X = randomInputs(OK, { seed: 1 });

const BAD: [string, Partial<AttentionProblem>][] = [
  ['nq', { nq: 0 }],
  ['nk', { nk: -3 }],
  ['d', { d: 2.5 }],
  ['batch', { batch: 0 }],
  ['hk', { hq: 3, hk: 2 }],
  ['scale', { scale: Infinity }],
  ['scale', { scale: NaN }],
  ['softcap', { softcap: 0 }],
  ['window.left', { window: { left: -2, right: 0 } }],
  ['attentionChunk', { attentionChunk: 0 }],
  ['attentionChunk', { attentionChunk: 2.5 }],
  ['sinks', { sinks: [1] }],
  ['sinks', { sinks: [1, NaN] }],
  ['alibi', { alibi: [0.5] }],
];

describe.each([standard, fa1, fa2].map((a) => [a.id, a] as const))('%s rejects invalid problems whole', (_id, algo) => {
  for (const [field, over] of BAD) {
    it(`${field}: ${JSON.stringify(over, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))}`, () => {
      const gen = algo.run({ ...OK, ...over }, X, { trace: true });
      let err: unknown;
      try {
        gen.next();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ProblemError);
      expect((err as ProblemError).field).toBe(field);
      expect((err as Error).message).toMatch(new RegExp(`^${field.replace('.', '\\.')}: `));
    });
  }
  it('rejects inputs whose sizes do not match the problem, naming the tensor', () => {
    const gen = algo.run({ ...OK, nk: 9 }, X, { trace: true });
    expect(() => gen.next()).toThrow(/^k: expected 36 elements/);
  });
  it('rejects bad block sizes', () => {
    expect(() => algo.run(OK, X, { trace: false, blockM: 0 }).next()).toThrow(/blockM: must be a positive integer/);
  });
});
