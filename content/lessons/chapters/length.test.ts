// A chapter a student reads in one sitting: at most 1,200 words of the text it always shows
// (paragraphs, headings, boxes, questions, "Try this", switches, a folded paragraph's summary), an inline formula as one word.

import { describe, expect, it } from 'vitest';
import { CHAPTERS } from './index.ts';
import type { Chapter } from './types.ts';

const MAX_WORDS = 1200;

function wordCount(text: string): number {
  return text
    .replace(/\$[^$]*\$/g, ' x ')
    .split(/\s+/)
    .filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
}

function shownText(c: Chapter): string[] {
  // A folded paragraph shows its summary only.
  const blocks = c.blocks.flatMap((b) => (b.kind === 'more' ? [b.summary] : 'text' in b ? [b.text] : 'label' in b ? [b.label] : []));
  return [
    c.title,
    ...blocks,
    ...c.questions.map((q) => q.prompt),
    ...c.tryThis.map((t) => `${t.label} ${t.look}`),
    ...(c.toggles ?? []).map((t) => `${t.label} ${t.explain}`),
  ];
}

describe('chapter length', () => {
  it('counts words, an inline formula as one', () => {
    expect(wordCount('The running sum $\\ell = \\sum_j e^{s_j - m}$ grows.')).toBe(5);
  });

  for (const c of CHAPTERS)
    it(`chapter ${c.number} shows at most ${MAX_WORDS} words`, () => {
      expect(shownText(c).reduce((n, t) => n + wordCount(t), 0)).toBeLessThanOrEqual(MAX_WORDS);
    });
});
