// Masks written in the mask language, through every step algorithm, against float64.
// The presets must reproduce the built-in causal / window / ALiBi / softcap exactly, and a
// user mask's float64 reference must equal a hand-written softmax with the same predicate.

import { describe, expect, it } from 'vitest';
import { randomInputs, type AttentionInputs } from '../core/inputs.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { runToEnd } from '../run.ts';
import { ProblemError } from '../core/problem.ts';
import { ALGORITHMS, DESCRIPTORS } from './registry.ts';

function problem(over: Partial<AttentionProblem>): AttentionProblem {
  return { batch: 2, hq: 2, hk: 1, nq: 37, nk: 45, d: 8, dv: 8, causal: false, dtype: 'fp32', ...over };
}

function maxAbsErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < want.length; i++) {
    if (got[i] === want[i]) continue;
    if (Number.isNaN(got[i])) return Infinity;
    m = Math.max(m, Math.abs(got[i] - want[i]));
  }
  return m;
}

/** Softmax(QKᵀ·scale)V written out with a JavaScript predicate, independent of the mask language. */
function handWritten(p: AttentionProblem, x: AttentionInputs, keep: (b: number, h: number, i: number, j: number) => boolean): Float64Array {
  const o = new Float64Array(p.batch * p.hq * p.nq * p.dv);
  const scale = 1 / Math.sqrt(p.d);
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = Math.floor(h / (p.hq / p.hk));
      for (let i = 0; i < p.nq; i++) {
        const w: number[] = [];
        for (let j = 0; j < p.nk; j++) {
          if (!keep(b, h, i, j)) {
            w.push(-Infinity);
            continue;
          }
          let dot = 0;
          for (let c = 0; c < p.d; c++) dot += x.q[((b * p.hq + h) * p.nq + i) * p.d + c] * x.k[((b * p.hk + hk) * p.nk + j) * p.d + c];
          w.push(dot * scale);
        }
        const mx = Math.max(...w);
        if (mx === -Infinity) continue;
        const e = w.map((s) => (s === -Infinity ? 0 : Math.exp(s - mx)));
        const sum = e.reduce((a, v) => a + v, 0);
        for (let j = 0; j < p.nk; j++)
          for (let c = 0; c < p.dv; c++)
            o[((b * p.hq + h) * p.nq + i) * p.dv + c] += (e[j] / sum) * x.v[((b * p.hk + hk) * p.nk + j) * p.dv + c];
      }
    }
  return o;
}

const dims = { hq: 2, nq: 37, nk: 45 };

/** Documents of lengths 10, 20 and the rest, over key positions. */
const docOf = (pos: number): number => (pos < 10 ? 0 : pos < 30 ? 1 : 2);

describe('mask presets reproduce the built-in modifiers exactly (float64 reference)', () => {
  const cases: [string, Partial<AttentionProblem>, { maskMod?: string; scoreMod?: string }][] = [
    ['causal', { causal: true }, { maskMod: 'causal' }],
    ['sliding window', { causal: true, window: { left: 9, right: 0 } }, { maskMod: 'sliding_window:9' }],
    ['ALiBi', { alibi: 'standard' }, { scoreMod: 'alibi' }],
    ['softcap', { softcap: 2.5 }, { scoreMod: 'softcap:2.5' }],
    ['causal + ALiBi', { causal: true, alibi: 'standard' }, { maskMod: 'causal', scoreMod: 'alibi' }],
  ];
  for (const [name, builtIn, refs] of cases) {
    it(name, () => {
      const p = problem({});
      const x = randomInputs(p, { seed: 11, distribution: 'normal' });
      const want = referenceAttention({ ...p, ...builtIn }, x);
      const got = referenceAttention({ ...p, mask: maskSpecFrom(refs, dims) }, x);
      expect(Array.from(got.o)).toEqual(Array.from(want.o));
      expect(Array.from(got.lse)).toEqual(Array.from(want.lse));
    });
  }
});

describe('user masks', () => {
  const masks: [string, string, (b: number, h: number, i: number, j: number) => boolean][] = [
    ['document ids', 'document:10,20', (_b, _h, i, j) => docOf(i + 8) === docOf(j)],
    ['prefix-LM', 'prefix_lm:7', (_b, _h, i, j) => j < 7 || j <= i + 8],
    ['chunked', 'chunked:16', (_b, _h, i, j) => Math.floor((i + 8) / 16) === Math.floor(j / 16) && j <= i + 8],
    [
      'per head and batch',
      '(h == 0 && kv_idx % 3 != 1) || (h == 1 && b == 0 && q_idx >= kv_idx) || (b == 1 && h == 1 && kv_idx > 40)',
      (b, h, i, j) => (h === 0 && j % 3 !== 1) || (h === 1 && b === 0 && i >= j) || (b === 1 && h === 1 && j > 40),
    ],
  ];
  for (const [name, ref, keep] of masks) {
    it(`${name}: float64 reference equals the hand-written softmax; every step algorithm matches it`, () => {
      const p = problem({ mask: maskSpecFrom({ maskMod: ref }, dims) });
      const x = randomInputs(p, { seed: 5, distribution: 'normal' });
      const want = referenceAttention(p, x);
      expect(maxAbsErr(want.o, handWritten(p, x, keep))).toBeLessThan(1e-12);
      for (const algo of ALGORITHMS) {
        if (algo.quantized) continue;
        const got = runToEnd(algo, p, x, { blockM: 16, blockN: 16 });
        expect(maxAbsErr(got.o, want.o), `${algo.id}`).toBeLessThan(2e-5);
      }
    });
  }

  it('a score_mod runs in every step algorithm and matches float64', () => {
    const p = problem({
      mask: maskSpecFrom({ maskMod: 'causal', scoreMod: 'score - 0.1 * abs(q_idx - kv_idx) + where(h == 1, 0.5, 0)' }, dims),
    });
    const x = randomInputs(p, { seed: 9, distribution: 'normal' });
    const want = referenceAttention(p, x);
    const plain = referenceAttention({ ...p, mask: maskSpecFrom({ maskMod: 'causal' }, dims) }, x);
    expect(maxAbsErr(want.o, plain.o)).toBeGreaterThan(1e-3);
    for (const algo of ALGORITHMS) {
      if (algo.quantized) continue;
      const got = runToEnd(algo, p, x, { blockM: 16, blockN: 16 });
      expect(maxAbsErr(got.o, want.o), `${algo.id}`).toBeLessThan(2e-5);
    }
  });

  it('a bad mask is refused by field and column before anything runs', () => {
    const p = problem({ mask: { maskMod: 'q_idx >= kv_idxx' } });
    const x = randomInputs(problem({}), { seed: 1, distribution: 'normal' });
    expect(() => referenceAttention(p, x)).toThrow("mask.maskMod: column 10: unknown name 'kv_idxx'");
  });
});

describe("the attention chunk: keys of the query's own chunk only, with causal and the window (hopper/mask.h@0251105a l. 116-120)", () => {
  const cases: [string, Partial<AttentionProblem>, (pos: number, j: number) => boolean][] = [
    ['chunk 16', { attentionChunk: 16 }, () => true],
    ['chunk 16, causal', { attentionChunk: 16, causal: true }, (pos, j) => j <= pos],
    ['chunk 12, window (5, 3)', { attentionChunk: 12, window: { left: 5, right: 3 } }, (pos, j) => j >= pos - 5 && j <= pos + 3],
  ];
  for (const [name, over, also] of cases) {
    it(`${name}: float64 reference equals the hand-written softmax; fa3 and standard match it, the others refuse it by field`, () => {
      const p = problem(over);
      const c = over.attentionChunk!;
      const x = randomInputs(p, { seed: 13, distribution: 'normal' });
      // Query i sits at key position i + nk - nq (bottom-right), and sees only keys of the same chunk of c.
      const keep = (_b: number, _h: number, i: number, j: number) => {
        const pos = i + p.nk - p.nq;
        return Math.floor(pos / c) === Math.floor(j / c) && also(pos, j);
      };
      const want = referenceAttention(p, x);
      expect(maxAbsErr(want.o, handWritten(p, x, keep))).toBeLessThan(1e-12);
      expect(maxAbsErr(want.o, referenceAttention(problem({ ...over, attentionChunk: undefined }), x).o)).toBeGreaterThan(1e-3);
      const takers: string[] = [];
      for (const d of DESCRIPTORS) {
        if (d.forward.quantized) continue;
        if (!d.supports.attentionChunk) {
          expect(() => runToEnd(d.forward, p, x, { blockM: 16, blockN: 16 }), d.id).toThrow(ProblemError);
          expect(() => runToEnd(d.forward, p, x, { blockM: 16, blockN: 16 }), d.id).toThrow(/^attentionChunk: .*no attention chunk/);
          continue;
        }
        takers.push(d.id);
        const got = runToEnd(d.forward, p, x, { blockM: 16, blockN: 16 });
        expect(maxAbsErr(got.o, want.o), d.id).toBeLessThan(2e-5);
      }
      expect(takers).toEqual(['standard', 'fa3']);
    });
  }
});
