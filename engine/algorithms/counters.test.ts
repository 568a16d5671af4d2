// The counters of each algorithm equal its closed-form counts, derived here from the
// algorithm as written (not from the code): dense problems (no mask), several (N, d, M).
// Block sizes follow the FA1 paper: M bytes = M/4 fp32 words, Bc = ceil(words / 4d),
// Br = min(Bc, d).

import { describe, expect, it } from 'vitest';
import { totalBytes, type Counters } from '../core/counters.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import { fa1 } from './fa1/forward.ts';
import { fa2 } from './fa2/forward.ts';
import { standard } from './standard/forward.ts';

interface Shape {
  N: number;
  d: number;
  dv: number;
  M: number;
  heads: number; // batch × query heads
  dtype: DType;
}

function blocks(s: Shape) {
  const bc = Math.ceil(s.M / 4 / (4 * s.d));
  const br = Math.min(bc, s.d);
  return { br, bc, Tr: Math.ceil(s.N / br), Tc: Math.ceil(s.N / bc) };
}

function expected(
  algo: string,
  s: Shape,
): Omit<Counters, 'hbmRead' | 'hbmWritten'> & { read: Record<string, number>; written: Record<string, number> } {
  const { N, d, dv } = s;
  const eb = s.dtype === 'fp32' ? 4 : 2;
  const { Tr, Tc } = blocks(s);
  const matmul = 2 * N * N * d + 2 * N * N * dv;
  let c: {
    read: Record<string, number>;
    written: Record<string, number>;
    matmulFlops: number;
    nonMatmulFlops: number;
    expCount: number;
    rescaleCount: number;
    steps: number;
  };
  if (algo === 'standard') {
    c = {
      read: { K: N * d * eb, Q: N * d * eb, S: N * N * 4, V: N * dv * eb, P: N * N * eb },
      written: { S: N * N * 4, P: N * N * eb, LSE: N * 4, O: N * dv * eb },
      matmulFlops: matmul,
      nonMatmulFlops: 6 * N * N + 3 * N,
      expCount: N * N,
      rescaleCount: 0,
      steps: 2 + 12 * Tr,
    };
  } else if (algo === 'fa1') {
    // Outer over Tc K/V blocks, each loaded once; every (i, j) step reads Q_i, O_i, l_i, m_i and writes O_i, l_i, m_i (O, l, m in fp32).
    c = {
      read: { K: N * d * eb, V: N * dv * eb, Q: Tc * N * d * eb, O: Tc * N * dv * 4, l: Tc * N * 4, m: Tc * N * 4 },
      written: { O: (Tc + 1) * N * dv * 4, l: (Tc + 1) * N * 4, m: (Tc + 1) * N * 4 },
      matmulFlops: matmul,
      nonMatmulFlops: 5 * N * N + 11 * Tc * N + 3 * Tc * N * dv,
      expCount: N * N + 2 * Tc * N,
      rescaleCount: Tc * N,
      steps: 1 + Tc * (1 + 8 * Tr),
    };
  } else {
    // Outer over Tr Q blocks, each loaded once; K and V are streamed once per Q block; the
    // first K/V block of a row needs no rescale.
    c = {
      read: { Q: N * d * eb, K: Tr * N * d * eb, V: Tr * N * dv * eb },
      written: { O: N * dv * eb, LSE: N * 4 },
      matmulFlops: matmul,
      nonMatmulFlops: 5 * N * N + 3 * Tc * N + 2 * (Tc - 1) * N + (Tc - 1) * N * dv + N * dv + 3 * N,
      expCount: N * N + (Tc - 1) * N,
      rescaleCount: (Tc - 1) * N,
      steps: Tr * (7 * Tc + 2),
    };
  }
  const times = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v * s.heads]));
  return {
    read: times(c.read),
    written: times(c.written),
    matmulFlops: c.matmulFlops * s.heads,
    nonMatmulFlops: c.nonMatmulFlops * s.heads,
    expCount: c.expCount * s.heads,
    rescaleCount: c.rescaleCount * s.heads,
    atomicAdds: 0, // the forward adds nothing atomically
    steps: c.steps * s.heads,
  };
}

const SHAPES: Shape[] = [
  { N: 64, d: 16, dv: 16, M: 4096, heads: 1, dtype: 'fp32' }, // Bc = 16, Br = 16
  { N: 100, d: 32, dv: 32, M: 16384, heads: 1, dtype: 'fp32' }, // Bc = 32, Br = 32, ragged last block
  { N: 77, d: 8, dv: 12, M: 2048, heads: 2, dtype: 'fp16' }, // Bc = 16, Br = 8 (capped by d)
  { N: 50, d: 64, dv: 64, M: 1024, heads: 1, dtype: 'bf16' }, // Bc = 1: one key per block
];

describe.each([standard, fa1, fa2].map((a) => [a.id, a] as const))('%s counters equal the closed form', (id, algo) => {
  for (const s of SHAPES) {
    it(`N=${s.N} d=${s.d} dv=${s.dv} M=${s.M} ${s.dtype} heads=${s.heads}`, () => {
      const p: AttentionProblem = { batch: 1, hq: s.heads, hk: 1, nq: s.N, nk: s.N, d: s.d, dv: s.dv, causal: false, dtype: s.dtype };
      const r = runToEnd(algo, p, randomInputs(p, { seed: 1 }), { sramBytes: s.M });
      const e = expected(id, s);
      if (id !== 'standard') expect(r.blocks).toEqual({ blockM: blocks(s).br, blockN: blocks(s).bc });
      expect(r.counters.hbmRead).toEqual(e.read);
      expect(r.counters.hbmWritten).toEqual(e.written);
      expect(r.counters.matmulFlops).toBe(e.matmulFlops);
      expect(r.counters.nonMatmulFlops).toBe(e.nonMatmulFlops);
      expect(r.counters.expCount).toBe(e.expCount);
      expect(r.counters.rescaleCount).toBe(e.rescaleCount);
      expect(r.counters.steps).toBe(e.steps);
    });
  }
});

describe('counters under a causal mask', () => {
  it('FA2 skips the blocks above the diagonal: matmul FLOPs count only visited tiles', () => {
    // N = 64, blocks 16×16: 4 row blocks, row block i visits i+1 K/V blocks -> 10 tiles of 16×16.
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 16, dv: 16, causal: true, dtype: 'fp32' };
    const r = runToEnd(fa2, p, randomInputs(p, { seed: 2 }), { blockM: 16, blockN: 16 });
    expect(r.counters.matmulFlops).toBe(10 * (2 * 16 * 16 * 16 + 2 * 16 * 16 * 16));
    expect(r.counters.hbmRead.K).toBe(10 * 16 * 16 * 4);
    expect(r.counters.rescaleCount).toBe(6 * 16); // tiles after the first of each row block
    expect(totalBytes(r.counters.hbmWritten)).toBe(64 * 16 * 4 + 64 * 4);
  });
  it('FA1 loads each K/V block once and visits the same 10 tiles', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 64, nk: 64, d: 16, dv: 16, causal: true, dtype: 'fp32' };
    const r = runToEnd(fa1, p, randomInputs(p, { seed: 2 }), { blockM: 16, blockN: 16 });
    expect(r.counters.hbmRead.K).toBe(64 * 16 * 4);
    expect(r.counters.hbmRead.Q).toBe(10 * 16 * 16 * 4);
    expect(r.counters.rescaleCount).toBe(10 * 16);
  });
});
