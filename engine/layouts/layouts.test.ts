// Serving layouts against the dense float64 reference: each sequence is generated as its own
// dense problem, then packed (varlen) or scattered into shuffled pages of a NaN-filled pool
// (paged) by this test's own index arithmetic, so the truth never goes through the layout
// code under test.

import { describe, expect, it } from 'vitest';
import { ALGORITHMS, algorithmById } from '../algorithms/registry.ts';

// Every algorithm that is exact up to fp32 rounding (sage quantizes; its tests are its own).
const EXACT = ALGORITHMS.filter((a) => !a.quantized);
import { addDelta, emptyCounters, type Counters } from '../core/counters.ts';
import { roundTo } from '../core/dtype.ts';
import { randomInputs, type AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { mulberry32 } from '../core/random.ts';
import type { TraceEvent } from '../trace/events.ts';
import { pagedOutput, runPaged, type PagedProblem } from './paged.ts';
import { runLayoutToEnd, type LayoutBase } from './sequence-runner.ts';
import { packedResult, runVarlen, type VarlenProblem } from './varlen.ts';

const tol = (dtype: DType) => (dtype === 'fp32' ? 2e-5 : 2e-3);

interface Truth {
  o: Float64Array;
  lse: Float64Array;
}

function maxErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue; // equal infinities included
    const e = Math.abs(a[i] - b[i]);
    m = Number.isNaN(e) ? Infinity : Math.max(m, e);
  }
  return m;
}

function collect(gen: Generator<TraceEvent, unknown, void>): { events: TraceEvent[]; sum: Counters } {
  const events: TraceEvent[] = [];
  const sum = emptyCounters();
  for (;;) {
    const n = gen.next();
    if (n.done) break;
    events.push(n.value);
    addDelta(sum, n.value.delta);
    sum.steps++;
  }
  return { events, sum };
}

// ---- varlen ----

function makeVarlen(
  base: LayoutBase,
  lq: number[],
  lk: number[],
  seed: number,
): { vp: VarlenProblem; x: { q: Float32Array; k: Float32Array; v: Float32Array }; truth: Truth } {
  const cq = [0];
  const ck = [0];
  lq.forEach((n, b) => {
    cq.push(cq[b] + n);
    ck.push(ck[b] + lk[b]);
  });
  const tq = cq[lq.length];
  const tk = ck[lk.length];
  const { hq, hk, d, dv } = base;
  const q = new Float32Array(tq * hq * d);
  const k = new Float32Array(tk * hk * d);
  const v = new Float32Array(tk * hk * dv);
  const o = new Float64Array(tq * hq * dv);
  const lse = new Float64Array(hq * tq);
  lq.forEach((nq, b) => {
    if (nq === 0) return;
    const nk = lk[b];
    // A sequence without keys: its rows are empty; the truth is O = 0, LSE = −inf.
    const p: AttentionProblem = { ...base, batch: 1, nq, nk: Math.max(nk, 1) };
    const xi = randomInputs(p, { seed: seed + b });
    for (let h = 0; h < hq; h++)
      for (let i = 0; i < nq; i++) for (let c = 0; c < d; c++) q[((cq[b] + i) * hq + h) * d + c] = xi.q[(h * nq + i) * d + c];
    for (let h = 0; h < hk; h++)
      for (let j = 0; j < nk; j++) {
        for (let c = 0; c < d; c++) k[((ck[b] + j) * hk + h) * d + c] = xi.k[(h * nk + j) * d + c];
        for (let c = 0; c < dv; c++) v[((ck[b] + j) * hk + h) * dv + c] = xi.v[(h * nk + j) * dv + c];
      }
    const r = nk > 0 ? referenceAttention(p, xi) : undefined;
    for (let h = 0; h < hq; h++)
      for (let i = 0; i < nq; i++) {
        lse[h * tq + cq[b] + i] = r ? r.lse[h * nq + i] : -Infinity;
        for (let c = 0; c < dv; c++) o[((cq[b] + i) * hq + h) * dv + c] = r ? r.o[(h * nq + i) * dv + c] : 0;
      }
  });
  return { vp: { base, cuSeqlensQ: cq, cuSeqlensK: ck }, x: { q, k, v }, truth: { o, lse } };
}

const BASE: LayoutBase = { hq: 4, hk: 2, d: 16, dv: 8, causal: false, dtype: 'fp32' };
// Lengths: an empty sequence, one with queries but no keys, Nq > Nk and Nq < Nk.
const LQ = [5, 0, 7, 19, 1];
const LK = [9, 4, 0, 11, 30];

describe('varlen (packed sequences with cu_seqlens)', () => {
  const masks: { name: string; base: Partial<LayoutBase> }[] = [
    { name: 'no mask', base: {} },
    { name: 'causal', base: { causal: true } },
    { name: 'window 3,1', base: { window: { left: 3, right: 1 } } },
    { name: 'causal + softcap + sinks, MQA', base: { causal: true, softcap: 5, sinks: [0.3, -1, 2, 0], hk: 1 } },
  ];
  for (const m of masks) {
    it(`every algorithm matches the per-sequence float64 reference (${m.name})`, () => {
      const { vp, x, truth } = makeVarlen({ ...BASE, ...m.base }, LQ, LK, 11);
      for (const algo of EXACT) {
        const r = runLayoutToEnd(runVarlen(algo, vp, x, { trace: false, blockM: 4, blockN: 4 }));
        const out = packedResult(vp, r);
        expect(maxErr(out.o, truth.o), `${algo.id} o`).toBeLessThan(2e-5);
        expect(maxErr(out.lse, truth.lse), `${algo.id} lse`).toBeLessThan(2e-5);
      }
    });
  }

  it('16-bit inputs stay within 2e-3 of the reference on their rounded values (or twice the cost of storing O in 16 bits)', () => {
    for (const dtype of ['fp16', 'bf16'] as const) {
      const { vp, x, truth } = makeVarlen({ ...BASE, causal: true, dtype }, LQ, LK, 5);
      // O is returned in the input dtype: storing the exact result already costs this much.
      const storeErr = maxErr(
        Array.from(truth.o, (v) => roundTo(dtype, v)),
        truth.o,
      );
      for (const id of ['fa2', 'fa3', 'fa4', 'cute-fa2', 'flash-decoding']) {
        const out = packedResult(vp, runLayoutToEnd(runVarlen(algorithmById(id), vp, x, { trace: false })));
        expect(maxErr(out.o, truth.o), `${id} ${dtype}`).toBeLessThanOrEqual(Math.max(tol(dtype), 2 * storeErr));
        expect(maxErr(out.lse, truth.lse), `${id} ${dtype} lse`).toBeLessThan(tol(dtype));
      }
    }
  });

  it('traces: b is the sequence, packed ranges are offset by cu_seqlens, deltas add up to the counters', () => {
    const { vp, x } = makeVarlen({ ...BASE, causal: true }, LQ, LK, 3);
    for (const id of ['fa2', 'flash-decoding', 'fa4']) {
      const algo = algorithmById(id);
      const gen = runVarlen(algo, vp, x, { trace: true, blockM: 4, blockN: 4 });
      const { events, sum } = collect(gen);
      const off = runLayoutToEnd(runVarlen(algo, vp, x, { trace: false, blockM: 4, blockN: 4 }));
      expect(sum).toEqual(off.counters);
      expect(events.map((e) => e.step)).toEqual(events.map((_, i) => i));
      for (let i = 1; i < events.length; i++) expect(events[i].b).toBeGreaterThanOrEqual(events[i - 1].b);
      expect(new Set(events.map((e) => e.b))).toEqual(new Set([0, 2, 3, 4])); // sequence 1 has no queries
      for (const e of events) {
        if (e.line === 'layout.emptyKeys') {
          expect(e.b).toBe(2);
          continue;
        }
        expect(e.packed!.rows).toEqual([e.tile.rows[0] + vp.cuSeqlensQ[e.b], e.tile.rows[1] + vp.cuSeqlensQ[e.b]]);
        if (e.tile.cols[1] > e.tile.cols[0]) {
          expect(e.packed!.cols).toEqual([e.tile.cols[0] + vp.cuSeqlensK[e.b], e.tile.cols[1] + vp.cuSeqlensK[e.b]]);
          expect(e.tile.cols[1]).toBeLessThanOrEqual(LK[e.b]); // never a key of the next sequence
        }
        expect(e.tile.rows[1]).toBeLessThanOrEqual(LQ[e.b]);
      }
      const qLoads = events.filter((e) => e.kind === 'load' && e.delta.hbmRead?.Q).length;
      expect(off.counters.hbmRead.cu_seqlens_q).toBe(8 * qLoads);
      expect(off.counters.hbmRead.cu_seqlens_k).toBe(8 * qLoads);
      const empty = events.filter((e) => e.line === 'layout.emptyKeys');
      expect(empty.length).toBe(BASE.hq);
    }
  });

  it('packing costs the per-sequence FLOPs, far below padding every sequence to the longest', () => {
    const lens = [8, 64, 16, 32];
    const { vp, x } = makeVarlen(BASE, lens, lens, 1);
    const r = runLayoutToEnd(runVarlen(algorithmById('fa2'), vp, x, { trace: false, blockM: 8, blockN: 8 }));
    const perSeq = lens.reduce((s, n) => s + 2 * BASE.hq * n * n * (BASE.d + BASE.dv), 0);
    expect(r.counters.matmulFlops).toBe(perSeq);
    const padded = 2 * lens.length * BASE.hq * 64 * 64 * (BASE.d + BASE.dv);
    expect(r.counters.matmulFlops / padded).toBeCloseTo((64 + 256 + 1024 + 4096) / (4 * 4096), 10);
  });

  it('refuses inconsistent offsets, naming the tensor and index', () => {
    const { vp, x } = makeVarlen(BASE, [3, 4], [5, 6], 2);
    const fa2 = algorithmById('fa2');
    const run = (cq: number[], ck: number[]) => () => runVarlen(fa2, { ...vp, cuSeqlensQ: cq, cuSeqlensK: ck }, x, { trace: false });
    expect(run([0, 4, 3], [0, 5, 11])).toThrow(/cu_seqlens_q\[2\].*non-decreasing/);
    expect(run([0, 3, 6], [0, 5, 11])).toThrow(/cu_seqlens_q\[2\].*token count 7/);
    expect(run([0, 3, 7], [0, 5, 12])).toThrow(/cu_seqlens_k\[2\].*token count 11/);
    expect(run([1, 3, 7], [0, 5, 11])).toThrow(/cu_seqlens_q\[0\]: must be 0/);
    expect(run([0, 3, 7], [0, 11])).toThrow(/cu_seqlens_k: must have the same length/);
  });
});

// ---- paged ----

interface PagedCase {
  pp: PagedProblem;
  x: { q: Float32Array; kCache: Float32Array; vCache: Float32Array };
  truth: Truth;
  dense: AttentionInputs[];
}

function makePaged(
  base: LayoutBase,
  nq: number,
  lens: number[],
  pageSize: number,
  numPages: number,
  maxPages: number,
  seed: number,
): PagedCase {
  const { hq, hk, d, dv } = base;
  const B = lens.length;
  const rnd = mulberry32(seed);
  // Shuffled pool; every slot starts as NaN, and only owned slots are written.
  const order = Array.from({ length: numPages }, (_, i) => i);
  for (let i = numPages - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const kCache = new Float32Array(numPages * pageSize * hk * d).fill(NaN);
  const vCache = new Float32Array(numPages * pageSize * hk * dv).fill(NaN);
  // Unused table entries point outside the pool: reading them would be an error, not a NaN.
  const table = new Array<number>(B * maxPages).fill(-1);
  const q = new Float32Array(B * hq * nq * d);
  const o = new Float64Array(B * hq * nq * dv);
  const lse = new Float64Array(B * hq * nq).fill(-Infinity);
  const dense: AttentionInputs[] = [];
  let next = 0;
  lens.forEach((L, b) => {
    const p: AttentionProblem = { ...base, batch: 1, nq, nk: Math.max(L, 1) };
    const xi = randomInputs(p, { seed: seed * 31 + b });
    dense.push(xi);
    q.set(xi.q, b * hq * nq * d);
    for (let j = 0; j < Math.ceil(L / pageSize); j++) table[b * maxPages + j] = order[next++];
    for (let j = 0; j < L; j++) {
      const slot = table[b * maxPages + Math.floor(j / pageSize)] * pageSize + (j % pageSize);
      for (let h = 0; h < hk; h++) {
        for (let c = 0; c < d; c++) kCache[(slot * hk + h) * d + c] = xi.k[(h * L + j) * d + c];
        for (let c = 0; c < dv; c++) vCache[(slot * hk + h) * dv + c] = xi.v[(h * L + j) * dv + c];
      }
    }
    if (L > 0) {
      const r = referenceAttention(p, xi);
      o.set(r.o, b * hq * nq * dv);
      lse.set(r.lse, b * hq * nq);
    }
  });
  return {
    pp: { base, batch: B, nq, numPages, pageSize, maxPages, blockTable: table, cacheSeqlens: lens },
    x: { q, kCache, vCache },
    truth: { o, lse },
    dense,
  };
}

describe('paged K/V cache', () => {
  const LENS = [37, 0, 70, 16];
  for (const [nq, causal] of [
    [1, false],
    [5, true],
  ] as const) {
    it(`every algorithm reads only owned slots of a NaN-filled pool and matches the reference (Nq = ${nq}${causal ? ', causal' : ''})`, () => {
      const c = makePaged({ ...BASE, causal }, nq, LENS, 16, 13, 6, 4);
      for (const algo of EXACT) {
        const run = runPaged(algo, c.pp, c.x, { trace: false });
        const out = pagedOutput(c.pp, runLayoutToEnd(run.gen));
        expect(maxErr(out.o, c.truth.o), `${algo.id} o`).toBeLessThan(2e-5);
        expect(maxErr(out.lse, c.truth.lse), `${algo.id} lse`).toBeLessThan(2e-5);
        // Pages touched: exactly the pages the sequences own.
        const owned = LENS.reduce((s, L) => s + Math.ceil(L / 16), 0);
        expect(run.touched.size, algo.id).toBe(owned);
      }
    });
  }

  it('flash-decoding splits end on page boundaries and no page is read by two splits', () => {
    const c = makePaged({ ...BASE, d: 32, dv: 32 }, 1, [200, 37, 129], 32, 20, 8, 9);
    const run = runPaged(algorithmById('flash-decoding'), c.pp, c.x, { trace: true, features: { splits: 3 } });
    const { events } = collect(run.gen);
    expect(run.blockN).toBe(32);
    for (let b = 0; b < 3; b++) {
      const bySplit = new Map<number, Set<number>>();
      for (const e of events) {
        if (e.b !== b || e.kind !== 'load' || !e.pages) continue;
        const s = e.split ?? 0;
        if (!bySplit.has(s)) bySplit.set(s, new Set());
        for (const pg of e.pages) bySplit.get(s)!.add(pg);
      }
      const all = [...bySplit.values()].flatMap((s) => [...s]);
      expect(new Set(all).size).toBe(all.length);
      // First key of each split is a multiple of the page size.
      const firstCols = [...bySplit.keys()].map((s) =>
        Math.min(
          ...events.filter((e) => e.b === b && e.kind === 'load' && (e.split ?? 0) === s && e.tile.cols[1] > 0).map((e) => e.tile.cols[0]),
        ),
      );
      for (const c0 of firstCols) expect(c0 % 32).toBe(0);
    }
    // Three splits over the longest sequence's 7 pages: 3 pages per split.
    expect(events.filter((e) => e.b === 0 && e.kind === 'write' && e.line === 'flash-decoding.writePartial').length).toBe(BASE.hq * 3);
  });

  it('counts a block-table entry per page of every K/V load and cache_seqlens per Q load', () => {
    const c = makePaged({ ...BASE, causal: true }, 3, [37, 70], 16, 10, 5, 2);
    for (const id of ['fa2', 'fmha-v2', 'flash-decoding']) {
      const run = runPaged(algorithmById(id), c.pp, c.x, { trace: true });
      const { events, sum } = collect(run.gen);
      let table = 0;
      for (const e of events) if (e.kind === 'load' && e.delta.hbmRead?.K) table += e.pages!.length * (id === 'fmha-v2' ? 8 : 4);
      expect(sum.hbmRead.block_table, id).toBe(table);
      expect(sum.hbmRead.cache_seqlens, id).toBe(4 * events.filter((e) => e.kind === 'load' && e.delta.hbmRead?.Q).length);
      for (const e of events)
        if (e.pages)
          for (const pg of e.pages) expect(c.pp.blockTable.slice(e.b * 5, e.b * 5 + Math.ceil([37, 70][e.b] / 16))).toContain(pg);
    }
  });

  it('refuses a bad table or lengths, naming the tensor and index', () => {
    const c = makePaged(BASE, 1, [37, 20], 16, 6, 3, 1);
    const fa2 = algorithmById('fa2');
    const withTable = (t: number[]) => () => runPaged(fa2, { ...c.pp, blockTable: t }, c.x, { trace: false });
    const t = [...c.pp.blockTable];
    t[1 * 3 + 1] = 6;
    expect(withTable(t)).toThrow(/block_table\[1, 1\].*page 6 is out of range/);
    // An entry past the sequence's pages is unused: any value is fine.
    const unused = [...c.pp.blockTable];
    unused[1 * 3 + 2] = 999;
    expect(withTable(unused)).not.toThrow();
    expect(() => runPaged(fa2, { ...c.pp, cacheSeqlens: [49, 20] }, c.x, { trace: false })).toThrow(
      /cache_seqlens\[0\].*4 pages of 16.*3 columns/,
    );
    expect(() => runPaged(fa2, { ...c.pp, base: { ...BASE, hk: 4 } }, c.x, { trace: false })).toThrow(/k_cache/);
  });
});
