import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest, withAppliedFeatures } from './problem-form.ts';

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

  it('sends the FA3 switches the person set, the FP8-only ones on FP8 runs only', () => {
    const fp8 = { ...DEFAULT_FORM, algorithm: 'fa3', dtype: 'fp8e4m3' as const, switches: { pScale: '64', incoherent: false, reverseKv: false } };
    expect(formToRequest(fp8).features).toEqual({ pScale: 64, incoherent: false, reverseKv: false });
    expect(formToRequest({ ...fp8, dtype: 'bf16' }).features).toEqual({ reverseKv: false });
    expect(formToRequest({ ...fp8, algorithm: 'fa2', dtype: 'fp32' }).features).toBeUndefined();
    expect(() => formToRequest({ ...fp8, switches: { pScale: '3' } })).toThrow(/^switches\.pScale: must be a power of two/);
    expect(() => formToRequest({ ...fp8, switches: { seed: 'x' } })).toThrow(/^switches\.seed: must be a number/);
  });
  it('keeps the loaded run’s other switches, lets the form decide its own, and drops FP8 ones from a 16-bit run', () => {
    const applied = formToRequest({ ...DEFAULT_FORM, algorithm: 'fa3', dtype: 'fp8e4m3', switches: { pScale: '1' } });
    applied.features = { ...applied.features, pingpong: false };
    const next = formToRequest({ ...DEFAULT_FORM, algorithm: 'fa3', dtype: 'fp8e4m3', switches: { pScale: '256' } });
    expect(withAppliedFeatures(next, applied).features).toEqual({ pScale: 256, pingpong: false });
    const bf16 = formToRequest({ ...DEFAULT_FORM, algorithm: 'fa3', dtype: 'bf16' });
    expect(withAppliedFeatures(bf16, applied).features).toEqual({ pingpong: false });
    expect(withAppliedFeatures(formToRequest(DEFAULT_FORM), applied).features).toBeUndefined();
  });
});
