// Chapter 12 against float64 computed here: the error table's RMSEs against an attention
// written in this file, the K outlier and its block's scale from the raw inputs, the flushed
// P count from float64 scores of the quantized inputs in the loop order, and what the text
// says about each computed table (which is larger, what thins out) holds.

import { describe, expect, it } from 'vitest';
import { fa3 } from '../../../engine/algorithms/fa3/forward.ts';
import { randomInputs, SINK_KEYS } from '../../../engine/core/inputs.ts';
import { prepareFp8 } from '../../../engine/algorithms/fa3/fp8.ts';
import { roundFp8 } from '../../../engine/lowprec/fp8.ts';
import { softmaxScale, type AttentionProblem } from '../../../engine/core/problem.ts';
import { runToEnd } from '../../../engine/run.ts';
import { chapterByNumber } from './index.ts';
import { lessonContext, liveBlock, locateBlock, RunCache, runRequest } from './evaluate.ts';
import { precisionMarks } from '../../../engine/debugger/precision.ts';
import { sage } from '../../../engine/algorithms/sage/forward.ts';
import { K_OFFSET, offsetKInputs, SAGE_PRESET, SMOOTH_PROBLEM, smoothingRow, smoothingTable } from './k-smoothing.ts';
import {
  ERROR_PROBLEM,
  ERROR_SEED,
  errorRow,
  flushTable,
  fp8ErrorTable,
  kBlockScales,
  rotationEffect,
  SINK_PRESET,
} from './low-precision.ts';

const cache = new RunCache(20);
const c = chapterByNumber(12)!;
/** Chapter 13 carries on with the P cast and SageAttention: panes sink, sage. */
const c13 = chapterByNumber(13)!;
const req = c.panes[0].preset;
const answer = (id: string, r = req) => {
  const ch = [c, c13].find((x) => x.questions.some((q) => q.id === id))!;
  return ch.questions.find((q) => q.id === id)!.answer(lessonContext(ch, r, cache));
};

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
    for (let j = 0; j < p.nk; j++) l += s[j] = Math.exp(s[j] - m);
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
    expect(Number(answer('rotation-gain'))).toBeCloseTo(errorRow('block').rmse / errorRow('fa3').rmse, 12);
    expect(Number(answer('rotation-gain'))).toBeGreaterThan(1);
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

  it("the target's K scale is the largest |K| of its block over 448, from the raw inputs (rotation off)", () => {
    const x = randomInputs(req.problem, { seed: req.seed, distribution: req.distribution });
    const run = runRequest(req);
    const t = run.events[c.panes[0].target.find(run.events)];
    const [k0, k1] = t.tile.cols;
    let want = 0;
    for (let j = k0; j < k1; j++) for (let ch = 0; ch < req.problem.d; ch++) want = Math.max(want, Math.abs(x.k[j * req.problem.d + ch]));
    const kScaleAt = (r: typeof req) => {
      const ev = runRequest(r).events;
      const e = ev[c.panes[0].target.find(ev)];
      return e.kind === 'qk' ? e.kScale! : NaN;
    };
    expect(kScaleAt(req) * 448).toBeCloseTo(want, 4);
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
    const on = kScaleAt({ ...req, features: { ...req.features, incoherent: true } }) * 448;
    expect(on).toBeLessThan(want / 2);
  });

  it('x = 1 in that block is stored as the e4m3 value nearest 1 / s, from every e4m3 value listed here', () => {
    // Every finite e4m3 value: subnormals m/8 · 2⁻⁶, normals (1 + m/8) · 2^(e − 7), S.1111.111 is NaN.
    const grid: number[] = [];
    for (let e = 0; e < 16; e++)
      for (let m = 0; m < 8; m++) if (!(e === 15 && m === 7)) grid.push(e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7));
    const run = runRequest(req);
    const t = run.events[c.panes[0].target.find(run.events)];
    const target = 1 / (t.kind === 'qk' ? t.kScale! : NaN);
    const nearest = grid.reduce((a, b) => (Math.abs(b - target) < Math.abs(a - target) ? b : a));
    expect(answer('one-stored')).toBe(nearest);
    // Rounding to a coarser grid than the one entry that sets the scale: not 1/s itself.
    expect(nearest).not.toBe(target);
  });

  it('e4m3 nearest to 300: the grid between 256 and 512 is 256 + 32k', () => {
    const grid = Array.from({ length: 8 }, (_, k) => 256 + 32 * k);
    const want = grid.reduce((a, b) => (Math.abs(b - 300) < Math.abs(a - 300) ? b : a));
    expect(answer('e4m3-300')).toBe(want);
  });

  it('flushed non-sink P values equal a float64 count over the quantized inputs at scale 1: the whole run sinks first, the first block (3) in reverse order', () => {
    const p = SINK_PRESET.problem;
    const x = randomInputs(p, { seed: SINK_PRESET.seed, distribution: SINK_PRESET.distribution });
    const bm = SINK_PRESET.blocks.blockM!;
    const bn = SINK_PRESET.blocks.blockN!;
    const prep = prepareFp8(p, x, { blockQuant: true, incoherent: false, pScale: 1, seed: 0 }, bm, bn);
    const tau = softmaxScale(p);
    /** Non-sink flushes per K block, each block's P measured against the running max of the blocks visited so far. */
    const flushesByBlock = (reverse: boolean) => {
      const byBlock = new Array<number>(p.nk / bn).fill(0);
      const starts = Array.from({ length: p.nk / bn }, (_, k) => k * bn);
      if (reverse) starts.reverse();
      for (let i = 0; i < p.nq; i++) {
        let m = -Infinity;
        for (const j0 of starts) {
          const s: number[] = [];
          for (let j = j0; j < j0 + bn; j++) {
            let a = 0;
            for (let ch = 0; ch < p.d; ch++) a += prep.x.q[i * p.d + ch] * prep.x.k[j * p.d + ch];
            s.push(a * tau);
          }
          m = Math.max(m, ...s);
          s.forEach((v, jj) => {
            const pv = Math.exp(v - m);
            if (j0 + jj >= SINK_KEYS && pv > 0 && roundFp8('e4m3', pv) === 0) byBlock[j0 / bn]++;
          });
        }
      }
      return byBlock;
    };
    const forward = flushesByBlock(false);
    const total = forward.reduce((a, b) => a + b, 0);
    const shown = flushTable((r) => cache.get(r))[0].count.flushed;
    expect(shown).toBeGreaterThan(100);
    // fp32 against float64 scores can move a value sitting exactly on the 2⁻¹⁰ edge.
    expect(Math.abs(shown - total)).toBeLessThanOrEqual(2);
    const reversed = { ...SINK_PRESET, features: { ...SINK_PRESET.features, reverseKv: true } };
    const first = Number(answer('first-block-flush', reversed));
    const rev = flushesByBlock(true);
    expect(Math.abs(first - rev[rev.length - 1])).toBeLessThanOrEqual(2);
    // Against its own max block 3 flushes a fraction of what it does under the sinks' logit.
    expect(first * 10).toBeLessThan(forward[forward.length - 1]);
    // Loaded with the sinks first, the first exp step is the sinks' own block 0.
    expect(Math.abs(Number(answer('first-block-flush', SINK_PRESET)) - forward[0])).toBeLessThanOrEqual(2);
  });

  it('the flush table thins out as the text says: reverse order fewer, pScale 256 fewer still', () => {
    const [fwd1, rev1, fwd256, rev256] = flushTable((r) => cache.get(r));
    expect(rev1.count.flushed).toBeLessThan(fwd1.count.flushed / 2);
    expect(fwd256.count.flushed).toBeLessThan(rev1.count.flushed);
    expect(rev256.count.flushed).toBeLessThanOrEqual(fwd256.count.flushed);
    // Every non-sink P is positive in fp32 here, so the denominators are all Nq · (Nk − sinks).
    for (const r of [fwd1, rev1, fwd256, rev256]) expect(r.count.positive).toBe(16 * (64 - SINK_KEYS));
    expect(Number(answer('flush-step-count', SINK_PRESET))).toBeGreaterThan(0);
  });

  it("the hints hold: the Precision view's counts of the sink pane are the question answers", () => {
    // Whole-run flushes as the view counts them (every key) equal the non-sink count: a sink never flushes.
    const run = runRequest(SINK_PRESET);
    const marks = precisionMarks(SINK_PRESET.problem, run.events, 0, 0);
    expect(marks.flushed).toBe(flushTable((r) => cache.get(r))[0].count.flushed);
    // The tile of the first flushing exp step: its flushed count is that step's.
    const ev = run.events.find((e) => e.kind === 'exp' && (e.flushed?.length ?? 0) > 0)!;
    const tile = marks.tiles.find((t) => t.qBlock === ev.tile.qBlock && t.kvBlock === ev.tile.kvBlock)!;
    expect(tile.flushed).toBe(answer('flush-step-count', SINK_PRESET));
    // one-stored: the view's K scale of the first pane's target tile is the scale the answer divides by.
    const r0 = runRequest(req);
    const at = r0.events[c.panes[0].target.find(r0.events)];
    const t0 = precisionMarks(req.problem, r0.events, 0, 0).tiles.find(
      (t) => t.qBlock === at.tile.qBlock && t.kvBlock === at.tile.kvBlock,
    )!;
    expect(roundFp8('e4m3', 1 / t0.kScale!)).toBe(answer('one-stored'));
  });

  it('K smoothing table: sage v1 on offset keys against a float64 attention computed here', () => {
    const p = SMOOTH_PROBLEM;
    const x = offsetKInputs();
    const ref = attention64(p, x.q, x.k, x.v);
    const rmse64: number[] = [];
    for (const smoothK of [false, true]) {
      const o = runToEnd(sage, p, x, { features: { version: 1, smoothK } }).o;
      let sq = 0;
      for (let i = 0; i < o.length; i++) sq += (o[i] - ref[i]) ** 2;
      rmse64.push(Math.sqrt(sq / o.length));
      expect(smoothingRow(smoothK).rmse, `smoothK ${smoothK}`).toBeCloseTo(rmse64[rmse64.length - 1], 9);
    }
    // What the text says: smoothing makes the error several times smaller, and the question follows.
    expect(smoothingRow(true).rmse * 3).toBeLessThan(smoothingRow(false).rmse);
    expect(Number(answer('smoothk-factor'))).toBeCloseTo(rmse64[0] / rmse64[1], 6);
    // The INT8 steps, from float64 maxima of K and of K − mean over the tokens, per 64-key block.
    const mean = new Float64Array(p.d);
    for (let j = 0; j < p.nk; j++) for (let e = 0; e < p.d; e++) mean[e] += x.k[j * p.d + e] / p.nk;
    let offMax = 0;
    let onMax = 0;
    for (let i = 0; i < x.k.length; i++) {
      offMax = Math.max(offMax, Math.abs(x.k[i]));
      onMax = Math.max(onMax, Math.abs(x.k[i] - mean[i % p.d]));
    }
    expect(offMax).toBeGreaterThan(K_OFFSET / 2);
    expect(smoothingRow(false).kStep).toBeCloseTo(offMax / 127, 6);
    // The kernel rounds the mean to fp16 before subtracting it: within 1% of the float64 step.
    expect(Math.abs(smoothingRow(true).kStep / (onMax / 127) - 1)).toBeLessThan(0.01);
    expect(smoothingTable()[0].kRms).toBeGreaterThan(3 * smoothingTable()[1].kRms);
  });

  it('subtracting the mean of K over the tokens shifts each row of scores by q·mean·τ and leaves softmax and O alone (float64)', () => {
    const p = SMOOTH_PROBLEM;
    const x = offsetKInputs();
    const tau = softmaxScale(p);
    const mean = new Float64Array(p.d);
    for (let j = 0; j < p.nk; j++) for (let e = 0; e < p.d; e++) mean[e] += x.k[j * p.d + e] / p.nk;
    const ks = Float64Array.from(x.k, (v, i) => v - mean[i % p.d]);
    for (const i of [0, 37, p.nq - 1]) {
      let shift = 0;
      for (let e = 0; e < p.d; e++) shift += x.q[i * p.d + e] * mean[e] * tau;
      for (const j of [0, 5, p.nk - 1]) {
        let a = 0;
        let b = 0;
        for (let e = 0; e < p.d; e++) {
          a += x.q[i * p.d + e] * x.k[j * p.d + e] * tau;
          b += x.q[i * p.d + e] * ks[j * p.d + e] * tau;
        }
        expect(a - b).toBeCloseTo(shift, 9);
      }
    }
    const o = attention64(p, x.q, x.k, x.v);
    const os = attention64(p, x.q, ks, x.v);
    let worst = 0;
    for (let i = 0; i < o.length; i++) worst = Math.max(worst, Math.abs(o[i] - os[i]));
    expect(worst).toBeLessThan(1e-12);
  });

  it('the sage pane opens at an INT8 S step that carries its Q and K scales', () => {
    const run = runRequest(SAGE_PRESET);
    const e = run.events[c13.panes[1].target.find(run.events)];
    expect(e.kind).toBe('qk');
    if (e.kind !== 'qk') return;
    expect(e.qScale).toBeGreaterThan(0);
    expect(e.kScale).toBeGreaterThan(0);
    expect([...c.panes, ...c13.panes].every((pane) => pane.views.includes('precision'))).toBe(true);
  });

  it('every "try this" change loads on the FP8 panes (e5m2, K/V order, pScale) without an error', () => {
    for (const ch of [c, c13]) {
      for (const t of ch.tryThis)
        for (const pane of ch.panes) expect(runRequest(t.change(pane.preset)).events.length, t.label).toBeGreaterThan(0);
      // FA3 switches leave the sage pane as it is (sage would refuse them), and sage's leaves the FP8 panes.
      for (const t of ch.tryThis) {
        const touched = ch.panes.filter((pane) => t.change(pane.preset) !== pane.preset).map((pane) => pane.preset.algorithm);
        expect(new Set(touched).size, t.label).toBe(1);
      }
    }
  });

  it('smoothing in the sage pane shifts each row of S by q·mean(K)·τ·log2 e against the float64 scores of K as given', () => {
    const t = c13.tryThis.find((x) => x.label === 'SageAttention with K smoothing')!;
    const on = t.change(SAGE_PRESET);
    expect(on.features?.smoothK).toBe(true);
    const p = SAGE_PRESET.problem;
    const x = randomInputs(p, { seed: SAGE_PRESET.seed, distribution: SAGE_PRESET.distribution });
    const tau = softmaxScale(p);
    const mean = new Float64Array(p.d);
    for (let j = 0; j < p.nk; j++) for (let e = 0; e < p.d; e++) mean[e] += x.k[j * p.d + e] / p.nk;
    const qk = (r: ReturnType<typeof runRequest>) => r.events.find((e) => e.kind === 'qk' && e.tile.kvBlock === 0 && e.tile.qBlock === 0)!;
    const evOff = qk(runRequest(SAGE_PRESET));
    const evOn = qk(runRequest(on));
    if (evOff.kind !== 'qk' || evOn.kind !== 'qk') throw new Error('expected qk events');
    const cols = evOn.tile.cols[1] - evOn.tile.cols[0];
    let largest = 0;
    for (const i of [0, 17, 63]) {
      let shift = 0;
      for (let e = 0; e < p.d; e++) shift += x.q[i * p.d + e] * mean[e] * tau * Math.LOG2E;
      // The row's score differences average out to the shift; INT8 and the fp16 mean add a little noise around it.
      let diff = 0;
      for (let j = 0; j < cols; j++) diff += (evOff.s[i * cols + j] - evOn.s[i * cols + j]) / cols;
      expect(Math.abs(diff - shift), `row ${i}`).toBeLessThan(0.02);
      largest = Math.max(largest, Math.abs(shift));
    }
    // The shifts are well above that tolerance, so a smoothing that did nothing would fail.
    expect(largest).toBeGreaterThan(0.06);
  });

  it('every step link lands on the step kind it names, and every computed paragraph has its table', () => {
    const kinds = ['load', 'qk', 'exp', 'pv']; // the FP8 panes' links, then the sage pane's
    const seen: string[] = [];
    for (const ch of [c, c13])
      ch.blocks.forEach((b, i) => {
        if (b.kind === 'live') expect(liveBlock(ch, i, cache).table?.rows.length, b.label).toBeGreaterThan(0);
        if (b.kind !== 'goto') return;
        const run = runRequest(ch.panes[b.pane].preset);
        const { step } = locateBlock(ch, i, ch.panes[b.pane].preset, cache);
        expect(step, b.label).toBeGreaterThanOrEqual(0);
        seen.push(run.events[step].kind);
      });
    expect(seen).toEqual([...kinds, 'qk']);
  });
});
