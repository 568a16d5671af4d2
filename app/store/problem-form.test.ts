import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest } from './problem-form.ts';

describe('problem form', () => {
  it('turns the default form into a request the engine accepts', () => {
    const r = formToRequest(DEFAULT_FORM);
    expect(r.problem).toMatchObject({ nq: 64, nk: 64, d: 32, causal: false, dtype: 'fp32' });
    expect(r.blocks).toEqual({ blockM: 16, blockN: 16 });
  });
  it('names the bad field', () => {
    expect(() => formToRequest({ ...DEFAULT_FORM, nq: '6x' })).toThrow(/^nq: must be a whole number/);
    expect(() => formToRequest({ ...DEFAULT_FORM, softcap: '-1' })).toThrow(/^softcap:/);
    expect(() => formToRequest({ ...DEFAULT_FORM, distribution: 'outlier-row', outlierRow: '64' })).toThrow(/^outlier row: must be below nq/);
  });
  it('builds windows, ALiBi, softcap and on-chip memory blocks', () => {
    const r = formToRequest({ ...DEFAULT_FORM, windowLeft: '8', windowRight: '', alibi: true, softcap: '30', blockMode: 'sram', sramBytes: '8192' });
    expect(r.problem.window).toEqual({ left: 8, right: -1 });
    expect(r.problem.alibi).toBe('standard');
    expect(r.problem.softcap).toBe(30);
    expect(r.blocks).toEqual({ sramBytes: 8192 });
  });
  it('gives every query head the same sink logit', () => {
    const r = formToRequest({ ...DEFAULT_FORM, hq: '4', hk: '2', sink: '-0.5' });
    expect(r.problem.sinks).toEqual([-0.5, -0.5, -0.5, -0.5]);
    expect(() => formToRequest({ ...DEFAULT_FORM, sink: 'x' })).toThrow(/^sink: must be a number/);
  });
  it('asks for the backward pass only of algorithms that have one', () => {
    expect(formToRequest({ ...DEFAULT_FORM, algorithm: 'fa2', pass: 'backward' }).pass).toBe('backward');
    expect(formToRequest(DEFAULT_FORM).pass).toBeUndefined();
    expect(() => formToRequest({ ...DEFAULT_FORM, algorithm: 'flash-decoding', pass: 'backward' })).toThrow(/^pass: flash-decoding has no backward pass/);
  });
});
