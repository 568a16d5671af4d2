// The debugger tab's fit check sees the form's masks as the load runs them: FA4's d = 256 kernel
// refuses softcap (flash_attn/cute/interface.py@0251105a l. 1309-1331), which a check without the
// masks would pass.

import { expect, it } from 'vitest';
import { DEFAULT_FORM, type ProblemForm } from '../store/problem-form.ts';
import { formMisfit } from './form-defaults.ts';

const fa4d256: ProblemForm = {
  ...DEFAULT_FORM,
  algorithm: 'fa4',
  dtype: 'bf16',
  nq: '512',
  nk: '512',
  d: '256',
  dv: '256',
  blockM: '',
  blockN: '',
};

it('FA4 d 256 with a softcap: the misfit names upstream refusing softcap', () => {
  const m = formMisfit({ ...fa4d256, softcap: '20' }, 'b200');
  expect(m?.lines.join('\n')).toContain('SM100 forward with head_dim=256 does not support softcap');
});

it('FA4 d 256 without a softcap fits', () => {
  expect(formMisfit(fa4d256, 'b200')).toBeNull();
});

it('a mask field that does not parse leaves the check to the sizes (its own field says what is wrong)', () => {
  expect(formMisfit({ ...fa4d256, softcap: 'abc' }, 'b200')).toBeNull();
});
