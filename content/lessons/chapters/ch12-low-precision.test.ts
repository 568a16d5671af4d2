// Chapter 12 against float64 computed here: the error table's RMSEs against an attention
// written in this file, the K outlier and its block's scale from the raw inputs, the flushed
// P count from float64 scores of the quantized inputs in the loop order, and what the text
// says about each computed table (which is larger, what thins out) holds.

import { describe, expect, it } from 'vitest';
import { fa3 } from '../../../engine/algorithms/fa3.ts';
import { randomInputs, SINK_KEYS } from '../../../engine/inputs.ts';
import { prepareFp8 } from '../../../engine/lowprec/fa3-fp8.ts';
import { roundFp8 } from '../../../engine/lowprec/fp8.ts';
import { softmaxScale, type AttentionProblem } from '../../../engine/problem.ts';
import { runToEnd } from '../../../engine/run.ts';
import { chapterByNumber } from './index.ts';
import { lessonContext, liveBlock, locateBlock, RunCache, runRequest } from './evaluate.ts';
import { ERROR_PROBLEM, ERROR_SEED, errorRow, flushTable, fp8ErrorTable, kBlockScales, rotationEffect, SINK_PRESET } from './low-precision.ts';

const cache = new RunCache(20);
const c = chapterByNumber(12)!;
const req = c.panes[0].preset;
const answer = (id: string, r = req) => c.questions.find((q) => q.id === id)!.answer(lessonContext(c, r, cache));

/** softmax(τ QKᵀ) V in float64, one head. */
function attention64(p: AttentionProblem, q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>): Float64Array {
  const tau = softmaxScale(p);
  const o = new Float64Array(p.nq * p.dv);
  const s = new Float64Array(p.nk);
  for (let i = 0; i < p.nq; i++) {
    let m = -Infinity;
    for (let j = 0; j < p.nk; j++) {
      let a = 0;
      for (let c2 = 0; c2 < p.d; c2++) a += q[i * p.d + c2] * k[j * p.d + c2];
      s[j] = a * tau;
      m = Math.max(m, s[j]);
    }
    let l = 0;
    for (let j = 0; j < p.nk; j++) l += (s[j] = Math.exp(s[j] - m));
    for (let j = 0; j < p.nk; j++) for (let c2 = 0; c2 < p.dv; c2++) o[i * p.dv + c2] += (s[j] / l) * v[j * p.dv + c2];
  }
  return o;
}

describe('chapter 12: low precision', () => {
  it('the output-error table is the RMSE of fa3 against float64 attention computed here', () => {
    const x = randomInputs(ERROR_PROBLEM, { seed: ERROR_SEED, distribution: 'fa3-outliers' });
    const ref = attention64(ERROR_PROBLEM, x.q, x.k, x.v);
    for (const row of fp8ErrorTable().filter((r) => r.id === 'per-tensor' || r.id === 'fa3' || r.id === 'fp16')) {
      const o = runToEnd(fa3, { ...ERROR_PROBLEM, dtype: row.dtype }, x, { blockM: 128, blockN: 128, features: row.features }).o;
      let sq = 0;
      for (let i = 0; i < o.length; i++) sq += (o[i] - ref[i]) ** 2;
      expect(row.rmse, row.label).toBeCloseTo(Math.sqrt(sq / o.length), 8);
    }
  });

  it('what the text says about the error table holds: FA3 FP8 below per-tensor and block-only, FP16 far below both', () => {
    expect(errorRow('fa3').rmse).toBeLessThan(errorRow('per-tensor').rmse / 1.2);
    expect(errorRow('fa3').rmse).toBeLessThan(errorRow('block').rmse);
    expect(answer('rmse-incoherent')).toBe('off');
    expect(errorRow('fp16').rmse * 50).toBeLessThan(errorRow('fa3').rmse);
  });

  it('the rotation: K keeps its average rounding error, loses its largest entry, and the worst score error falls', () => {
    const r = rotationEffect();
    const x = randomInputs(ERROR_PROBLEM, { seed: ERROR_SEED, distribution: 'fa3-outliers' });
    expect(r.kMax[0]).toBe(Math.max(...Array.from(x.k, Math.abs)));
    expect(r.kMax[1]).toBeLessThan(r.kMax[0] / 2);
    expect(Math.abs(r.kQuantRms[1] / r.kQuantRms[0] - 1)).toBeLessThan(0.1);
    expect(Math.abs(r.sRms[1] / r.sRms[0] - 1)).toBeLessThan(0.1);
    expect(r.sMax[1]).toBeLessThan(r.sMax[0] / 1.5);
  });

  it("block-max is the largest |K| of the target's block, from the raw inputs (rotation off)", () => {
    const x = randomInputs(req.problem, { seed: req.seed, distribution: req.distribution });
    const run = runRequest(req);
    const t = run.events[c.panes[0].target.find(run.events)];
    const [k0, k1] = t.tile.cols;
    let want = 0;
    for (let j = k0; j < k1; j++) for (let ch = 0; ch < req.problem.d; ch++) want = Math.max(want, Math.abs(x.k[j * req.problem.d + ch]));
    expect(Number(answer('block-max'))).toBeCloseTo(want, 4);
    // That block holds K's largest entry, a planted outlier (the text calls it so).
    expect(want).toBe(Math.max(...Array.from(x.k, Math.abs)));
    expect(want).toBeGreaterThan(5);
    // The text's scale table: the outlier's block has more than twice every other block's scale
    // with the rotation off, and after the rotation no block stands out by more than 20%.
    const off = kBlockScales(run.events);
    const rot = kBlockScales(runRequest({ ...req, features: { ...req.features, incoherent: true } }).events);
    for (const [b, sc] of off) if (b !== t.tile.kvBlock) expect(off.get(t.tile.kvBlock)!).toBeGreaterThan(2 * sc);
    expect(Math.max(...rot.values()) / Math.min(...rot.values())).toBeLessThan(1.2);
    // Rotation on (the chapter's switch) reaches the engine and shrinks the largest block entry.
    const on = Number(answer('block-max', { ...req, features: { ...req.features, incoherent: true } }));
    expect(on).toBeLessThan(want / 2);
  });

  it('e4m3 nearest to 300: the grid between 256 and 512 is 256 + 32k', () => {
    const grid = Array.from({ length: 8 }, (_, k) => 256 + 32 * k);
    const want = grid.reduce((a, b) => (Math.abs(b - 300) < Math.abs(a - 300) ? b : a));
    expect(answer('e4m3-300')).toBe(want);
  });

  it('flushed non-sink P values equal a float64 count over the quantized inputs in forward order at scale 1', () => {
    const p = SINK_PRESET.problem;
    const x = randomInputs(p, { seed: SINK_PRESET.seed, distribution: SINK_PRESET.distribution });
    const bm = SINK_PRESET.blocks.blockM!;
    const bn = SINK_PRESET.blocks.blockN!;
    const prep = prepareFp8(p, x, { blockQuant: true, incoherent: false, pScale: 1, seed: 0 }, bm, bn);
    const tau = softmaxScale(p);
    let flushed = 0;
    for (let i = 0; i < p.nq; i++) {
      let m = -Infinity;
      for (let j0 = 0; j0 < p.nk; j0 += bn) {
        const s: number[] = [];
        for (let j = j0; j < j0 + bn; j++) {
          let a = 0;
          for (let ch = 0; ch < p.d; ch++) a += prep.x.q[i * p.d + ch] * prep.x.k[j * p.d + ch];
          s.push(a * tau);
        }
        m = Math.max(m, ...s);
        s.forEach((v, jj) => {
          const pv = Math.exp(v - m);
          if (j0 + jj >= SINK_KEYS && pv > 0 && roundFp8('e4m3', pv) === 0) flushed++;
        });
      }
    }
    const got = Number(answer('flushed-p1'));
    expect(got).toBeGreaterThan(100);
    // fp32 against float64 scores can move a value sitting exactly on the 2⁻¹⁰ edge.
    expect(Math.abs(got - flushed)).toBeLessThanOrEqual(2);
  });

  it('the flush table thins out as the text says: reverse order fewer, pScale 256 fewer still', () => {
    const [fwd1, rev1, fwd256, rev256] = flushTable((r) => cache.get(r));
    expect(fwd1.count.flushed).toBe(answer('flushed-p1'));
    expect(rev1.count.flushed).toBeLessThan(fwd1.count.flushed / 2);
    expect(fwd256.count.flushed).toBeLessThan(rev1.count.flushed);
    expect(rev256.count.flushed).toBeLessThanOrEqual(fwd256.count.flushed);
    // Every non-sink P is positive in fp32 here, so the denominators are all Nq · (Nk − sinks).
    for (const r of [fwd1, rev1, fwd256, rev256]) expect(r.count.positive).toBe(16 * (64 - SINK_KEYS));
    expect(Number(answer('flush-step-count'))).toBeGreaterThan(0);
  });

  it('every "try this" change loads on both panes (e5m2, K/V order, pScale) without an error', () => {
    for (const t of c.tryThis) for (const pane of c.panes) expect(runRequest(t.change(pane.preset)).events.length, t.label).toBeGreaterThan(0);
  });

  it('every step link lands on the step kind it names, and every computed paragraph has its table', () => {
    const kinds = ['load', 'qk', 'exp', 'pv'];
    const seen: string[] = [];
    c.blocks.forEach((b, i) => {
      if (b.kind === 'live') expect(liveBlock(c, i, cache).table?.rows.length, b.label).toBeGreaterThan(0);
      if (b.kind !== 'goto') return;
      const run = runRequest(c.panes[b.pane].preset);
      const { step } = locateBlock(c, i, c.panes[b.pane].preset, cache);
      expect(step, b.label).toBeGreaterThanOrEqual(0);
      seen.push(run.events[step].kind);
    });
    expect(seen).toEqual(kinds);
  });
});
