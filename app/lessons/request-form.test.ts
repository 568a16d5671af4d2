import { describe, expect, it } from 'vitest';
import { CHAPTERS } from '../../content/lessons/chapters/index.ts';
import { formToRequest, requestToForm } from '../store/problem-form.ts';

describe('lesson presets in the problem form', () => {
  it('every preset survives the form and back, so "Load problem" in a lesson pane reloads the same problem', () => {
    for (const c of CHAPTERS)
      for (const pane of c.panes) {
        const { features: _features, ...plain } = pane.preset;
        expect(formToRequest(requestToForm(pane.preset)), `${c.slug} ${pane.preset.algorithm}`).toEqual(plain);
      }
  });

  it('FP8 presets keep their dtype and input distribution in the form (the fa3 switches travel with the applied request)', () => {
    // Chapter 12 (outliers) and 13 (the P cast on sinks, SageAttention) hold the low-precision panes.
    const panes = CHAPTERS.filter((c) => c.number === 12 || c.number === 13).flatMap((c) => c.panes);
    const fp8 = panes.filter((pane) => pane.preset.algorithm === 'fa3');
    const dists = fp8.map((pane) => {
      const f = requestToForm(pane.preset);
      expect(f.dtype).toBe('fp8e4m3');
      return formToRequest(f).distribution;
    });
    expect(dists).toEqual(['fa3-outliers', 'sink']);
    // The SageAttention pane: its algorithm and fp16 make the round trip (its switches travel with the applied request, as fa3's do).
    const sagePane = panes.find((pane) => pane.preset.algorithm === 'sage')!;
    const back = formToRequest(requestToForm(sagePane.preset));
    expect(back.problem.dtype).toBe('fp16');
    expect(back.algorithm).toBe('sage');
  });

  it('a sink logit shared by every head shows in the form and comes back', () => {
    const base = CHAPTERS[0].panes[0].preset;
    const req = { ...base, problem: { ...base.problem, sinks: [-0.5] } };
    expect(requestToForm(req).sink).toBe('-0.5');
    expect(formToRequest(requestToForm(req)).problem.sinks).toEqual([-0.5]);
  });
});
