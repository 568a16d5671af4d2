// The Precision view's data against float64 numbers computed here, independently of
// engine/core/reference.ts and of the module under test: a direct softmax per row in doubles.

import { describe, expect, it } from 'vitest';
import { DebuggerSession } from './session.ts';
import type { LoadRequest } from '../request.ts';
import { PRECISION_MAX_MACS, precisionRefusal } from './precision.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { kvHead } from '../core/inputs.ts';
import type { ExpEvent, TraceEvent } from '../trace/events.ts';

function req(problem: Partial<AttentionProblem>, extra: Partial<LoadRequest> = {}): LoadRequest {
  return {
    algorithm: 'fa3',
    problem: { batch: 1, hq: 2, hk: 1, nq: 40, nk: 48, d: 16, dv: 16, causal: false, dtype: 'fp8e4m3', ...problem },
    seed: 3,
    distribution: 'fa3-outliers',
    blocks: { blockM: 16, blockN: 16 },
    ...extra,
  };
}

/** My float64 attention for head (b, h): scores, row-softmax, output. */
function myReference(s: DebuggerSession, b: number, h: number) {
  const L = (s as unknown as { loaded: { problem: AttentionProblem; inputs: { q: Float32Array; k: Float32Array; v: Float32Array } } })
    .loaded;
  const p = L.problem;
  const x = L.inputs;
  const hk = kvHead(p, h);
  const tau = 1 / Math.sqrt(p.d);
  const S: number[][] = [];
  const O: number[][] = [];
  for (let i = 0; i < p.nq; i++) {
    const row: number[] = [];
    for (let j = 0; j < p.nk; j++) {
      let dot = 0;
      for (let c = 0; c < p.d; c++) dot += x.q[((b * p.hq + h) * p.nq + i) * p.d + c] * x.k[((b * p.hk + hk) * p.nk + j) * p.d + c];
      const visible = !p.causal || j <= i + p.nk - p.nq;
      row.push(visible ? dot * tau : -Infinity);
    }
    S.push(row);
    const mx = Math.max(...row);
    const e = row.map((v) => (v === -Infinity ? 0 : Math.exp(v - mx)));
    const sum = e.reduce((a, v) => a + v, 0);
    const o: number[] = [];
    for (let c = 0; c < p.dv; c++) {
      let acc = 0;
      for (let j = 0; j < p.nk; j++) acc += (e[j] / sum) * x.v[((b * p.hk + hk) * p.nk + j) * p.dv + c];
      o.push(acc);
    }
    O.push(o);
  }
  return { S, O, p };
}

async function loaded(r: LoadRequest) {
  const s = new DebuggerSession();
  await s.load(r);
  return s;
}

describe('precision view data', () => {
  it('the output error of an FP8 run matches float64 computed here, per head and in total', async () => {
    const s = await loaded(req({}, { features: { pScale: 1 } }));
    const out = (s as unknown as { loaded: { output: Float32Array } }).loaded.output;
    let maxAbs = 0;
    let sq = 0;
    let l1 = 0;
    let refL1 = 0;
    let n = 0;
    for (let h = 0; h < 2; h++) {
      const { O, p } = myReference(s, 0, h);
      const r = await s.precision(0, h);
      if (!r.ok) throw new Error(r.reason);
      let headMax = 0;
      for (let i = 0; i < p.nq; i++)
        for (let c = 0; c < p.dv; c++) {
          const e = Math.abs(out[(h * p.nq + i) * p.dv + c] - O[i][c]);
          expect(r.head.oErr[i * p.dv + c]).toBeCloseTo(e, 6);
          headMax = Math.max(headMax, e);
          maxAbs = Math.max(maxAbs, e);
          sq += e * e;
          l1 += e;
          refL1 += Math.abs(O[i][c]);
          n++;
        }
      expect(r.head.oError.max_abs).toBeCloseTo(headMax, 9);
    }
    const r = await s.precision(0, 1);
    if (!r.ok) throw new Error(r.reason);
    expect(r.run.total.max_abs).toBeCloseTo(maxAbs, 9);
    expect(r.run.total.rmse).toBeCloseTo(Math.sqrt(sq / n), 9);
    expect(r.run.total.rel_l1).toBeCloseTo(l1 / refL1, 9);
    // FP8 is far from float64, and not absurdly so.
    expect(r.run.total.rmse).toBeGreaterThan(1e-4);
    expect(r.run.total.rmse).toBeLessThan(0.5);
    expect(r.run.quantized).toBe(true);
  });

  it('S and P errors are measured against float64 S and exp(S64 − m) with the step’s m, and every flushed P is marked', async () => {
    const s = await loaded(req({ causal: true }, { features: { pScale: 1 }, distribution: 'sink' }));
    const h = 1;
    const { S, p } = myReference(s, 0, h);
    const r = await s.precision(0, h);
    if (!r.ok) throw new Error(r.reason);
    const events = s.events().filter((e: TraceEvent) => e.b === 0 && e.h === h);
    // Every S cell some qk step wrote: |S − S64| with my S64.
    let checked = 0;
    for (const ev of events) {
      if (ev.kind !== 'qk') continue;
      const [r0, r1] = ev.tile.rows;
      const [c0, c1] = ev.tile.cols;
      for (let i = r0; i < r1; i++)
        for (let j = c0; j < c1; j++) {
          const got = r.head.sErr[i * p.nk + j];
          if (S[i][j] === -Infinity) expect(got).toBeNaN();
          else {
            expect(got).toBeCloseTo(Math.abs(ev.s[(i - r0) * (c1 - c0) + (j - c0)] - S[i][j]), 6);
            checked++;
          }
        }
    }
    expect(checked).toBeGreaterThan(p.nq * p.nk * 0.4);
    // P against exp(S64 − m) of the exp step, and the flushed cells: cast to 0 from a positive exact P.
    let flushedSeen = 0;
    for (const ev of events.filter((e): e is ExpEvent => e.kind === 'exp')) {
      const [r0, r1] = ev.tile.rows;
      const [c0, c1] = ev.tile.cols;
      const flushed = new Set(ev.flushed ?? []);
      for (let i = r0; i < r1; i++)
        for (let j = c0; j < c1; j++) {
          const k = (i - r0) * (c1 - c0) + (j - c0);
          const exact = S[i][j] === -Infinity ? 0 : Math.exp(S[i][j] - ev.m[i - r0]);
          expect(r.head.p64[i * p.nk + j]).toBeCloseTo(exact, 9);
          if (S[i][j] !== -Infinity) expect(r.head.pErr[i * p.nk + j]).toBeCloseTo(Math.abs(ev.p[k] - exact), 6);
          expect(r.head.flushedAt[i * p.nk + j]).toBe(flushed.has(k) ? ev.step : -1);
          if (flushed.has(k)) {
            flushedSeen++;
            expect(ev.p[k]).toBe(0);
            // e4m3 with pScale 1 keeps nothing at or below 2⁻¹⁰; the fp32 P was a little above the exact one at most.
            expect(exact).toBeLessThan(2 ** -9);
            expect(exact).toBeGreaterThan(0);
          }
        }
    }
    expect(flushedSeen).toBeGreaterThan(0);
    expect(r.head.flushed).toBe(flushedSeen);
    expect(r.head.tiles.reduce((a, t) => a + t.flushed, 0)).toBe(flushedSeen);
    expect(r.run.castSteps.length).toBe(r.run.castFlushed.length);
    expect(r.run.flushedTotal).toBe([...r.run.castFlushed].reduce((a, v) => a + v, 0));
    expect(s.summary?.lowPrecision?.flushed).toBe(r.run.flushedTotal);
  });

  it('each tile carries the scales of its Q, K and V blocks and pScale from the trace', async () => {
    // The FA3 paper's block quantization (off by default: the shipped kernel has one descale per batch and KV head).
    const s = await loaded(req({}, { features: { pScale: 64, blockQuant: true } }));
    const r = await s.precision(0, 0);
    if (!r.ok) throw new Error(r.reason);
    const ev = s.events();
    expect(r.head.tiles.length).toBe(3 * 3);
    for (const t of r.head.tiles) {
      const qk = ev.find((e) => e.kind === 'qk' && e.h === 0 && e.tile.qBlock === t.qBlock && e.tile.kvBlock === t.kvBlock);
      const pv = ev.find((e) => e.kind === 'pv' && e.h === 0 && e.tile.qBlock === t.qBlock && e.tile.kvBlock === t.kvBlock);
      expect(qk?.kind === 'qk' && t.qScale === qk.qScale && t.kScale === qk.kScale).toBe(true);
      expect(pv?.kind === 'pv' && t.vScale === pv.vScale).toBe(true);
      expect(t.pScale).toBe(64);
      expect(t.qScale).toBeGreaterThan(0);
      // A block scale is max|x| / 448 of the block's (rotated) values: never above the tensor's max over 448 times √d (the Hadamard can concentrate a row).
      expect(t.kSaturated).toBeGreaterThanOrEqual(0);
    }
    // Block quantization: the K blocks' scales differ; by default every tile shares the head's one scale.
    expect(new Set(r.head.tiles.map((t) => t.kScale)).size).toBeGreaterThan(1);
    const d = await loaded(req({}, { features: { pScale: 64 } }));
    const rd = await d.precision(0, 0);
    if (!rd.ok) throw new Error(rd.reason);
    expect(new Set(rd.head.tiles.map((t) => t.kScale)).size).toBe(1);
  });

  it('an fp16 run has S and P errors of its rounding alone, no scales and no flushed values', async () => {
    const s = await loaded(req({ dtype: 'fp16' }, { distribution: 'normal' }));
    expect(s.summary?.lowPrecision).toBeUndefined();
    const r = await s.precision(0, 0);
    if (!r.ok) throw new Error(r.reason);
    expect(r.run.quantized).toBe(false);
    expect(r.run.flushedTotal).toBe(0);
    expect(r.head.tiles.every((t) => t.qScale === undefined && t.flushed === 0)).toBe(true);
    // fp16 output, float32 scores: O error about fp16's half ulp, S error far smaller.
    expect(r.run.total.max_abs).toBeGreaterThan(0);
    expect(r.run.total.max_abs).toBeLessThan(2e-3);
    const sMax = Math.max(...r.head.tiles.map((t) => t.sMaxErr));
    expect(sMax).toBeLessThan(1e-5);
  });

  it('sage with K smoothing: S is compared with float64 scores shifted by the row’s q·mean(K)·scale, which the softmax ignores', async () => {
    const s = await loaded(
      req({ dtype: 'fp16', hk: 2, d: 64, dv: 64 }, { algorithm: 'sage', distribution: 'normal', blocks: { blockM: 16, blockN: 16 } }),
    );
    const r = await s.precision(0, 1);
    if (!r.ok) throw new Error(r.reason);
    const { S, p } = myReference(s, 0, 1);
    const L = (s as unknown as { loaded: { inputs: { q: Float32Array; k: Float32Array } } }).loaded;
    const x = L.inputs;
    // My own shift: q_i · (mean of K over the tokens) · τ, in float64.
    const mean = Array.from({ length: p.d }, (_, c) => {
      let t = 0;
      for (let j = 0; j < p.nk; j++) t += x.k[(1 * p.nk + j) * p.d + c];
      return t / p.nk;
    });
    const shift = Array.from(
      { length: p.nq },
      (_, i) => mean.reduce((a, m, c) => a + m * x.q[(1 * p.nq + i) * p.d + c], 0) / Math.sqrt(p.d),
    );
    const maxShift = Math.max(...shift.map(Math.abs));
    let worst = 0;
    for (let i = 0; i < p.nq; i++)
      for (let j = 0; j < p.nk; j++) {
        const got = r.head.sErr[i * p.nk + j];
        expect(Number.isNaN(got)).toBe(false);
        // S64 is my float64 score less my shift (sage's mean is rounded to fp16: a hair apart).
        expect(Math.abs(r.head.s64[i * p.nk + j] - (S[i][j] - shift[i]))).toBeLessThan(2e-3);
        worst = Math.max(worst, got);
      }
    // The INT8 steps' error is a fraction of the shift, which would otherwise show in every cell of the row.
    expect(worst).toBeLessThan((maxShift * Math.LOG2E) / 3);
  });

  it('refuses a reference above the limit with the sizes, and a backward run', async () => {
    const big: AttentionProblem = { batch: 1, hq: 64, hk: 64, nq: 256, nk: 256, d: 64, dv: 64, causal: false, dtype: 'fp16' };
    expect(64 * 256 * 256 * 128).toBeGreaterThan(PRECISION_MAX_MACS);
    expect(precisionRefusal(big)).toMatch(/537 M multiply-adds.*at most 134 M/);
    expect(precisionRefusal({ ...big, hq: 1, hk: 1 })).toBeUndefined();
    const s = await loaded({ ...req({ dtype: 'fp16' }, { distribution: 'normal' }), algorithm: 'fa2', pass: 'backward' });
    const r = await s.precision(0, 0);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/backward/);
  });
});
