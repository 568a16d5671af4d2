// The pane dtype table against the engine itself: an algorithm is refused FP8 in compare
// mode exactly when the engine refuses to run it, and each offered fix lands on a
// configuration the engine runs.

import { describe, expect, it } from 'vitest';
import { ALGORITHMS, algorithmById } from '../../engine/algorithms/registry.ts';
import { DEFAULT_PROBLEM, type AttentionProblem, type DType } from '../../engine/problem.ts';
import { randomInputs } from '../../engine/inputs.ts';
import { runToEnd } from '../../engine/run.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { paneRequest } from './shared-request.ts';
import { dtypeFixes, dtypeRefusal, featuresFor, paneRefusal } from './pane-dtype.ts';
import type { ComparePaneConfig } from './pane-config.ts';

// A small problem every algorithm takes (flash-decoding included: one query row).
const p: AttentionProblem = { ...DEFAULT_PROBLEM, nq: 16, nk: 32, d: 16, dv: 16 };

function engineRuns(algorithm: string, dtype: DType): boolean {
  const q = { ...p, dtype, nq: algorithm === 'flash-decoding' ? 1 : p.nq };
  try {
    runToEnd(algorithmById(algorithm), q, randomInputs(q, { seed: 1 }), { blockM: 16, blockN: 16 });
    return true;
  } catch (e) {
    if ((e as { field?: string }).field === 'dtype') return false;
    throw e;
  }
}

describe('compare pane dtype', () => {
  it('refuses FP8 for exactly the algorithms whose forward the engine refuses it', () => {
    for (const a of ALGORITHMS) {
      for (const dtype of ['fp8e4m3', 'fp8e5m2', 'fp16'] as const) {
        expect(dtypeRefusal(a.id, dtype) === undefined, `${a.id} ${dtype}`).toBe(engineRuns(a.id, dtype));
      }
    }
    expect(dtypeRefusal('fa3', 'fp8e4m3', 'backward')).toMatch(/backward pass has no FP8 path/);
  });

  it('every fix offered for a refused pane is a configuration the engine runs', () => {
    const base = formToRequest({ ...DEFAULT_FORM, d: '16', dv: '16', nq: '16', nk: '32' });
    for (const a of ALGORITHMS.filter((x) => x.id !== 'flash-decoding')) {
      const cfg: ComparePaneConfig = { algorithm: a.id, dtype: 'fp8e4m3', blockM: '16', blockN: '16', features: {}, views: [] };
      const fixes = dtypeFixes(a.id, 'fp8e4m3', 'forward', 'fp32');
      if (a.id === 'fa3') {
        expect(fixes).toEqual([]);
        continue;
      }
      expect(fixes.length).toBeGreaterThanOrEqual(2);
      for (const f of fixes) {
        const fixed = { ...cfg, ...f.patch };
        expect(paneRefusal(fixed, base), `${a.id}: ${f.label}`).toBeUndefined();
        const req = paneRequest(base, fixed);
        expect(() => runToEnd(algorithmById(req.algorithm), req.problem, randomInputs(req.problem, { seed: 1 }), { ...req.blocks, features: req.features })).not.toThrow();
      }
    }
    // With an FP8 shared dtype, "run in 16-bit" sets the pane's own fp16 (the shared one would be refused again).
    expect(dtypeFixes('fa2', 'fp8e4m3', 'forward', 'fp8e4m3')[0].patch).toEqual({ dtype: 'fp16' });
    // With a 16-bit shared dtype it drops the pane's own dtype.
    expect(dtypeFixes('fa2', 'fp8e4m3', 'forward', 'bf16')[0].patch).toEqual({ dtype: undefined });
  });

  it("FP8-only features are kept in the pane but sent with an FP8 dtype only (fa3 refuses them in fp16)", () => {
    const f = { blockQuant: false, incoherent: false, pingpong: false };
    expect(featuresFor('fa3', 'fp8e4m3', f)).toEqual(f);
    expect(featuresFor('fa3', 'fp16', f)).toEqual({ pingpong: false });
    const base = formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' });
    const req = paneRequest(base, { algorithm: 'fa3', blockM: '16', blockN: '16', features: f, views: [] });
    expect(req.problem.dtype).toBe('fp16');
    expect(req.features).toEqual({ pingpong: false });
    const own = paneRequest(base, { algorithm: 'fa3', dtype: 'fp8e4m3', blockM: '16', blockN: '16', features: f, views: [] });
    expect(own.problem.dtype).toBe('fp8e4m3');
    expect(own.features).toEqual(f);
  });
});

describe('compare pane dtype over tensors from files', () => {
  it("keeps the files' dtype: a pane's own dtype is neither sent nor refused", () => {
    const base = { ...formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' }), tensors: { files: [], names: [] } as never };
    const cfg: ComparePaneConfig = { algorithm: 'fa2', dtype: 'fp8e4m3', blockM: '16', blockN: '16', features: {}, views: [] };
    expect(paneRequest(base, cfg).problem.dtype).toBe('fp16');
    expect(paneRefusal(cfg, base)).toBeUndefined();
    // Random inputs: the same pane is refused.
    expect(paneRefusal(cfg, formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' }))).toMatch(/fa2 has no FP8 path/);
  });

  it('does not send a switch whose condition fails (sage qPerWarp on version 1), which the engine would refuse', () => {
    const q = { ...p, dtype: 'fp16' as DType };
    const run = (features: Record<string, boolean | number>) => runToEnd(algorithmById('sage'), q, randomInputs(q, { seed: 1 }), { blockM: 16, blockN: 16, features });
    const stored = { version: 1, qPerWarp: false };
    expect(() => run(stored)).toThrow(/qPerWarp.*version 2 only/);
    expect(featuresFor('sage', 'fp16', stored)).toEqual({ version: 1 });
    expect(() => run(featuresFor('sage', 'fp16', stored))).not.toThrow();
    expect(featuresFor('sage', 'fp16', { version: 2, qPerWarp: false })).toEqual({ version: 2, qPerWarp: false });
  });
});
