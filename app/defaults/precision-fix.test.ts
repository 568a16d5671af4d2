// The fixes under the dtype for an FP8 problem the algorithm refuses: each lands on a form the engine takes.

import { expect, it } from 'vitest';
import { DEFAULT_FORM } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { lowPrecisionRefusal, precisionFixes } from './PrecisionFix.tsx';

const PANE = 'main';

it('FA4 in FP8 with an attention chunk: the first fix clears the chunk, and the form then runs', () => {
  useApp.getState().addPane(PANE, []);
  useApp.getState().setForm(PANE, { ...DEFAULT_FORM, algorithm: 'fa4', dtype: 'fp8e4m3', d: '64', dv: '64', attentionChunk: '16' });
  const form = useApp.getState().problem[PANE].form;
  const r = lowPrecisionRefusal(form);
  expect(r?.field).toBe('attentionChunk');
  const fixes = precisionFixes(form, r!);
  expect(fixes[0].label).toBe('Clear the attention chunk');
  fixes[0].apply(PANE);
  const fixed = useApp.getState().problem[PANE].form;
  expect(fixed.attentionChunk).toBe('');
  expect(lowPrecisionRefusal(fixed)).toBeNull();
});
