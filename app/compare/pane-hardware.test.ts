// A compare pane's hardware views ask the hardware model about the pane's own run: the shared
// problem's Hq/Hk, window and softcap, the pane's dtype and its kernel switches (a split count
// included), whatever problem and switches the view's request carries.

import { describe, expect, it } from 'vitest';
import { smScheduleFor } from '../../engine/algorithms/schedule-registry.ts';
import { DEFAULT_PROBLEM } from '../../engine/core/problem.ts';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { dispatchInputOf } from '../../engine/hw/dispatch-input.ts';
import { shapeOf } from '../../engine/hw/registry.ts';
import type { HwViewRequest } from '../../engine/hw/sm-view.ts';
import { DEFAULT_FORM, formToRequest, type ProblemForm } from '../store/problem-form.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { paneRequest } from './shared-request.ts';

async function paneSession(form: Partial<ProblemForm>, cfg: Partial<ComparePaneConfig>): Promise<DebuggerSession> {
  const base = formToRequest({ ...DEFAULT_FORM, ...form });
  const s = new DebuggerSession();
  await s.load(paneRequest(base, { algorithm: 'fa3', blockM: '', blockN: '', features: {}, views: [], ...cfg }));
  return s;
}

/** What a pane's timeline sends before it knows better: a dense stand-in problem and no switches. */
const view = (algorithm: string, gpu: string, features = {}): HwViewRequest => ({
  algorithm,
  gpu,
  problem: DEFAULT_PROBLEM,
  features,
  step: 0,
});

describe("a compare pane's hardware views take the pane's problem", () => {
  it('FA3: Hq/Hk, the window, softcap and the pane dtype reach the dispatch; the pane switches the schedule', async () => {
    const form = {
      hq: '4',
      hk: '2',
      nq: '128',
      nk: '256',
      d: '64',
      dv: '64',
      windowLeft: '64',
      windowRight: '0',
      softcap: '20',
      dtype: 'fp16' as const,
    };
    const s = await paneSession(form, { dtype: 'bf16', features: { pingpong: false } });
    const req = s.hwViewRequest(view('fa3', 'h100'));
    expect(dispatchInputOf(shapeOf(req.problem))).toMatchObject({
      hq: 4,
      hk: 2,
      nq: 128,
      nk: 256,
      window: { left: 64, right: 0 },
      softcap: 20,
      dtype: 'bf16',
    });
    expect(req.features).toEqual({ pingpong: false });
    const v = smScheduleFor(req, s.events()).view;
    expect(v.resources.upstream?.config).toMatchObject({ mask: 'local(64,0)' });
    expect(v.features.pingpong).toBe(false);
    // A switch the person sets in the timeline still wins over the pane's.
    expect(s.hwViewRequest(view('fa3', 'h100', { pingpong: true })).features.pingpong).toBe(true);
  });

  it("flash-decoding: the pane's split count is the schedule's", async () => {
    const s = await paneSession(
      { hq: '2', hk: '2', nq: '1', nk: '512', d: '64', dv: '64', dtype: 'fp16' },
      { algorithm: 'flash-decoding', features: { splits: 3 } },
    );
    const req = s.hwViewRequest(view('flash-decoding', 'a100'));
    expect(req.features.splits).toBe(3);
    const v = smScheduleFor(req, s.events()).view;
    expect(v.features.splits).toBe(3);
    // One CTA per (batch, head, split).
    expect(v.gridCtas).toBe(2 * 3);
  });
});
