// The hardware views' fix for a loaded run: none, without throwing, for a run whose pass has no
// hardware schedule (FA1's backward after FA2's), and the fp16 change for FA2's fp32 backward.

import { expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { loadedFitFix } from './FitFix.tsx';

const PANE = 'main';

function applyBackward(algorithm: string): void {
  useApp.getState().addPane(PANE, []);
  useApp.getState().setApplied(PANE, formToRequest({ ...DEFAULT_FORM, algorithm, pass: 'backward' }));
}

it('FA2 backward in fp32: the fix is the fp16 dtype its MMAs take', () => {
  applyBackward('fa2');
  expect(loadedFitFix(PANE, undefined)).toEqual([expect.objectContaining({ field: 'dtype', from: 'fp32', to: 'fp16' })]);
});

it('FA1 backward (no backward schedule): no fix, and no error, whichever GPU was chosen for FA2', () => {
  applyBackward('fa1');
  expect(loadedFitFix(PANE, undefined)).toEqual([]);
  expect(loadedFitFix(PANE, 'h100')).toEqual([]);
});
