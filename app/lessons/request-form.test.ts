import { describe, expect, it } from 'vitest';
import { CHAPTERS } from '../../content/lessons/chapters/index.ts';
import { formToRequest } from '../store/problem-form.ts';
import { requestToForm } from './request-form.ts';

describe('lesson presets in the problem form', () => {
  it('every preset survives the form and back, so "Load problem" in a lesson pane reloads the same problem', () => {
    for (const c of CHAPTERS)
      for (const pane of c.panes) {
        const { features: _features, ...plain } = pane.preset;
        expect(formToRequest(requestToForm(pane.preset)), `${c.slug} ${pane.preset.algorithm}`).toEqual(plain);
      }
  });
});
