import { describe, expect, it } from 'vitest';
import { diffState, pairState, type PaneOutcome } from './diff-state.ts';

const chunk = (a: string) => ({ algorithm: a, ready: false, refusal: `attentionChunk: ${a} has no attention chunk.` });

describe('diffState: what the difference table shows', () => {
  it('names every pane and its reason when no pane could run the problem, instead of waiting', () => {
    const s = diffState([chunk('fa1'), chunk('fa2')]);
    expect(s).toEqual({
      kind: 'none',
      message:
        'No pane could run this problem: pane 1 (fa1): attentionChunk: fa1 has no attention chunk; pane 2 (fa2): attentionChunk: fa2 has no attention chunk.',
    });
  });

  it('compares the panes that ran and names the ones that refused', () => {
    const panes: PaneOutcome[] = [chunk('fa1'), { algorithm: 'standard', ready: true }, { algorithm: 'fa3', ready: true }];
    expect(diffState(panes)).toEqual({
      kind: 'table',
      shown: [1, 2],
      notRun: 'Not in the table: pane 1 (fa1): attentionChunk: fa1 has no attention chunk.',
    });
  });

  it('waits only while a pane that runs has no result yet', () => {
    expect(
      diffState([
        { algorithm: 'fa1', ready: true },
        { algorithm: 'fa2', ready: false },
      ]).kind,
    ).toBe('waiting');
    expect(
      diffState([
        { algorithm: 'fa1', ready: true },
        { algorithm: 'fa2', ready: true },
      ]),
    ).toEqual({ kind: 'table', shown: [0, 1] });
  });
});

describe('pairState: the output difference of two panes', () => {
  it('names a refused pane of the pair rather than waiting for it', () => {
    const s = pairState([chunk('fa1'), { algorithm: 'standard', ready: true }], 0, 1);
    expect(s).toEqual({
      kind: 'refused',
      message: 'Not run: pane 1 (fa1): attentionChunk: fa1 has no attention chunk. Pick another pair or change the pane.',
    });
    expect(
      pairState(
        [
          { algorithm: 'fa1', ready: true },
          { algorithm: 'fa2', ready: false },
        ],
        0,
        1,
      ).kind,
    ).toBe('waiting');
  });
});
