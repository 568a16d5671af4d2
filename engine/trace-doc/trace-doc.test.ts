// TRACE.md's examples are real: each `<!-- example KEY -->` block must be exactly the
// event the engine produces today for the documented problem, and every event kind the
// three algorithms emit has one.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fa1 } from '../algorithms/fa1/forward.ts';
import { fa2 } from '../algorithms/fa2/forward.ts';
import { standard } from '../algorithms/standard/forward.ts';
import { randomInputs } from '../core/inputs.ts';
import { runToEnd } from '../run.ts';
import { traceExamples } from './examples.ts';
import { fromJsonLine } from '../trace/jsonl.ts';

const doc = readFileSync(new URL('../TRACE.md', import.meta.url), 'utf8');
const blocks = new Map([...doc.matchAll(/<!-- example (\S+) -->\n```json\n(.*)\n```/g)].map((m) => [m[1], m[2]]));

describe('TRACE.md examples', () => {
  const generated = traceExamples();
  it('documents every generated example', () => {
    expect([...blocks.keys()].sort()).toEqual(Object.keys(generated).sort());
  });
  for (const [key, line] of Object.entries(generated)) {
    it(`${key} matches the engine`, () => {
      expect(blocks.get(key)).toBe(line);
      expect(fromJsonLine(blocks.get(key)!)).toEqual(fromJsonLine(line));
    });
  }
  it('covers every kind except combine (which only split algorithms emit)', () => {
    const kinds = new Set([...blocks.values()].map((l) => fromJsonLine<{ kind: string }>(l).kind));
    const backward = ['dk', 'dp', 'dq', 'dqconvert', 'ds', 'dsum', 'dv', 'recompute'];
    expect([...kinds].sort()).toEqual(
      [...backward, 'exp', 'load', 'mask', 'normalize', 'pv', 'qk', 'rescale', 'rowmax', 'rowsum', 'write'].sort(),
    );
  });
});

describe('TRACE.md line ids', () => {
  it.each([standard, fa1, fa2].map((a) => [a.id, a] as const))('%s: the documented ids are exactly those emitted', (id, algo) => {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${id}\` | \`${id}.`));
    expect(row).toBeDefined();
    const documented = [...row!.matchAll(/`([a-z0-9]+\.[A-Za-z]+)`/g)].map((m) => m[1]);
    // A causal problem with Nq > Nk and several blocks visits every line, the mask included.
    const p = { batch: 1, hq: 1, hk: 1, nq: 9, nk: 6, d: 2, dv: 2, causal: true, dtype: 'fp32' as const };
    const seen: string[] = [];
    runToEnd(algo, p, randomInputs(p, { seed: 2 }), {
      blockM: 3,
      blockN: 3,
      trace: true,
      onEvent: (e) => void (seen.includes(e.line) || seen.push(e.line)),
    });
    expect([...seen].sort()).toEqual([...documented].sort());
  });
});
