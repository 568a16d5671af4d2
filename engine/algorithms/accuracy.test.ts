// Every registered-here algorithm (standard, FA1, FA2) against the float64 reference.
// fp32: max abs error <= 2e-5. fp16/bf16: error <= 2 × the error of the same math done
// naively in that precision + 1e-5 (the FlashAttention test-suite rule), the naive math
// being written out below independently of the algorithms.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbitraryRun } from '../testing/arbitrary-problem.ts';
import { roundTo } from '../core/dtype.ts';
import { kvHead, randomInputs, type AttentionInputs, type InputDistribution } from '../core/inputs.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { modifyScore, scoreModel } from '../core/scores.ts';
import { runToEnd } from '../run.ts';
import { fa1 } from './fa1/forward.ts';
import { fa2 } from './fa2/forward.ts';
import { standard } from './standard/forward.ts';
import type { BlockOptions } from './types.ts';

const ALGOS = [standard, fa1, fa2];

function maxAbsErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(got[i])) return Infinity;
    if (got[i] === want[i]) continue; // equal infinities
    m = Math.max(m, Math.abs(got[i] - want[i]));
  }
  return m;
}

function problem(over: Partial<AttentionProblem>): AttentionProblem {
  return { batch: 1, hq: 1, hk: 1, nq: 40, nk: 40, d: 16, dv: 16, causal: false, dtype: 'fp32', ...over };
}

/** Standard attention in the problem's dtype: S in fp32, softmax in fp32, P rounded to dtype, fp32 P·V, O rounded to dtype. */
function naiveInPrecision(p: AttentionProblem, x: AttentionInputs): Float64Array {
  const sm = scoreModel(p);
  const out = new Float64Array(p.batch * p.hq * p.nq * p.dv);
  const row = new Float64Array(p.nk);
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      const sink = p.sinks?.[h];
      for (let i = 0; i < p.nq; i++) {
        let mx = sink ?? -Infinity;
        for (let j = 0; j < p.nk; j++) {
          let dot = 0;
          for (let c = 0; c < p.d; c++) dot += x.q[((b * p.hq + h) * p.nq + i) * p.d + c] * x.k[((b * p.hk + hk) * p.nk + j) * p.d + c];
          row[j] = Math.fround(modifyScore(sm, h, i, j, Math.fround(dot), b));
          mx = Math.max(mx, row[j]);
        }
        if (mx === -Infinity) continue;
        let sum = sink === undefined ? 0 : Math.fround(Math.exp(sink - mx));
        for (let j = 0; j < p.nk; j++) {
          row[j] = Math.fround(Math.exp(row[j] - mx));
          sum = Math.fround(sum + row[j]);
        }
        const acc = new Float32Array(p.dv);
        for (let j = 0; j < p.nk; j++) {
          const w = roundTo(p.dtype, Math.fround(row[j] / sum));
          for (let c = 0; c < p.dv; c++) acc[c] += w * x.v[((b * p.hk + hk) * p.nk + j) * p.dv + c];
        }
        for (let c = 0; c < p.dv; c++) out[((b * p.hq + h) * p.nq + i) * p.dv + c] = roundTo(p.dtype, acc[c]);
      }
    }
  return out;
}

interface Case {
  name: string;
  p: Partial<AttentionProblem>;
  blocks?: BlockOptions;
  dist?: InputDistribution;
}

const CASES: Case[] = [
  { name: 'ragged 77x131, dv != d', p: { nq: 77, nk: 131, d: 40, dv: 24 }, blocks: { blockM: 16, blockN: 32 } },
  ...[16, 40, 64, 128, 256].map((d) => ({ name: `d=${d}`, p: { nq: 37, nk: 53, d, dv: d } })),
  { name: 'dv > d', p: { nq: 30, nk: 45, d: 16, dv: 48 }, blocks: { blockM: 8, blockN: 8 } },
  { name: 'causal nq < nk', p: { nq: 33, nk: 70, causal: true }, blocks: { blockM: 8, blockN: 16 } },
  { name: 'causal nq > nk (first rows fully masked)', p: { nq: 70, nk: 33, causal: true }, blocks: { blockM: 16, blockN: 8 } },
  { name: 'GQA 6/2, batch 2', p: { batch: 2, hq: 6, hk: 2, nq: 21, nk: 29 }, blocks: { blockM: 8, blockN: 8 } },
  { name: 'MQA 4/1, causal', p: { hq: 4, hk: 1, nq: 25, nk: 25, causal: true }, blocks: { blockM: 8, blockN: 8 } },
  { name: 'sliding window (7, 3)', p: { nq: 50, nk: 50, window: { left: 7, right: 3 } }, blocks: { blockM: 8, blockN: 8 } },
  {
    name: 'window left only, nq != nk',
    p: { nq: 31, nk: 57, window: { left: 5, right: -1 }, causal: true },
    blocks: { blockM: 8, blockN: 8 },
  },
  { name: 'ALiBi standard slopes', p: { hq: 3, hk: 3, nq: 40, nk: 48, alibi: 'standard' } },
  { name: 'ALiBi explicit slopes, causal', p: { hq: 2, hk: 1, alibi: [0.5, 0.125], causal: true } },
  { name: 'softcap 5', p: { softcap: 5 }, dist: 'large-logits' },
  { name: 'sinks', p: { hq: 2, hk: 1, sinks: [0.5, -3] } },
  {
    name: 'sinks with fully masked rows',
    p: { hq: 2, hk: 2, nq: 30, nk: 12, causal: true, sinks: [2, -1] },
    blocks: { blockM: 8, blockN: 4 },
  },
  { name: 'logits scaled x12', p: { nq: 45, nk: 60, d: 64, dv: 64 }, dist: 'large-logits' },
  { name: 'outlier row, causal', p: { nq: 40, nk: 40, causal: true }, dist: 'outlier-row', blocks: { blockM: 8, blockN: 8 } },
  { name: 'blocks from a 2 KiB SRAM', p: { nq: 50, nk: 50, d: 32, dv: 32 }, blocks: { sramBytes: 2048 } },
  { name: 'explicit scale', p: { scale: 0.3 } },
];

describe.each(ALGOS.map((a) => [a.id, a] as const))('%s vs float64 reference, fp32', (_id, algo) => {
  for (const c of CASES) {
    it(c.name, () => {
      const p = problem(c.p);
      const x = randomInputs(p, { seed: 11, distribution: c.dist });
      const ref = referenceAttention(p, x);
      const got = runToEnd(algo, p, x, c.blocks ?? {});
      expect(maxAbsErr(got.o, ref.o)).toBeLessThanOrEqual(2e-5);
      for (let r = 0; r < ref.lse.length; r++) {
        if (ref.lse[r] === -Infinity) expect(got.lse[r]).toBe(-Infinity);
        else expect(Math.abs(got.lse[r] - ref.lse[r])).toBeLessThanOrEqual(2e-5 * Math.max(1, Math.abs(ref.lse[r])));
      }
    });
  }

  it('fully masked rows: output exactly 0, LSE -inf, no NaN', () => {
    const p = problem({ nq: 20, nk: 6, causal: true });
    const x = randomInputs(p, { seed: 3 });
    const got = runToEnd(algo, p, x, { blockM: 4, blockN: 4 });
    const masked = p.nq - p.nk; // rows i < nq - nk see no key
    for (let i = 0; i < p.nq; i++) {
      if (i < masked) {
        expect(got.lse[i]).toBe(-Infinity);
        for (let c = 0; c < p.dv; c++) expect(got.o[i * p.dv + c]).toBe(0);
      } else expect(Number.isFinite(got.lse[i])).toBe(true);
    }
    expect(Array.from(got.o).some(Number.isNaN)).toBe(false);
  });

  it('tracing on and off agree on outputs and counters', () => {
    const p = problem({ nq: 23, nk: 37, causal: true, hq: 2, hk: 1 });
    const x = randomInputs(p, { seed: 5 });
    const off = runToEnd(algo, p, x, { blockM: 8, blockN: 8 });
    let events = 0;
    const on = runToEnd(algo, p, x, { blockM: 8, blockN: 8, trace: true, onEvent: () => events++ });
    expect(Array.from(on.o)).toEqual(Array.from(off.o));
    expect(on.counters).toEqual(off.counters);
    expect(events).toBe(off.counters.steps);
  });
});

describe.each(ALGOS.map((a) => [a.id, a] as const))('%s in 16-bit: error <= 2x naive + 1e-5', (_id, algo) => {
  const cases: [string, Partial<AttentionProblem>, InputDistribution?][] = [
    ['ragged 77x131 causal', { nq: 77, nk: 131, d: 64, dv: 64, causal: true }],
    ['GQA, dv != d', { hq: 4, hk: 2, nq: 40, nk: 33, d: 40, dv: 24 }],
    ['logits x12 with sinks', { nq: 48, nk: 64, d: 64, dv: 64, sinks: [1] }, 'large-logits'],
  ];
  for (const dtype of ['fp16', 'bf16'] as DType[]) {
    for (const [name, over, dist] of cases) {
      it(`${dtype}: ${name}`, () => {
        const p = problem({ ...over, dtype });
        const x = randomInputs(p, { seed: 21, distribution: dist });
        const ref = referenceAttention(p, x);
        const naiveErr = maxAbsErr(naiveInPrecision(p, x), ref.o);
        const err = maxAbsErr(runToEnd(algo, p, x, { blockM: 16, blockN: 16 }).o, ref.o);
        expect(naiveErr).toBeGreaterThan(0); // the rule is only meaningful when rounding happened
        expect(err).toBeLessThanOrEqual(2 * naiveErr + 1e-5);
      });
    }
  }
});

describe('random problems: every algorithm matches the reference (fp32)', () => {
  it('holds for arbitrary sizes, heads, masks, modifiers and blocks', () => {
    const arb = arbitraryRun({ maxN: 24, maxD: 12, maxBlock: 9 });
    fc.assert(
      fc.property(arb, (r) => {
        const p = r.problem;
        const x = randomInputs(p, { seed: r.seed });
        const ref = referenceAttention(p, x);
        for (const algo of ALGOS) {
          const got = runToEnd(algo, p, x, { blockM: r.blockM, blockN: r.blockN });
          expect(maxAbsErr(got.o, ref.o)).toBeLessThanOrEqual(2e-5);
          for (let i = 0; i < ref.lse.length; i++) {
            if (ref.lse[i] === -Infinity) expect(got.lse[i]).toBe(-Infinity);
            else expect(Math.abs(got.lse[i] - ref.lse[i])).toBeLessThanOrEqual(2e-5 * Math.max(1, Math.abs(ref.lse[i])));
          }
        }
      }),
      { numRuns: 150, seed: 20261122 },
    );
  });
});
