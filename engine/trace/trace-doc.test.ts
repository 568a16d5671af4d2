// TRACE.md's examples are real: each `<!-- example KEY -->` block must be exactly the
// event the engine produces today for the documented problem, and every event kind the
// three algorithms emit has one.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { traceExamples } from './examples.ts';
import { fromJsonLine } from './jsonl.ts';

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
    expect([...kinds].sort()).toEqual(['exp', 'load', 'mask', 'normalize', 'pv', 'qk', 'rescale', 'rowmax', 'rowsum', 'write']);
  });
});
