import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, panelSwitches, effectiveSwitches, forwardOnlySwitches, formToRequest, withAppliedFeatures } from './problem-form.ts';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { formForAlgorithm } from '../defaults/form-defaults.ts';
import { SAGE_FEATURES } from '../../engine/algorithms/sage/forward.ts';
import { ALGORITHMS } from '../../engine/algorithms/registry.ts';
import { passBlocks } from '../../engine/request.ts';

describe('problem form', () => {
  it('turns the default form into a request the engine accepts', () => {
    const r = formToRequest(DEFAULT_FORM);
    expect(r.problem).toMatchObject({ nq: 64, nk: 64, d: 32, causal: false, dtype: 'fp32' });
    expect(r.blocks).toEqual({ blockM: 16, blockN: 16 });
  });
  it('leaves a kernel its own tile: the load resolves it for the problem sent (FA3 causal d = 128 runs 128 × 128)', () => {
    const fa3 = formForAlgorithm({ ...DEFAULT_FORM, d: '128', dv: '128' }, 'fa3', ['d', 'dv']).form;
    expect([fa3.blockM, fa3.blockN]).toEqual(['', '']);
    const req = formToRequest({ ...fa3, causal: true });
    expect(req.blocks).toEqual({});
    // tile_size.h: causal hdim 128 takes 128 × 128, non-causal 128 × 176.
    expect(passBlocks(req, req.problem)).toEqual({ blockM: 128, blockN: 128 });
    expect(passBlocks(formToRequest(fa3), formToRequest(fa3).problem)).toEqual({ blockM: 128, blockN: 176 });
    // One side typed: that side is the person's, the other the kernel's.
    const typed = formToRequest({ ...fa3, blockM: '64', blockN: 'auto' });
    expect(typed.blocks).toEqual({ blockM: 64 });
    expect(() => formToRequest({ ...fa3, blockN: '0' })).toThrow(/^Bc: must be at least 1/);
    // The exact algorithms start on the table's teaching tile, written out.
    expect([formForAlgorithm(fa3, 'fa2').form.blockM, formForAlgorithm(fa3, 'fa2').form.blockN]).toEqual(['16', '16']);
  });
  it('names the bad field', () => {
    expect(() => formToRequest({ ...DEFAULT_FORM, nq: '6x' })).toThrow(/^nq: must be a whole number/);
    expect(() => formToRequest({ ...DEFAULT_FORM, softcap: '-1' })).toThrow(/^softcap:/);
    expect(() => formToRequest({ ...DEFAULT_FORM, distribution: 'outlier-row', outlierRow: '64' })).toThrow(
      /^outlier row: must be below nq/,
    );
  });
  it('builds windows, ALiBi, softcap and on-chip memory blocks', () => {
    const r = formToRequest({
      ...DEFAULT_FORM,
      windowLeft: '8',
      windowRight: '',
      alibi: true,
      softcap: '30',
      blockMode: 'sram',
      sramBytes: '8192',
    });
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
    expect(() => formToRequest({ ...DEFAULT_FORM, algorithm: 'flash-decoding', pass: 'backward' })).toThrow(
      /^pass: flash-decoding has no backward pass/,
    );
  });

  it('a switch of the forward kernel only (FA3’s reverseKv) is never sent to the backward, so Backward loads', async () => {
    const fa3 = {
      ...formForAlgorithm({ ...DEFAULT_FORM, nq: '32', nk: '32', d: '16', dv: '16' }, 'fa3', ['nq', 'nk', 'd', 'dv']).form,
      switches: { reverseKv: false },
    };
    const forward = formToRequest(fa3);
    expect(forward.features).toEqual({ reverseKv: false });
    // The form keeps the person's setting; neither it nor the loaded forward's is sent with the backward.
    const backward = withAppliedFeatures(formToRequest({ ...fa3, pass: 'backward' }, forward), forward);
    expect(backward.pass).toBe('backward');
    expect(backward.features).toBeUndefined();
    await expect(new DebuggerSession().load(backward)).resolves.toMatchObject({ pass: 'backward' });
    // The backward's own switches still travel from the loaded forward.
    const overlapOff = { ...forward, features: { reverseKv: false, intraOverlap: false } };
    expect(withAppliedFeatures(formToRequest({ ...fa3, pass: 'backward' }, overlapOff), overlapOff).features).toEqual({
      intraOverlap: false,
    });
    expect(panelSwitches('fa3', 'backward')).toEqual([]);
    expect(forwardOnlySwitches('fa3').map((sw) => sw.key)).toContain('reverseKv');
  });
  it('sends the FA3 switches the person set, the FP8-only ones on FP8 runs only', () => {
    const fp8 = {
      ...DEFAULT_FORM,
      algorithm: 'fa3',
      dtype: 'fp8e4m3' as const,
      switches: { pScale: '64', incoherent: false, reverseKv: false },
    };
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

  it('sends sage’s version and smoothK, and qPerWarp with version 2 only', () => {
    const sage = formForAlgorithm(DEFAULT_FORM, 'sage').form;
    expect(formToRequest({ ...sage, switches: { version: '2', qPerWarp: false, smoothK: false } }).features).toEqual({
      version: 2,
      qPerWarp: false,
      smoothK: false,
    });
    // On version 1 the engine refuses qPerWarp: the form leaves it out instead of failing the load.
    expect(formToRequest({ ...sage, switches: { version: '1', qPerWarp: false } }).features).toEqual({ version: 1 });
    expect(formToRequest({ ...sage, switches: { qPerWarp: false } }).features).toBeUndefined();
    expect(() => formToRequest({ ...sage, switches: { version: '3' } })).toThrow(/^switches\.version: must be 1 .* or 2 .*got 3/);
    expect(() => formToRequest({ ...sage, switches: { smoothK: 'yes' as unknown as boolean } })).toThrow(
      /^switches\.smoothK: must be on or off/,
    );
  });
  it('lets the loaded run’s sage version decide whether qPerWarp is sent', () => {
    const sage = formForAlgorithm(DEFAULT_FORM, 'sage').form;
    const v2 = formToRequest({ ...sage, switches: { version: '2' } });
    // The form sets only qPerWarp; the version comes from the run loaded before.
    const next = formToRequest({ ...sage, switches: { qPerWarp: false } }, v2);
    expect(withAppliedFeatures(next, v2).features).toEqual({ version: 2, qPerWarp: false });
    // Back to version 1: the loaded run's qPerWarp is dropped with it.
    const loadedV2 = { ...v2, features: { version: 2, qPerWarp: false } };
    const v1 = formToRequest({ ...sage, switches: { version: '1' } }, loadedV2);
    expect(withAppliedFeatures(v1, loadedV2).features).toEqual({ version: 1 });
  });
  it('shows each switch as the next load runs it: set, else loaded, else the default', () => {
    expect(effectiveSwitches('sage', {}, undefined)).toEqual({ version: SAGE_FEATURES.version.default, smoothK: true, qPerWarp: true });
    expect(effectiveSwitches('sage', { smoothK: false }, { version: 2, smoothK: true })).toEqual({
      version: 2,
      smoothK: false,
      qPerWarp: true,
    });
    // Half-typed text does not hide the loaded value from the other switches' conditions.
    expect(effectiveSwitches('sage', { version: '' }, { version: 2 }).version).toBe(2);
    expect(effectiveSwitches('fa2', { version: '2' }, undefined)).toEqual({});
  });
  it('sends fmha-v2’s fp16 accumulation on fp16 runs only, and FA4’s threshold with lazy rescale on', () => {
    const fmha = { ...formForAlgorithm(DEFAULT_FORM, 'fmha-v2').form, switches: { fp16Accumulation: true } };
    expect(formToRequest({ ...fmha, dtype: 'fp16' }).features).toEqual({ fp16Accumulation: true });
    expect(formToRequest({ ...fmha, dtype: 'bf16' }).features).toBeUndefined();
    const fa4 = { ...formForAlgorithm(DEFAULT_FORM, 'fa4').form, switches: { rescaleThreshold: '4' } };
    expect(formToRequest(fa4).features).toEqual({ rescaleThreshold: 4 });
    expect(formToRequest({ ...fa4, switches: { lazyRescale: false, rescaleThreshold: '4' } }).features).toEqual({ lazyRescale: false });
  });
  it('choosing another algorithm keeps only the switches it has, so every choice loads', () => {
    const fa3 = { ...formForAlgorithm(DEFAULT_FORM, 'fa3').form, switches: { reverseKv: false, pScale: '64' } };
    const sage = formForAlgorithm(fa3, 'sage').form;
    expect(sage.switches).toEqual({});
    expect(formToRequest(sage).features).toBeUndefined();
    const sage2 = { ...sage, switches: { version: '2', smoothK: false } };
    expect(formForAlgorithm(sage2, 'fa3').form.switches).toEqual({});
    expect(formForAlgorithm(sage2, 'sage').form.switches).toEqual({ version: '2', smoothK: false });
    // Every algorithm's panel switches at their defaults make a request its engine features accept.
    for (const id of ALGORITHMS.map((a) => a.id)) {
      const sws = panelSwitches(id);
      const form = formForAlgorithm(DEFAULT_FORM, id).form;
      const switches = Object.fromEntries(
        sws.map((sw) => [sw.key, typeof sw.spec.default === 'boolean' ? sw.spec.default : String(sw.spec.default)]),
      );
      expect(() => formToRequest({ ...form, switches }), id).not.toThrow();
    }
  });
});
