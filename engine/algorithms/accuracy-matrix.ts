// Shared test support (imported only by *.test.ts): the accuracy matrix every
// hardware-modelling algorithm must pass against the float64 reference, and the naive
// same-precision attention that sets the bar for 16-bit inputs.

import { expect, it } from 'vitest';
import { roundTo } from '../core/dtype.ts';
import { kOffset, kvHead, qOffset, randomInputs, vOffset, type AttentionInputs, type InputDistribution } from '../core/inputs.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { runToEnd } from '../run.ts';
import { modifyScore, scoreModel } from '../core/scores.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm } from './types.ts';

export function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue; // equal infinities
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = d; // NaN propagates as a failure
  }
  return m;
}

/**
 * Standard attention the way a non-fused 16-bit pipeline computes it: inputs in the dtype,
 * S in fp32, softmax in fp32, P stored in the dtype, P·V accumulated in fp32, O rounded.
 */
export function naiveSamePrecision(p: AttentionProblem, x: AttentionInputs): { o: Float64Array } {
  const sm = scoreModel(p);
  const o = new Float64Array(p.batch * p.hq * p.nq * p.dv);
  const s = new Float64Array(p.nk);
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      const sink = p.sinks?.[h];
      for (let i = 0; i < p.nq; i++) {
        let mx = sink ?? -Infinity;
        for (let j = 0; j < p.nk; j++) {
          let dot = 0;
          const qo = qOffset(p, b, h, i);
          const ko = kOffset(p, b, hk, j);
          for (let e = 0; e < p.d; e++) dot += x.q[qo + e] * x.k[ko + e];
          s[j] = Math.fround(modifyScore(sm, h, i, j, dot, b));
          if (s[j] > mx) mx = s[j];
        }
        if (mx === -Infinity) continue;
        let l = sink !== undefined ? Math.exp(sink - mx) : 0;
        for (let j = 0; j < p.nk; j++) {
          s[j] = s[j] === -Infinity ? 0 : Math.fround(Math.exp(s[j] - mx));
          l = Math.fround(l + s[j]);
        }
        const acc = new Float64Array(p.dv);
        for (let j = 0; j < p.nk; j++) {
          const w = roundTo(p.dtype, s[j] / l);
          if (w === 0) continue;
          const vo = vOffset(p, b, hk, j);
          for (let e = 0; e < p.dv; e++) acc[e] = Math.fround(acc[e] + w * x.v[vo + e]);
        }
        const oo = ((b * p.hq + h) * p.nq + i) * p.dv;
        for (let e = 0; e < p.dv; e++) o[oo + e] = roundTo(p.dtype, acc[e]);
      }
    }
  return { o };
}

export interface MatrixCase {
  name: string;
  problem: Partial<AttentionProblem>;
  distribution?: InputDistribution;
}

/** The problem shapes and variants of the test list. `dims` limits head dims to what the kernel has. */
export function matrixCases(dims: number[]): MatrixCase[] {
  const cases: MatrixCase[] = [
    { name: 'ragged 77x131', problem: { nq: 77, nk: 131, d: 64, dv: 64 } },
    ...dims.map((d) => ({ name: `d=${d}`, problem: { nq: 24, nk: 50, d, dv: d } })),
    { name: 'dv != d (64/40)', problem: { nq: 30, nk: 50, d: 64, dv: 40 } },
    { name: 'causal nq<nk', problem: { nq: 33, nk: 90, causal: true } },
    { name: 'causal nq>nk, fully masked rows', problem: { nq: 90, nk: 33, causal: true } },
    { name: 'gqa 4/2', problem: { nq: 20, nk: 45, hq: 4, hk: 2, causal: true } },
    { name: 'mqa 3/1', problem: { nq: 20, nk: 45, hq: 3, hk: 1 } },
    { name: 'window 20/5', problem: { nq: 80, nk: 80, window: { left: 20, right: 5 } } },
    { name: 'alibi', problem: { nq: 30, nk: 60, hq: 2, hk: 2, alibi: 'standard' } },
    { name: 'softcap 4', problem: { nq: 30, nk: 60, softcap: 4 }, distribution: 'large-logits' },
    { name: 'sinks', problem: { nq: 30, nk: 60, hq: 2, hk: 1, sinks: [1.5, -2] } },
    { name: 'logits x12', problem: { nq: 40, nk: 90 }, distribution: 'large-logits' },
    { name: 'outlier row', problem: { nq: 40, nk: 150 }, distribution: 'outlier-row' },
  ];
  return cases;
}

export interface MatrixOptions {
  dims: number[];
  /** Run options per case (block sizes, features). */
  options?: Omit<RunOptions, 'trace'>;
  /** Extra allowance added to every dtype's bound (e.g. FA4's software exp2), given the problem and inputs. */
  extra?: (p: AttentionProblem, x: AttentionInputs) => number;
  /** fp32 tolerance (default 2e-5). */
  fp32Tol?: number;
  /** Extra LSE allowance on top of the default tolerances (FA4's software exp2 perturbs l). */
  lseExtra?: number;
  dtypes?: DType[];
  extraCases?: MatrixCase[];
}

export interface MatrixRecord {
  name: string;
  dtype: DType;
  err: number;
  lseErr: number;
  bound: number;
}

/** Registers one vitest case per (shape, dtype) and collects the measured errors in `log`. */
export function accuracyMatrix(algo: StepAlgorithm, m: MatrixOptions, log: MatrixRecord[] = []): MatrixRecord[] {
  const dtypes = m.dtypes ?? ['fp32', 'fp16', 'bf16'];
  for (const c of [...matrixCases(m.dims), ...(m.extraCases ?? [])]) {
    for (const dtype of dtypes) {
      it(`${c.name} ${dtype}`, () => {
        const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 16, nk: 16, d: 64, dv: 64, causal: false, dtype, ...c.problem };
        const x = randomInputs(p, { seed: 11, distribution: c.distribution });
        const ref = referenceAttention(p, x);
        const got: AlgorithmResult = runToEnd(algo, p, x, { ...m.options });
        const err = maxAbs(got.o, ref.o);
        const lseErr = maxAbs(got.lse, ref.lse);
        let bound = m.extra?.(p, x) ?? 0;
        if (dtype === 'fp32') bound += m.fp32Tol ?? 2e-5;
        else bound += 2 * maxAbs(naiveSamePrecision(p, x).o, ref.o) + 1e-5;
        log.push({ name: c.name, dtype, err, lseErr, bound });
        expect(err).toBeLessThanOrEqual(bound);
        // LSE is fp32 in every kernel; its error follows the logits' magnitude.
        expect(lseErr).toBeLessThan((dtype === 'fp32' ? 2e-5 : 1e-3 * Math.max(1, maxAbsValue(ref.lse))) + (m.lseExtra ?? 0));
        // Fully masked rows: zero output, -inf LSE, exactly like the reference.
        for (let r = 0; r < ref.lse.length; r++) if (ref.lse[r] === -Infinity) expect(got.lse[r]).toBe(-Infinity);
      });
    }
  }
  return log;
}

function maxAbsValue(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i])) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** Largest |v| of the problem's V, for error bounds that scale with the values averaged. */
export function maxAbsV(x: AttentionInputs): number {
  let m = 0;
  for (let i = 0; i < x.v.length; i++) m = Math.max(m, Math.abs(x.v[i]));
  return m;
}
