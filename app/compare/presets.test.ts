// The FP8 study preset, run through the same sessions and requests its panes use: every
// pane's error figures against a float64 attention written here on the unrounded draws, and
// the FP8 ordering the preset is there to show.

import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { randomInputs } from '../../engine/core/inputs.ts';
import { DEFAULT_FORM, formToRequest, type ProblemForm } from '../store/problem-form.ts';
import { FP8_STUDY, presetForm } from './presets.ts';
import { paneRequest } from './shared-request.ts';
import { paneRefusal } from './pane-dtype.ts';

/** softmax(Q·Kᵀ/√d)·V in float64, one row at a time, for one head. */
function attention64(q: Float32Array, k: Float32Array, v: Float32Array, nq: number, nk: number, d: number): Float64Array {
  const o = new Float64Array(nq * d);
  const w = new Float64Array(nk);
  for (let i = 0; i < nq; i++) {
    let max = -Infinity;
    for (let j = 0; j < nk; j++) {
      let s = 0;
      for (let c = 0; c < d; c++) s += q[i * d + c] * k[j * d + c];
      w[j] = s / Math.sqrt(d);
      max = Math.max(max, w[j]);
    }
    let sum = 0;
    for (let j = 0; j < nk; j++) sum += w[j] = Math.exp(w[j] - max);
    for (let j = 0; j < nk; j++) for (let c = 0; c < d; c++) o[i * d + c] += (w[j] / sum) * v[j * d + c];
  }
  return o;
}

describe('FP8 study preset', () => {
  const base = formToRequest({ ...DEFAULT_FORM, ...FP8_STUDY.form });
  const { nq, nk, d } = base.problem;
  const x = randomInputs({ ...base.problem, dtype: 'fp32' }, { seed: base.seed, distribution: 'fa3-outliers' });
  const ref = attention64(x.q, x.k, x.v, nq, nk, d);

  it('runs every pane; max abs, RMSE and rel-L1 equal those against float64 of the unrounded draws; block + incoherent beats per tensor', async () => {
    const errs = [];
    for (const cfg of FP8_STUDY.panes) {
      expect(paneRefusal(cfg, base)).toBeUndefined();
      const s = new DebuggerSession();
      await s.load(paneRequest(base, cfg));
      const c = await s.compareData('h100');
      let max = 0;
      let sq = 0;
      let l1 = 0;
      let r1 = 0;
      for (let i = 0; i < ref.length; i++) {
        const e = Math.abs(c.output[i] - ref[i]);
        max = Math.max(max, e);
        sq += e * e;
        l1 += e;
        r1 += Math.abs(ref[i]);
      }
      expect(c.error.maxAbs).toBeCloseTo(max, 12);
      expect(c.error.rmse / Math.sqrt(sq / ref.length)).toBeCloseTo(1, 9);
      expect(c.error.relL1 / (l1 / r1)).toBeCloseTo(1, 9);
      errs.push(c.error);
    }
    const [fp16, perTensor, blockIncoherent, sage2] = errs;
    // Measured RMSE: fp16 1.44e-4, per tensor 1.51e-2, block + incoherent 8.81e-3, 1.71× lower (FA3 paper at N = 1024: 1.9e-4, 2.4e-2, 9.1e-3).
    expect(fp16.rmse).toBeLessThan(1e-3);
    expect(perTensor.rmse).toBeGreaterThan(1e-2);
    expect(blockIncoherent.rmse).toBeLessThan(perTensor.rmse / 1.5);
    expect(fp16.rmse).toBeLessThan(blockIncoherent.rmse / 20);
    // SageAttention 2 (INT8 Q·Kᵀ with smoothed K, FP8 P·V): 1.27e-2, in the FP8 range and above fp16.
    expect(FP8_STUDY.panes[3].algorithm).toBe('sage');
    expect(sage2.rmse).toBeGreaterThan(fp16.rmse * 10);
    expect(sage2.rmse).toBeLessThan(5e-2);
  });
});

describe('FP8 study preset over a Debugger tab with switches set', () => {
  // The Debugger tab on FA3 FP8 with every panel switch moved off its default.
  const left: ProblemForm = {
    ...DEFAULT_FORM,
    algorithm: 'fa3',
    dtype: 'fp8e4m3',
    switches: { blockQuant: false, incoherent: false, pScale: '0.5', reverseKv: false, seed: '7' },
  };

  it('sends none of them with its shared problem, which loads', async () => {
    const form = presetForm(left, FP8_STUDY);
    const req = formToRequest(form);
    // FP8-only switches were never sent with the preset's fp16 (switchFeatures drops them); the load succeeds either way.
    const s = new DebuggerSession();
    await s.load(req);
    // reverseKv is not FP8-only: without the preset's `switches: {}` it would be sent as false.
    expect(req.features).toBeUndefined();
    expect(form.switches).toEqual({});
    // FA3 visits K/V blocks last to first by default (reverseKv on): the preset's shared run does too.
    const kv = s
      .events()
      .filter((e) => e.kind === 'qk')
      .map((e) => e.tile.kvBlock);
    expect(kv[0]).toBe(Math.max(...kv));
  });
});
