// A compare pane's dtype refusals (asked of the engine's probe) against full engine runs: an
// algorithm is refused FP8 in compare mode exactly when the engine refuses to run it, and
// each offered fix, the shared-problem ones for ALiBi, sinks and d ≠ dv included, lands on
// a configuration the engine runs.

import { describe, expect, it } from 'vitest';
import { ALGORITHMS, algorithmById } from '../../engine/algorithms/registry.ts';
import { DEFAULT_PROBLEM, type AttentionProblem, type DType } from '../../engine/core/problem.ts';
import { randomInputs } from '../../engine/core/inputs.ts';
import { runToEnd } from '../../engine/run.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { paneRequest } from './shared-request.ts';
import { dtypeFixes, featuresFor, paneRefusal } from './pane-dtype.ts';
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
  const pane = (algorithm: string, dtype: DType | undefined, features: ComparePaneConfig['features'] = {}): ComparePaneConfig => ({
    algorithm,
    dtype,
    blockM: '16',
    blockN: '16',
    features,
    views: [],
  });
  const base = formToRequest({ ...DEFAULT_FORM, d: '16', dv: '16', nq: '16', nk: '32' });

  it('refuses FP8 for exactly the algorithms whose forward the engine refuses it (a full run, not the probe)', () => {
    for (const a of ALGORITHMS) {
      for (const dtype of ['fp8e4m3', 'fp8e5m2', 'fp16'] as const) {
        expect(paneRefusal(pane(a.id, dtype), base) === undefined, `${a.id} ${dtype}`).toBe(engineRuns(a.id, dtype));
      }
    }
    expect(paneRefusal(pane('fa3', 'fp8e4m3'), { ...base, pass: 'backward' })).toMatch(/fa3 backward has no FP8 path/);
    expect(paneRefusal(pane('sage', 'fp8e4m3'), base)).toMatch(/sage quantizes its own inputs/);
  });

  it('every fix offered for a refused pane is a configuration the engine runs', () => {
    for (const a of ALGORITHMS.filter((x) => x.id !== 'flash-decoding')) {
      const cfg = pane(a.id, 'fp8e4m3');
      const fixes = dtypeFixes(cfg, base);
      if (a.id === 'fa3' || a.id === 'fa4') {
        expect(fixes).toEqual([]);
        continue;
      }
      expect(fixes.map((f) => f.label)).toEqual([
        'Switch this pane to fa3 (keeps fp8e4m3)',
        'Switch this pane to fa4 (keeps fp8e4m3)',
        'Run this pane in fp32',
      ]);
      for (const f of fixes) {
        const fixed = { ...cfg, ...f.patch };
        expect(paneRefusal(fixed, base), `${a.id}: ${f.label}`).toBeUndefined();
        const req = paneRequest(base, fixed);
        expect(() =>
          runToEnd(algorithmById(req.algorithm), req.problem, randomInputs(req.problem, { seed: 1 }), {
            ...req.blocks,
            features: req.features,
          }),
        ).not.toThrow();
      }
    }
    const fp8Shared = { ...base, problem: { ...base.problem, dtype: 'fp8e4m3' as const } };
    // With an FP8 shared dtype, "run in 16-bit" sets the pane's own fp16 (the shared one would be refused again).
    expect(dtypeFixes(pane('fa2', undefined), fp8Shared).at(-1)?.patch).toEqual({ dtype: 'fp16' });
    // With a 16-bit shared dtype it drops the pane's own dtype.
    const bf16Shared = { ...base, problem: { ...base.problem, dtype: 'bf16' as const } };
    expect(dtypeFixes(pane('fa2', 'fp8e4m3'), bf16Shared).at(-1)?.patch).toEqual({ dtype: undefined });
    // The backward has no FP8 path anywhere: only the 16-bit fix.
    expect(dtypeFixes(pane('fa3', 'fp8e4m3'), { ...base, pass: 'backward' }).map((f) => f.label)).toEqual(['Run this pane in fp32']);
  });

  it('ALiBi, sinks or d ≠ dv in the shared problem: an FP8 pane says so and offers the shared fix and the 16-bit pane', () => {
    const cases: { problem: Partial<AttentionProblem>; label: string; message: RegExp }[] = [
      { problem: { alibi: 'standard' }, label: 'Turn ALiBi off in the shared problem', message: /FA3 has no ALiBi/ },
      { problem: { sinks: [2] }, label: 'Clear the shared sink logit', message: /no attention-sink logits/ },
      { problem: { dv: 32 }, label: 'Set the shared dv to d (16)', message: /d = dv and d 192 with dv 128 only/ },
    ];
    for (const c of cases) {
      const shared = { ...base, problem: { ...base.problem, ...c.problem } };
      const cfg = pane('fa3', 'fp8e4m3');
      expect(paneRefusal(cfg, shared)).toMatch(c.message);
      // The same pane in fp16 on that problem runs (the modifier is FP8's problem only).
      expect(paneRefusal(pane('fa3', 'fp16'), shared)).toBeUndefined();
      const fixes = dtypeFixes(cfg, shared);
      expect(fixes.map((f) => f.label)).toEqual([c.label, 'Run this pane in fp32']);
      for (const f of fixes) {
        const fixedShared = f.shared ? { ...shared, problem: { ...shared.problem, ...f.shared.problem } } : shared;
        const fixed = { ...cfg, ...f.patch };
        expect(paneRefusal(fixed, fixedShared), f.label).toBeUndefined();
        const req = paneRequest(fixedShared, fixed);
        expect(
          () =>
            runToEnd(algorithmById(req.algorithm), req.problem, randomInputs(req.problem, { seed: 1 }), {
              ...req.blocks,
              features: req.features,
            }),
          f.label,
        ).not.toThrow();
        // The form side of a shared fix turns into the same problem.
        if (f.shared) {
          const form = {
            ...DEFAULT_FORM,
            d: '16',
            dv: c.problem.dv ? '32' : '16',
            nq: '16',
            nk: '32',
            alibi: !!c.problem.alibi,
            sink: c.problem.sinks ? '2' : '',
            ...f.shared.form,
          };
          const p = formToRequest(form).problem;
          expect([p.alibi, p.sinks, p.dv]).toEqual([undefined, undefined, 16]);
        }
      }
    }
  });

  it('FP8-only features are kept in the pane but sent with an FP8 dtype only (fa3 refuses them in fp16)', () => {
    const f = { blockQuant: false, incoherent: false, pingpong: false };
    expect(featuresFor('fa3', 'fp8e4m3', f)).toEqual(f);
    expect(featuresFor('fa3', 'fp16', f)).toEqual({ pingpong: false });
    // Asked of the engine: FA3's P scale and Hadamard seed are FP8-only too; reverseKv and sage's switches are not.
    expect(featuresFor('fa3', 'bf16', { pScale: 16, seed: 3, reverseKv: false })).toEqual({ reverseKv: false });
    expect(featuresFor('sage', 'fp16', { version: 2, qPerWarp: false, smoothK: false })).toEqual({
      version: 2,
      qPerWarp: false,
      smoothK: false,
    });
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
    const run = (features: Record<string, boolean | number>) =>
      runToEnd(algorithmById('sage'), q, randomInputs(q, { seed: 1 }), { blockM: 16, blockN: 16, features });
    const stored = { version: 1, qPerWarp: false };
    expect(() => run(stored)).toThrow(/qPerWarp.*version 2 only/);
    expect(featuresFor('sage', 'fp16', stored)).toEqual({ version: 1 });
    expect(() => run(featuresFor('sage', 'fp16', stored))).not.toThrow();
    expect(featuresFor('sage', 'fp16', { version: 2, qPerWarp: false })).toEqual({ version: 2, qPerWarp: false });
  });
});
