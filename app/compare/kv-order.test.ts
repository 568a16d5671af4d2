import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { kvOrderNote, visitsKvBackwards } from './kv-order.ts';
import { FP8_STUDY } from './presets.ts';
import { paneRequest } from './shared-request.ts';

describe('K/V order of compare panes', () => {
  it('matches the order the engine steps each FP8 study pane in', async () => {
    const base = formToRequest({ ...DEFAULT_FORM, ...FP8_STUDY.form, nk: '256' });
    for (const cfg of [...FP8_STUDY.panes, { ...FP8_STUDY.panes[0], features: { reverseKv: false } }]) {
      const s = new DebuggerSession();
      await s.load(paneRequest(base, cfg));
      const kv = s
        .events()
        .filter((e) => e.kind === 'qk')
        .map((e) => e.tile.kvBlock);
      expect(visitsKvBackwards(cfg), cfg.algorithm).toBe(kv[0] > kv[kv.length - 1]);
    }
  });

  it('names the backward panes only when the orders are mixed', () => {
    expect(kvOrderNote(FP8_STUDY.panes)).toMatch(/^Panes 1, 2 and 3 visit K\/V blocks last to first.*Turn reverseKv off in those panes/);
    const fa3Only = FP8_STUDY.panes.slice(0, 3);
    expect(kvOrderNote(fa3Only)).toBeUndefined();
    const one = [FP8_STUDY.panes[0], FP8_STUDY.panes[3]];
    expect(kvOrderNote(one)).toMatch(/^Pane 1 visits K\/V.*in that pane/);
    expect(kvOrderNote([{ ...FP8_STUDY.panes[0], features: { reverseKv: false } }, FP8_STUDY.panes[3]])).toBeUndefined();
  });
});
