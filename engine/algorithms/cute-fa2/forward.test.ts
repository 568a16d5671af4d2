import { describe, expect, it } from 'vitest';
import { randomInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { runToEnd } from '../../run.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { accuracyMatrix } from '../accuracy-matrix.ts';
import { cuteFa2 } from './forward.ts';
import { cuteFa2Algorithm } from './descriptor.ts';
import { describeFor } from '../schedule-registry.ts';
import { referenceAttention } from '../../core/reference.ts';

describe('CuTe FA2 against the float64 reference', () => {
  accuracyMatrix(cuteFa2, { dims: [64, 128, 256] });
});

describe('CuTe FA2 pipeline', () => {
  const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 192, d: 32, dv: 32, causal: false, dtype: 'fp16' };
  const evs: TraceEvent[] = [];
  const r = runToEnd(cuteFa2, p, randomInputs(p, { seed: 6 }), { trace: true, onEvent: (e) => evs.push(e) });
  it('keeps its 128 × 64 tile on 64 queries (one partial Q tile)', () => {
    expect(r.blocks).toEqual({ blockM: 128, blockN: 64 });
  });
  it('issues V_j before Q·K_jᵀ and K_{j+1} before the softmax and P·V_j of block j', () => {
    const seq = evs.map((e) => `${e.line.split('.')[1]}${e.inner >= 0 ? e.inner : ''}`);
    expect(seq).toEqual([
      'loadQ',
      'loadK0',
      'loadV0',
      'qk0',
      'loadK1',
      'rowmax0',
      'exp0',
      'rowsum0',
      'pv0',
      'loadV1',
      'qk1',
      'loadK2',
      'rowmax1',
      'rescale1',
      'exp1',
      'rowsum1',
      'pv1',
      'loadV2',
      'qk2',
      'rowmax2',
      'rescale2',
      'exp2',
      'rowsum2',
      'pv2',
      'normalize',
      'write',
    ]);
  });
});

describe('CuTe FA2 tile', () => {
  // flash_attn/cute/interface.py@0251105a:327 — `FwdConfig(128, 64, …)` for every SM8x head dim.
  const UPSTREAM_SM80 = { blockM: 128, blockN: 64 };
  for (const d of [32, 64, 128, 256]) {
    const shape = { batch: 1, hq: 2, hk: 2, nq: 512, nk: 512, d, dv: d, causal: false, dtype: 'fp16' as const };
    it(`d = ${d}: the stepper and the hardware model run upstream's SM80 tile`, () => {
      expect(cuteFa2.blocks(shape, {})).toEqual(UPSTREAM_SM80);
      expect(cuteFa2Algorithm.tiles(shape)).toEqual(UPSTREAM_SM80);
      const sheet = describeFor('cute-fa2', 'a100', shape);
      expect([sheet.tiles.block_m, sheet.tiles.block_n]).toEqual([128, 64]);
      expect(sheet.does_not_fit).toEqual([]);
    });
  }
  it('runs the numbers on that tile within the fp16 bound of the float64 reference', () => {
    const p: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 300, nk: 200, d: 64, dv: 64, causal: true, dtype: 'fp16' };
    const x = randomInputs(p, { seed: 3 });
    const r = runToEnd(cuteFa2, p, x);
    expect(r.blocks).toEqual(UPSTREAM_SM80);
    const ref = referenceAttention(p, x);
    let err = 0;
    for (let i = 0; i < ref.o.length; i++) err = Math.max(err, Math.abs(r.o[i] - ref.o[i]));
    expect(err).toBeLessThan(1e-2);
    expect(err).toBeGreaterThan(0);
  });
});

describe('CuTe FA2 causal early exit', () => {
  it('never loads the blocks above the diagonal, and counts them', () => {
    const p: AttentionProblem = { batch: 2, hq: 1, hk: 1, nq: 256, nk: 256, d: 32, dv: 32, causal: true, dtype: 'fp32' };
    const x = randomInputs(p, { seed: 1 });
    const evs: TraceEvent[] = [];
    const r = runToEnd(cuteFa2, p, x, { trace: true, onEvent: (e) => evs.push(e), blockM: 64, blockN: 64 });
    // Q tile i sees K blocks 0..i: skipped = sum over i of (3 - i) = 6 per head.
    expect(r.stats?.skippedBlocks).toBe(2 * 6);
    expect(evs.filter((e) => e.line === 'cute-fa2.loadK').length).toBe(2 * (1 + 2 + 3 + 4));
    // Only the diagonal block of each tile needs the in-block mask.
    expect(evs.filter((e) => e.kind === 'mask').map((e) => [e.outer, e.inner])).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    expect(r.counters.hbmRead.K).toBe(2 * 10 * 64 * 32 * 4);
  });
  it('has no features, and says so for any key', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 8, nk: 8, d: 8, dv: 8, causal: false, dtype: 'fp32' };
    expect(() => runToEnd(cuteFa2, p, randomInputs(p, { seed: 1 }), { features: { pingpong: true } })).toThrow(
      /unknown feature 'pingpong' for cute-fa2; accepted: \(none\)/,
    );
  });
});
