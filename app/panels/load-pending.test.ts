import { describe, expect, it } from 'vitest';
import { formForAlgorithm } from '../defaults/form-defaults.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { formDiffersFromRun } from './load-pending.ts';

describe('a load pending after the form changes', () => {
  const applied = formToRequest(DEFAULT_FORM);

  it('the form of the loaded run is not pending', () => {
    expect(formDiffersFromRun(DEFAULT_FORM, applied)).toBe(false);
    expect(formDiffersFromRun(DEFAULT_FORM, undefined)).toBe(false);
  });

  it('another algorithm, shape, seed or mask is pending', () => {
    expect(formDiffersFromRun(formForAlgorithm(DEFAULT_FORM, 'fa3').form, applied)).toBe(true);
    expect(formDiffersFromRun({ ...DEFAULT_FORM, nq: '128' }, applied)).toBe(true);
    expect(formDiffersFromRun({ ...DEFAULT_FORM, seed: '7' }, applied)).toBe(true);
    expect(formDiffersFromRun({ ...DEFAULT_FORM, causal: !DEFAULT_FORM.causal }, applied)).toBe(true);
  });

  it('an unreadable form is pending, not an error', () => {
    expect(formDiffersFromRun({ ...DEFAULT_FORM, nq: 'abc' }, applied)).toBe(true);
  });
});
