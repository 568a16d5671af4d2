// Chapter 10 against float64 and closed forms: D is dO · O of the reference forward, the
// standard backward's P traffic and FA2's atomic adds are the counts the algorithms imply,
// and every step link of the text lands on the kind of step it names.

import { describe, expect, it } from 'vitest';
import { randomGradOutput } from '../../../engine/backward/grad-output.ts';
import { randomInputs } from '../../../engine/core/inputs.ts';
import { referenceAttention } from '../../../engine/core/reference.ts';
import { chapterByNumber } from './index.ts';
import { lessonContext, locateBlock, locateTarget, RunCache, runRequest } from './evaluate.ts';

const cache = new RunCache(10);
const c = chapterByNumber(10)!;
const req = c.panes[0].preset;
const p = req.problem;
const answer = (id: string, r = req) => c.questions.find((q) => q.id === id)!.answer(lessonContext(c, r, cache));

describe('chapter 10: the backward pass', () => {
  it('D₀ is dO₀ · O₀ with O from the float64 forward, stored in the preset dtype', () => {
    const x = randomInputs(p, { seed: req.seed, distribution: req.distribution });
    const o = referenceAttention(p, x).o;
    const dO = randomGradOutput(p, req.seed);
    let want = 0;
    // The forward stores O in the problem's dtype; D is the product with what was stored.
    let bound = 0;
    for (let c2 = 0; c2 < p.dv; c2++) {
      want += dO[c2] * o[c2];
      bound += Math.abs(dO[c2] * o[c2]);
    }
    expect(p.dtype).toBe('fp16');
    expect(Math.abs(Number(answer('d-row')) - want)).toBeLessThan(bound * 2 ** -10);
  });

  it('the standard backward reads P twice (passes 1 and 3): 2 · Nq · Nk · 2 bytes in fp16', () => {
    expect(answer('p-bytes')).toBe(2 * p.nq * p.nk * 2);
    // FA2 reads none of it.
    expect(runRequest(req).result.counters.hbmRead.P ?? 0).toBe(0);
  });

  it('FA2 adds Br × d values per visible tile: Tc · Nq · d without a mask, fewer with one', () => {
    const tc = p.nk / req.blocks.blockN!;
    expect(answer('atomic-adds')).toBe(tc * p.nq * p.d);
    const causal = { ...req, problem: { ...p, causal: true } };
    const tiles = (tc * (tc + 1)) / 2;
    expect(answer('atomic-adds', causal)).toBe(tiles * req.blocks.blockM! * p.d);
  });

  it('the dQ row block 1 receives the adds of every worker, of workers 0 and 1 only when causal (worker j starts at row block j)', () => {
    const tc = p.nk / req.blocks.blockN!;
    expect(answer('row-block-workers')).toBe(tc);
    expect(answer('row-block-workers', { ...req, problem: { ...p, causal: true } })).toBe(2);
  });

  it("after the Causal change the FA2 pane stands at worker 1's first add, at row block 1, where no other worker meets it", () => {
    const causal = c.tryThis.find((t) => t.label === 'Causal')!.change(req);
    const t = locateTarget(c, 0, causal, cache);
    expect(t.describe).not.toContain('no step matching');
    expect(t.describe).toBe(c.panes[0].target.fallback!.describe);
    const e = runRequest(causal).events[t.step];
    expect(e.kind === 'dq' && [e.worker, e.tile.qBlock, e.collidesWith.length, e.atomic]).toEqual([1, 1, 0, true]);
    // The preset still opens at a colliding add.
    expect(locateTarget(c, 0, req, cache).exact).toBe(true);
  });

  it('every step link of the text finds its step in the preset, of the kind it names', () => {
    const kinds: Record<string, string> = {
      'FA2 recomputing its first P tile': 'recompute',
      'the standard backward reading the stored P': 'load',
      'the preprocessing step that computes D for row block 0': 'dsum',
      'the first write of dK_j and dV_j, after worker 0 has seen every Q block': 'write',
      'an atomic add into dQ that other workers would make at the same moment': 'dq',
    };
    let links = 0;
    c.blocks.forEach((b, i) => {
      if (b.kind !== 'goto') return;
      links++;
      const run = runRequest(c.panes[b.pane].preset);
      const { step } = locateBlock(c, i, c.panes[b.pane].preset, cache);
      expect(step, b.label).toBeGreaterThanOrEqual(0);
      expect(run.events[step].kind, b.label).toBe(kinds[b.label]);
    });
    expect(links).toBe(Object.keys(kinds).length);
  });
});
