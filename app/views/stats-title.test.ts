// The statistics titles against flash-decoding's trace: within a split the title names the
// split and the K/V blocks its own running m and ℓ cover, as those restart at every split.

import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { needChapter, runRequest } from '../../content/lessons/chapters/evaluate.ts';
import { mergedTitle, rowsLabel, statsTitle } from './stats-title.ts';

describe('statistics titles', () => {
  it('a one-row tile reads "row 0", a wider one "rows 0–7"', () => {
    expect(rowsLabel([0, 1])).toBe('row 0');
    expect(rowsLabel([0, 8])).toBe('rows 0–7');
  });

  it("flash-decoding: each split's title names the split and only its own K/V blocks", async () => {
    const req = needChapter(9).panes[0].preset;
    // Split 1's K/V blocks, read off the trace itself.
    const own = [
      ...new Set(
        runRequest(req)
          .events.filter((e) => e.split === 1 && e.tile.kvBlock >= 0)
          .map((e) => e.tile.kvBlock),
      ),
    ];
    expect(own.length).toBe(2);
    const s = new DebuggerSession();
    const { total } = await s.load(req);
    const titles: string[] = [];
    for (let k = 0; k < total; k++) {
      const f = await s.seek(k);
      if (f.event.split !== 1) continue;
      expect(f.history.split).toBe(1);
      for (const e of f.history.entries) expect(own, `block ${e.kvBlock} in split 1`).toContain(e.kvBlock);
      titles.push(statsTitle(f.history));
    }
    expect(titles).toContain(`Running max m and sum ℓ — split 1, Q tile 0 (row 0): K/V block ${own[0]} so far`);
    expect(titles).toContain(`Running max m and sum ℓ — split 1, Q tile 0 (row 0): K/V blocks ${own[0]}–${own[1]} so far`);
  });

  it('after the combine, the write names the splits it merged and the rows hold the merged LSE', async () => {
    const req = needChapter(9).panes[0].preset;
    const s = new DebuggerSession();
    const { total } = await s.load(req);
    const combineAt = runRequest(req).events.findIndex((e) => e.kind === 'combine');
    const combine = runRequest(req).events[combineAt];
    if (combine.kind !== 'combine') throw new Error('chapter 9 has a combine step');
    const splits = combine.splitLse[0].length;
    expect(splits).toBe(4);
    // Before the combine nothing is merged yet.
    expect((await s.seek(combineAt - 1)).history.merged).toBeUndefined();
    const at = await s.seek(combineAt);
    expect(mergedTitle(at.event, at.history.qBlock, at.history.rows, splits)).toBe(
      'Combine — Q tile 0 (row 0): 4 splits merged by their LSE',
    );
    const last = await s.seek(total - 1);
    expect(last.event.kind).toBe('write');
    expect(last.history.merged).toEqual({ splitLse: combine.splitLse, lse: combine.lse });
    expect(mergedTitle(last.event, last.history.qBlock, last.history.rows, splits)).toBe(
      'Write O and LSE — Q tile 0 (row 0): the 4 splits merged',
    );
  });
});
