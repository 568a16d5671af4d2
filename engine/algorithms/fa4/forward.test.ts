import { describe, expect, it } from 'vitest';
import { roundFp16 } from '../../core/dtype.ts';
import { randomInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import { runToEnd } from '../../run.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { accuracyMatrix, maxAbs, maxAbsV, naiveSamePrecision } from '../accuracy-matrix.ts';
import { exp2Emulated } from './exp2-emulation.ts';
import { fa4Config, isEmulatedElement } from './tiles.ts';
import { fa4 } from './forward.ts';
import { describeFor, kernelStepTile } from '../schedule-registry.ts';

/**
 * Bound on the software exp2's relative error, |2̃^x / 2^x − 1| ≤ EMU_EPS for x ∈ [−126, 0]
 * (checked below; the measured maximum is about 8.8e-5 ≈ 2^−13.5).
 *
 * Why it bounds the output error: every emulated P_j becomes P_j(1 + δ_j) with |δ_j| ≤ ε,
 * and the row sum l is accumulated from the same perturbed values, so
 *   O' − O = Σ P_j δ_j (v_j − O) / Σ P_j (1 + δ_j)   (because Σ P_j (v_j − O) = 0),
 *   |O' − O| ≤ ε/(1 − ε) · max_j |v_j − O| ≤ 2ε/(1 − ε) · max|v|,
 * and LSE' − LSE = log(Σ P_j(1 + δ_j) / Σ P_j) lies within ±ε/(1 − ε).
 * That term is added to the usual tolerance (2e-5 in fp32, 2× naive + 1e-5 in 16-bit).
 */
const EMU_EPS = 1e-4;
const emuTerm = (x: { v: Float32Array }) => ((2 * EMU_EPS) / (1 - EMU_EPS)) * maxAbsV(x as never);

describe('fa4 against the float64 reference', () => {
  describe('default features (lazy rescale, software exp2)', () => {
    accuracyMatrix(fa4, {
      dims: [64, 128, 256],
      extra: (_p, x) => emuTerm(x),
      lseExtra: EMU_EPS / (1 - EMU_EPS),
      extraCases: [{ name: 'd=192 dv=128', problem: { nq: 40, nk: 200, d: 192, dv: 128 } }],
      options: {},
    });
  });
  describe('fp32 without software exp2 meets the plain fp32 tolerance', () => {
    accuracyMatrix(fa4, { dims: [128], dtypes: ['fp32'], options: { features: { exp2Emulation: false } } });
  });
  it('fp32 with software exp2 stays inside the derived bound, and the emulation is visible', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 130, nk: 384, d: 64, dv: 64, causal: false, dtype: 'fp32' };
    const x = randomInputs(p, { seed: 4 });
    const ref = referenceAttention(p, x);
    const on = runToEnd(fa4, p, x, {});
    const off = runToEnd(fa4, p, x, { features: { exp2Emulation: false } });
    const errOn = maxAbs(on.o, ref.o);
    const errOff = maxAbs(off.o, ref.o);
    console.log(
      `fa4 fp32 130x384: max|err| with software exp2 ${errOn.toExponential(2)}, without ${errOff.toExponential(2)}, bound ${(2e-5 + emuTerm(x)).toExponential(2)}`,
    );
    expect(errOn).toBeLessThanOrEqual(2e-5 + emuTerm(x));
    expect(errOn).toBeGreaterThan(errOff);
  });
});

describe('fa4 software exp2', () => {
  it('has a small, non-zero relative error against Math.pow(2, x)', () => {
    let worst = 0;
    for (let i = 0; i <= 200_000; i++) {
      const x = Math.fround(-126 + (126 * i) / 200_000);
      const rel = Math.abs(exp2Emulated(x) - Math.pow(2, x)) / Math.pow(2, x);
      worst = Math.max(worst, rel);
    }
    console.log(`fa4 exp2 emulation: max relative error ${worst.toExponential(3)} over x in [-126, 0]`);
    expect(worst).toBeLessThan(EMU_EPS);
    expect(worst).toBeGreaterThan(1e-6); // a cubic cannot be float32-exact: the test sees the real polynomial
  });
  it('is exact at integers (the exponent trick) and flushes below the clamp', () => {
    expect(exp2Emulated(0)).toBe(1);
    expect(exp2Emulated(-3)).toBe(0.125);
    expect(exp2Emulated(-100)).toBe(2 ** -100);
    expect(exp2Emulated(-500)).toBe(0);
  });
  it('follows apply_exp2_convert: from fragment 1, the last 4 of every 16 columns of each 32-column fragment but the last (16 of 128)', () => {
    const pattern = fa4Config({ d: 64, dv: 64, dtype: 'fp16', causal: false, nq: 128 }).exp2;
    expect(pattern).toEqual({ freq: 16, res: 4, startFrg: 1 });
    const cols = Array.from({ length: 128 }, (_, c) => c).filter((c) => isEmulatedElement(c, 128, pattern));
    expect(cols).toEqual([44, 45, 46, 47, 60, 61, 62, 63, 76, 77, 78, 79, 92, 93, 94, 95]);
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 384, d: 64, dv: 64, causal: false, dtype: 'fp16' };
    const x = randomInputs(p, { seed: 3 });
    expect(runToEnd(fa4, p, x).stats?.emulatedExp2).toBe(128 * 3 * 16);
    expect(runToEnd(fa4, p, x, { features: { exp2Emulation: false } }).stats?.emulatedExp2).toBe(0);
    // Masked blocks run the same pattern; only the masked-out entries (exactly 0) skip the exponential.
    const visibleEmulated = cols.reduce((acc, c) => acc + (128 - c), 0);
    expect(runToEnd(fa4, { ...p, causal: true, nk: 128 }, randomInputs({ ...p, nk: 128 }, { seed: 3 })).stats?.emulatedExp2).toBe(
      visibleEmulated,
    );
    // d 192 / dv 128 on one CTA: no _TUNING_CONFIG row and not the 2-CTA case, so every exp2 stays on the MUFU.
    const p192 = { ...p, d: 192, dv: 128 };
    expect(runToEnd(fa4, p192, randomInputs(p192, { seed: 3 })).stats?.emulatedExp2).toBe(0);
  });
  it('steps any head dim, while the hardware model refuses those upstream does not take, with a sentence (interface.py _validate_head_dims)', () => {
    const bad: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 160, dv: 160, causal: false, dtype: 'bf16' };
    const shape = (d: number, dv: number) => ({ batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d, dv, causal: false, dtype: 'bf16' as const });
    expect(describeFor('fa4', 'b200', shape(160, 160)).does_not_fit.join(' ')).toMatch(
      /FA4 on SM100 takes head dims 8-128 .* got d = 160, dv = 160/,
    );
    expect(describeFor('fa4', 'b200', shape(20, 20)).does_not_fit.join(' ')).toMatch(/multiples of 8/);
    expect(describeFor('fa4', 'b200', shape(192, 128)).does_not_fit).toEqual([]);
    for (const [d, dv] of [
      [160, 160],
      [20, 20],
      [192, 128],
    ]) {
      const p = { ...bad, d, dv };
      const x = randomInputs(p, { seed: 1 });
      const ref = referenceAttention(p, x);
      expect(maxAbs(runToEnd(fa4, p, x).o, ref.o)).toBeLessThan(2e-2);
    }
  });
  it('takes the per-configuration frequency of _TUNING_CONFIG (2-CTA d 128: every 10, from fragment 1; causal d 192: every 32)', () => {
    expect(fa4Config({ d: 128, dv: 128, dtype: 'bf16', causal: false, nq: 4096 }).exp2).toEqual({ freq: 10, res: 4, startFrg: 1 });
    expect(fa4Config({ d: 192, dv: 128, dtype: 'bf16', causal: true, nq: 4096 }).exp2).toEqual({ freq: 32, res: 4, startFrg: 1 });
    expect(fa4Config({ d: 192, dv: 128, dtype: 'bf16', causal: false, nq: 4096 }).exp2).toEqual({ freq: 16, res: 4, startFrg: 0 });
  });
  it('takes the d = 256 kernel’s rows of _TUNING_CONFIG (every 14, the last 6, from fragment 0), causal or not, at any Nq', () => {
    for (const causal of [false, true])
      for (const nq of [64, 4096]) {
        const c = fa4Config({ d: 256, dv: 256, dtype: 'bf16', causal, nq });
        expect(c.exp2).toEqual({ freq: 14, res: 6, startFrg: 0 });
        expect([c.ctaGroup, c.qStage, c.kvStage, c.dedicatedHd256]).toEqual([2, 2, 4, true]);
        expect(c.registers).toEqual({ softmax: 256, correction: 160, other: 32 });
      }
  });
});

describe('fa4 lazy rescaling', () => {
  const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 1024, d: 64, dv: 64, causal: false, dtype: 'bf16' };
  for (const distribution of ['outlier-row', 'large-logits'] as const) {
    it(`rescales far fewer rows than the eager kernel on '${distribution}' and stays exact`, () => {
      const x = randomInputs(p, { seed: 8, distribution });
      const ref = referenceAttention(p, x);
      const bound = 2 * maxAbs(naiveSamePrecision(p, x).o, ref.o) + 1e-5 + emuTerm(x);
      const lazy = runToEnd(fa4, p, x);
      const eager = runToEnd(fa4, p, x, { features: { lazyRescale: false } });
      console.log(`fa4 ${distribution}: rescaleCount lazy ${lazy.counters.rescaleCount}, eager ${eager.counters.rescaleCount}`);
      expect(lazy.counters.rescaleCount).toBeLessThan(eager.counters.rescaleCount);
      expect(maxAbs(lazy.o, ref.o)).toBeLessThanOrEqual(bound);
      expect(maxAbs(eager.o, ref.o)).toBeLessThanOrEqual(bound);
    });
  }
  it('keeps a stale max, so stored P can exceed 1 but never 2^threshold; rescale events only when needed', () => {
    const q: AttentionProblem = { ...p, nq: 64, nk: 512, dtype: 'fp16' };
    const x = randomInputs(q, { seed: 21 });
    let maxP = 0;
    let rescales = 0;
    runToEnd(fa4, q, x, {
      trace: true,
      features: { rescaleThreshold: 4 },
      onEvent: (e) => {
        if (e.kind === 'exp') for (const v of e.p) maxP = Math.max(maxP, v);
        if (e.kind === 'rescale') {
          rescales++;
          expect(e.base2).toBe(true);
        }
      },
    });
    expect(maxP).toBeGreaterThan(1);
    expect(maxP).toBeLessThanOrEqual(16);
    let eagerMaxP = 0;
    let eagerRescales = 0;
    runToEnd(fa4, q, x, {
      trace: true,
      features: { lazyRescale: false },
      onEvent: (e) => {
        if (e.kind === 'exp') for (const v of e.p) eagerMaxP = Math.max(eagerMaxP, v);
        if (e.kind === 'rescale') eagerRescales++;
      },
    });
    expect(eagerMaxP).toBeLessThanOrEqual(1);
    expect(rescales).toBeLessThan(eagerRescales);
  });
});

describe('fa4 schedule and events', () => {
  const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 384, d: 64, dv: 64, causal: false, dtype: 'fp16' };
  const evs: TraceEvent[] = [];
  runToEnd(fa4, p, randomInputs(p, { seed: 2 }), { trace: true, onEvent: (e) => evs.push(e) });
  it('one CTA holds two Q tiles (q_stage 2), one softmax warpgroup each', () => {
    const qk = evs.filter((e) => e.kind === 'qk');
    expect(qk.map((e) => `${e.warpgroup}:${e.tile.rows.join('-')}:${e.inner}`)).toEqual([
      '0:0-128:2',
      '1:128-256:2',
      '0:0-128:1',
      '1:128-256:1',
      '0:0-128:0',
      '1:128-256:0',
    ]);
  });
  it('the load warp issues K_last, Q0, Q1, V_last, then K/V descending (flash_fwd_sm100.py load)', () => {
    const loads = evs.filter((e) => e.kind === 'load').map((e) => `${e.line.split('.')[1]}${e.inner >= 0 ? e.inner : ''}`);
    expect(loads).toEqual(['loadK2', 'loadQ', 'loadQ', 'loadV2', 'loadK1', 'loadV1', 'loadK0', 'loadV0']);
  });
  it('the MMA warp interleaves P·V of the previous block with S of the next, per stage', () => {
    const mma = evs.filter((e) => e.kind === 'qk' || e.kind === 'pv').map((e) => `${e.kind}${e.warpgroup}@${e.inner}`);
    expect(mma.slice(2, 6)).toEqual(['pv0@2', 'qk0@1', 'pv1@2', 'qk1@1']);
  });
  it('keeps logits and maxima in log2 units and P in the 16-bit type', () => {
    const q = evs.find((e) => e.kind === 'qk');
    expect(q?.base2).toBe(true);
    const x = randomInputs(p, { seed: 2 });
    if (q?.kind !== 'qk') throw new Error('no qk event');
    let dot = 0;
    for (let e = 0; e < p.d; e++) dot += x.q[e] * x.k[2 * 128 * p.d + e];
    expect(q.s[0]).toBeCloseTo((dot / 8) * Math.LOG2E, 4);
    const pe = evs.find((e) => e.kind === 'exp');
    if (pe?.kind !== 'exp') throw new Error('no exp event');
    expect(pe.p.every((v) => roundFp16(v) === v)).toBe(true);
  });
  it('rejects bad features with the key named', () => {
    const x = randomInputs(p, { seed: 1 });
    expect(() => runToEnd(fa4, p, x, { features: { lazy: true } })).toThrow(
      /unknown feature 'lazy' for fa4; accepted: lazyRescale, rescaleThreshold, exp2Emulation, exp2EmuFreq, exp2EmuRes, exp2EmuStartFrg/,
    );
    expect(() => runToEnd(fa4, p, x, { features: { exp2EmuRes: 18 } })).toThrow(/exp2EmuRes/);
    expect(() => runToEnd(fa4, p, x, { features: { rescaleThreshold: -1 } })).toThrow(/rescaleThreshold/);
  });
});

describe("fa4 at the kernel's tile_n 64 (d ≠ dv with split KV)", () => {
  it('the dispatch drops tile_n to 64 only with split KV over at least 64 N blocks (flash_attn/cute/interface.py@0251105a l. 373-381)', () => {
    const shape = { batch: 1, hq: 8, hk: 8, nq: 128, nk: 8192, d: 192, dv: 128, dtype: 'bf16' as const, causal: false };
    expect(kernelStepTile('fa4', 'b200', { ...shape, numSplits: 4 })).toEqual({ blockN: 64 });
    expect(kernelStepTile('fa4', 'b200', shape)).toEqual({ blockN: 128 });
    expect(kernelStepTile('fa4', 'b200', { ...shape, dv: 192, numSplits: 4 })).toEqual({ blockN: 128 });
  });

  for (const causal of [false, true]) {
    it(`steps 64-key blocks and meets the float64 reference (bf16, d 192, dv 128${causal ? ', causal' : ''})`, () => {
      const p: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 40, nk: 300, d: 192, dv: 128, causal, dtype: 'bf16' };
      const x = randomInputs(p, { seed: 5 });
      const ref = referenceAttention(p, x);
      const events: TraceEvent[] = [];
      const got = runToEnd(fa4, p, x, { blockN: 64, trace: true, onEvent: (e) => events.push(e) });
      expect(got.blocks).toEqual({ blockM: 128, blockN: 64 });
      const qk = events.filter((e) => e.kind === 'qk');
      // 300 keys in blocks of 64: 5 blocks, the last 44 wide; causal skips none (bottom-right, nk > nq).
      expect(new Set(qk.map((e) => e.tile.kvBlock))).toEqual(new Set([0, 1, 2, 3, 4]));
      expect(qk.every((e) => e.tile.cols[1] - e.tile.cols[0] === (e.tile.kvBlock === 4 ? 44 : 64))).toBe(true);
      const bound = 2 * maxAbs(naiveSamePrecision(p, x).o, ref.o) + 1e-5 + emuTerm(x);
      expect(maxAbs(got.o, ref.o)).toBeLessThanOrEqual(bound);
    });
  }
});
