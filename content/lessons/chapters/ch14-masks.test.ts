import { describe, expect, it } from 'vitest';
import { blockMask } from '../../../engine/core/block-mask.ts';
import { chapter14 } from './ch14-masks.ts';
import { lessonContext, RunCache } from './evaluate.ts';

const cache = new RunCache(4);

describe('chapter 14: the tiles a document mask empties', () => {
  it("the engine's skipped and mask-free tiles are the ones counted by hand from the document boundaries", () => {
    const req = chapter14.panes[0].preset;
    const ctx = lessonContext(chapter14, req, cache);
    const [empty, full] = chapter14.questions.slice(0, 2).map((q) => q.answer(ctx));
    // Boundaries at 24 and 40 with 16-wide tiles: Q tile 0 skips K/V tiles 2, 3; Q tile 1 skips 3;
    // Q tile 2 skips 0; Q tile 3 skips 0, 1. Only (0, 0) and (3, 3) lie inside one document.
    expect([empty, full]).toEqual([6, 2]);
    const bm = blockMask(req.problem, 16, 16);
    expect([bm.counts.empty, bm.counts.full]).toEqual([6, 2]);
  });

  it('with Prefix-LM loaded the partial tiles are the ones a hand count over the mask finds: the diagonal tiles but (0, 0)', () => {
    const prefix = chapter14.tryThis.find((t) => t.label.startsWith('Prefix-LM'))!.change(chapter14.panes[0].preset);
    const q = chapter14.questions.find((x) => x.id === 'partial-tiles')!;
    const partial: string[] = [];
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++) {
        let kept = 0;
        for (let r = 16 * i; r < 16 * i + 16; r++) for (let k = 16 * j; k < 16 * j + 16; k++) if (k < 16 || k <= r) kept++;
        if (kept > 0 && kept < 256) partial.push(`${i},${j}`);
      }
    expect(partial).toEqual(['1,1', '2,2', '3,3']);
    expect(q.answer(lessonContext(chapter14, prefix, cache))).toBe(partial.length);
    expect(q.explain(lessonContext(chapter14, prefix, cache), partial.length)).toContain('(1,1), (2,2), (3,3)');
  });
});
