import { describe, expect, it } from 'vitest';
import { blockMask } from '../../../engine/core/block-mask.ts';
import { chapter14 } from './ch14-masks.ts';
import { lessonContext, RunCache } from './evaluate.ts';

const cache = new RunCache(4);

describe('chapter 14: the tiles a document mask empties', () => {
  it("the engine's skipped and mask-free tiles are the ones counted by hand from the document boundaries", () => {
    const req = chapter14.panes[0].preset;
    const ctx = lessonContext(chapter14, req, cache);
    const [empty, full] = chapter14.questions.map((q) => q.answer(ctx));
    // Boundaries at 24 and 40 with 16-wide tiles: Q tile 0 skips K/V tiles 2, 3; Q tile 1 skips 3;
    // Q tile 2 skips 0; Q tile 3 skips 0, 1. Only (0, 0) and (3, 3) lie inside one document.
    expect([empty, full]).toEqual([6, 2]);
    const bm = blockMask(req.problem, 16, 16);
    expect([bm.counts.empty, bm.counts.full]).toEqual([6, 2]);
  });
});
