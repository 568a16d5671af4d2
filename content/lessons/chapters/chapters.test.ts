// The lessons against the engine and the float64 reference: every preset loads with more
// than one tile, every target step is the kind of step its chapter's text describes, every
// question's engine-derived answer is accepted and a wrong one rejected, and the answers
// that are numbers of the maths agree with an independent float64 computation.

import { describe, expect, it } from 'vitest';
import { referenceAttention } from '../../../engine/core/reference.ts';
import { randomInputs } from '../../../engine/core/inputs.ts';
import { softmaxScale } from '../../../engine/core/problem.ts';
import { CHAPTERS, chapterByNumber } from './index.ts';
import {
  chapterFacts,
  checkAnswer,
  hardwareTable,
  isCorrect,
  lessonContext,
  locateTarget,
  parseAnswer,
  RunCache,
  runRequest,
} from './evaluate.ts';
import { fa1IoSweep, standardIoBytes, SWEEP_PROBLEM } from './io-sweep.ts';
import { fmt, fmtScientific } from './queries.ts';
import { onlineSoftmaxSteps, safeSoftmax, softmaxFromOnline } from './online-softmax.ts';
import type { Question } from './types.ts';

const cache = new RunCache(20);

/** Row `row` of τ·QKᵀ for head (0,0), in float64 from the inputs. */
function scoresRow(
  req: ReturnType<typeof chapterByNumber> extends infer C ? (C extends { panes: { preset: infer R }[] } ? R : never) : never,
  row: number,
): number[] {
  const p = req.problem;
  const x = randomInputs(p, { seed: req.seed, distribution: req.distribution });
  const tau = softmaxScale(p);
  const out: number[] = [];
  for (let j = 0; j < p.nk; j++) {
    let s = 0;
    for (let c = 0; c < p.d; c++) s += x.q[row * p.d + c] * x.k[j * p.d + c];
    out.push(s * tau);
  }
  return out;
}

const expectedKind: Record<number, string[]> = {
  1: ['write'],
  2: ['rowmax'],
  3: ['rescale'],
  4: ['load'],
  5: ['write', 'write'],
  6: ['load', 'qk'],
  7: ['pv'],
  8: ['exp'],
  9: ['combine'],
  10: ['dq', 'load'],
  11: ['load'],
  12: ['qk'],
  13: ['exp', 'qk'],
  14: ['mask'],
};

describe('lesson chapters', () => {
  it('are numbered 1, 2, … in order with unique slugs and question ids', () => {
    expect(CHAPTERS.map((c) => c.number)).toEqual(CHAPTERS.map((_c, i) => i + 1));
    expect(new Set(CHAPTERS.map((c) => c.slug)).size).toBe(CHAPTERS.length);
    for (const c of CHAPTERS) {
      expect(c.questions.length).toBeGreaterThanOrEqual(2);
      expect(new Set(c.questions.map((q) => q.id)).size).toBe(c.questions.length);
      expect(c.tryThis.length).toBeGreaterThanOrEqual(2);
    }
  });

  it('a pane that opens on a P step opens on a tile with an open key: an all-zero P shows nothing to read', () => {
    const exp = CHAPTERS.flatMap((c) => c.panes.flatMap((_p, i) => (expectedKind[c.number][i] === 'exp' ? [{ c, i }] : [])));
    expect(exp.length).toBeGreaterThan(0);
    for (const { c, i } of exp) {
      const req = c.panes[i].preset;
      const e = cache.get(req).events[locateTarget(c, i, req, cache).step];
      expect(e.kind === 'exp' && e.p.some((v) => v > 0), `chapter ${c.number} pane ${i}`).toBe(true);
    }
  });

  for (const c of CHAPTERS) {
    it(`chapter ${c.number}: presets have more than one tile and the target is the step the text names`, () => {
      c.panes.forEach((pane, i) => {
        const run = runRequest(pane.preset);
        const p = pane.preset.problem;
        const tiles = Math.ceil(p.nq / run.result.blocks.blockM) * Math.ceil(p.nk / run.result.blocks.blockN);
        expect(tiles, `${c.slug} pane ${i} tiles`).toBeGreaterThan(1);
        const t = locateTarget(c, i, pane.preset, cache);
        expect(t.total).toBe(run.events.length);
        // The locator found its own event (not a fallback) and it is of the named kind.
        expect(t.exact).toBe(true);
        expect(t.describe).toBe(pane.target.describe);
        expect(run.events[t.step].kind).toBe(expectedKind[c.number][i]);
      });
    });

    for (const q of c.questions) {
      it(`chapter ${c.number} question ${q.id}: the engine's answer is accepted, a wrong one rejected`, () => {
        const req = c.panes[0].preset;
        const ctx = lessonContext(c, req, cache);
        const a = q.answer(ctx);
        if (q.kind === 'choice') expect(q.choices?.map((x) => x.id)).toContain(a);
        else expect(Number.isFinite(Number(a))).toBe(true);
        const right = String(a);
        expect(checkAnswer(c, q.id, req, right, cache).verdict).toBe('correct');
        const wrong = q.kind === 'choice' ? q.choices!.find((x) => x.id !== a)!.id : String(Number(a) + Math.max(1, Math.abs(Number(a))));
        const w = checkAnswer(c, q.id, req, wrong, cache);
        expect(w.verdict).toBe('wrong');
        expect(w.message).toContain(q.hint);
        expect(q.explain(ctx, a).length).toBeGreaterThan(10);
      });
    }
  }
});

describe('answers agree with float64 computations', () => {
  it('chapter 1: S bytes are N_q·N_k·4 for the fp32 preset', () => {
    const c = chapterByNumber(1)!;
    const p = c.panes[0].preset.problem;
    const a = c.questions[0].answer(lessonContext(c, c.panes[0].preset, cache));
    expect(a).toBe(p.nq * p.nk * 4);
  });

  it('chapter 1: the fp16 Try this quotes the ratios that element counts give (S in fp32, the rest in the stored dtype)', () => {
    const c = chapterByNumber(1)!;
    const { nq, nk, d } = c.panes[0].preset.problem;
    // S and P are written once and read once; Q, K, V and O move once each.
    const ratio = (sBytes: number, pBytes: number, xBytes: number) => (2 * nq * nk * (sBytes + pBytes)) / ((2 * nq + 2 * nk) * d * xBytes);
    const facts = chapterFacts(c, cache);
    expect(Number(facts['ratio-fp32'])).toBeCloseTo(ratio(4, 4, 4), 6);
    expect(Number(facts['ratio-fp16'])).toBeCloseTo(ratio(4, 2, 2), 6);
    expect(Number(facts['ratio-fp16']) / Number(facts['ratio-fp32'])).toBeCloseTo(1.5, 6);
  });

  it('chapter 2: the last block where row 3 max grows matches the float64 scores', () => {
    const c = chapterByNumber(2)!;
    const req = c.panes[0].preset;
    const s = scoresRow(req, 3);
    const bn = req.blocks.blockN!;
    let best = -Infinity;
    let block = -1;
    for (let j = 0; j < s.length; j += bn) {
      const mx = Math.max(...s.slice(j, j + bn));
      if (mx > best) {
        best = mx;
        block = j / bn;
      }
    }
    expect(c.questions.find((q) => q.id === 'last-change')!.answer(lessonContext(c, req, cache))).toBe(block);
  });

  it('chapter 2: row 0 final ℓ equals Σ e^(s − max) in float64', () => {
    const c = chapterByNumber(2)!;
    const req = c.panes[0].preset;
    const s = scoresRow(req, 0);
    const m = Math.max(...s);
    const l = s.reduce((acc, v) => acc + Math.exp(v - m), 0);
    const a = Number(c.questions.find((q) => q.id === 'final-l')!.answer(lessonContext(c, req, cache)));
    expect(Math.abs(a - l) / l).toBeLessThan(1e-5);
    // The Try this that halves Bc says question 2's answer stays: it is the same float64 sum.
    const halved = c.tryThis.find((t) => t.label.includes('Bc = 4'))!.change(req);
    expect(halved.blocks.blockN).toBe(4);
    const b = Number(c.questions.find((q) => q.id === 'final-l')!.answer(lessonContext(c, halved, cache)));
    expect(Math.abs(b - l) / l).toBeLessThan(1e-5);
  });

  it("chapter 3: the outlier row's Try this quotes the block and factor of the float64 scores", () => {
    const c = chapterByNumber(3)!;
    const req = c.tryThis.find((t) => t.label === 'One outlier row')!.change(c.panes[0].preset);
    const row = Math.floor(req.problem.nq / 2);
    const bn = req.blocks.blockN!;
    const s = scoresRow(req, row);
    let m = Math.max(...s.slice(0, bn));
    let block = -1;
    let factor = 1;
    for (let j = bn; j < s.length && block < 0; j += bn) {
      const mx = Math.max(...s.slice(j, j + bn));
      if (mx > m) {
        block = j / bn;
        factor = Math.exp(m - mx);
      }
      m = Math.max(m, mx);
    }
    const facts = chapterFacts(c, cache);
    expect(facts['outlier-row']).toBe(String(row));
    expect(facts['outlier-qblock']).toBe(String(Math.floor(row / req.blocks.blockM!)));
    expect(facts['outlier-block']).toBe(String(block));
    expect(facts['outlier-factor']).toBe(fmtScientific(factor));
  });

  it("chapter 4: row 0's m is written once before the loops and once per K/V block, Bc = ⌈M / 4d⌉ words", () => {
    const c = chapterByNumber(4)!;
    const req = c.panes[0].preset;
    const words = req.blocks.sramBytes! / 4;
    const tc = Math.ceil(req.problem.nk / Math.ceil(words / (4 * req.problem.d)));
    expect(c.questions.find((q) => q.id === 'm-writes')!.answer(lessonContext(c, req, cache))).toBe(1 + tc);
  });

  it('chapter 5: FA2 reads K and V once per Q block, and the Bc = 16 Try this is right that FA1 then moves fewer bytes', () => {
    const c = chapterByNumber(5)!;
    const { nq, nk, d } = c.panes[1].preset.problem;
    const fa2 = cache.get(c.panes[1].preset).result.counters;
    const tr = Math.ceil(nq / c.panes[1].preset.blocks.blockM!);
    expect((fa2.hbmRead.K ?? 0) + (fa2.hbmRead.V ?? 0)).toBe(tr * 2 * nk * d * 4);
    // Question 1's ratio, on the preset and after "K/V blocks of 16": above 1, then below, as the Try this says.
    const q1 = c.questions[0];
    const fa1 = c.panes[0].preset;
    const bc16 = c.tryThis.find((t) => t.label === 'K/V blocks of 16')!;
    const ratio = Number(q1.answer(lessonContext(c, fa1, cache)));
    expect(ratio).toBeGreaterThan(1);
    expect(Number(q1.answer(lessonContext(c, bc16.change(fa1), cache)))).toBeLessThan(1);
    // The text a student reads beside the question does not hand them its answer.
    const facts = chapterFacts(c, cache);
    const shown = c.tryThis.map((t) => t.look.replace(/\{\{([\w-]+)\}\}/g, (_, k: string) => facts[k] ?? '')).join(' ');
    expect(shown).not.toContain(fmt(ratio, 4));
  });

  it('chapters 5 and 9: LSE answers match the float64 reference LSE', () => {
    for (const [n, qid, row] of [
      [5, 'lse', 5],
      [9, 'lse', 0],
    ] as const) {
      const c = chapterByNumber(n)!;
      const req = c.panes[c.panes.length - 1].preset;
      const x = randomInputs(req.problem, { seed: req.seed, distribution: req.distribution });
      const ref = referenceAttention(req.problem, x).lse[row];
      const a = Number(c.questions.find((q) => q.id === qid)!.answer(lessonContext(c, c.panes[0].preset, cache)));
      expect(Math.abs(a - ref)).toBeLessThan(1e-4 * Math.max(1, Math.abs(ref)));
    }
  });

  it('chapter 9: split weights e^(LSE_k − LSE) sum to 1', () => {
    const c = chapterByNumber(9)!;
    const run = runRequest(c.panes[0].preset);
    const comb = run.events.find((e) => e.kind === 'combine');
    if (comb?.kind !== 'combine') throw new Error('no combine step');
    const w = comb.splitLse[0].map((l) => Math.exp(l - comb.lse[0]));
    expect(w.length).toBe(4);
    expect(Math.abs(w.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-5);
  });

  it("chapter 9: the lightest split's LSE_k is the float64 log-sum-exp of its own 64 keys, the smallest of the four", () => {
    const c = chapterByNumber(9)!;
    const req = c.panes[0].preset;
    const s = scoresRow(req, 0);
    const lse = [0, 1, 2, 3].map((k) => {
      const part = s.slice(64 * k, 64 * k + 64);
      const m = Math.max(...part);
      return m + Math.log(part.reduce((acc, v) => acc + Math.exp(v - m), 0));
    });
    const a = Number(c.questions.find((q) => q.id === 'split-lse')!.answer(lessonContext(c, req, cache)));
    expect(Math.abs(a - Math.min(...lse))).toBeLessThan(1e-3);
    const one = { ...req, features: { splits: 1 } };
    const ref = referenceAttention(one.problem, randomInputs(one.problem, { seed: one.seed, distribution: one.distribution })).lse[0];
    expect(Number(c.questions.find((q) => q.id === 'split-lse')!.answer(lessonContext(c, one, cache)))).toBeCloseTo(ref, 4);
  });

  it('chapter 8: the row rescales, lazy or not, are the 32-row warps whose float64 running max (log2 units, causal, last block first) moves', () => {
    const c = chapterByNumber(8)!;
    const q = c.questions.find((x) => x.id === 'rescaled-rows')!;
    const req = c.panes[0].preset;
    const { nq, nk } = req.problem;
    const bn = req.blocks!.blockN!;
    const { d } = req.problem;
    const x = randomInputs(req.problem, { seed: req.seed, distribution: req.distribution });
    const tau = softmaxScale(req.problem) * Math.LOG2E;
    const score = (r: number, j: number) => {
      if (j > r + nk - nq) return -Infinity;
      let s = 0;
      for (let c = 0; c < d; c++) s += x.q[r * d + c] * x.k[j * d + c];
      return s * tau;
    };
    const rows = Array.from({ length: nq }, (_, r) => Array.from({ length: nk }, (_, j) => score(r, j)));
    const expected = (lazy: boolean) => {
      let count = 0;
      for (let t = 0; t < nq; t += 128) {
        const m = new Array<number>(128).fill(-Infinity);
        for (let i = 0, k = nk - bn; k >= 0; i++, k -= bn) {
          const moved = m.map((old, r) => {
            const cand = Math.max(old, ...rows[t + r].slice(k, k + bn));
            const next = lazy && cand - old <= 8 ? old : cand;
            m[r] = next;
            return next !== old;
          });
          for (let w = 0; w < 128; w += 32) if (i > 0 && moved.slice(w, w + 32).some(Boolean)) count += 32;
        }
      }
      return count;
    };
    expect(expected(true)).toBeLessThan(expected(false));
    expect(q.answer(lessonContext(c, req, cache))).toBe(expected(true));
    expect(q.answer(lessonContext(c, { ...req, features: { lazyRescale: false } }, cache))).toBe(expected(false));
  });

  it("chapter 7: Q tile 1's mask steps are the (warpgroup rows, K/V block) pairs with a hidden key among the blocks the tile visits, none when not causal", () => {
    const c = chapterByNumber(7)!;
    const q = c.questions.find((x) => x.id === 'mask-steps')!;
    const causal = c.tryThis.find((t) => t.label === 'Causal')!.change(c.panes[0].preset);
    const { blockM, blockN } = causal.blocks!;
    let crossing = 0;
    for (let r = blockM!; r < 2 * blockM!; r += 64)
      for (let k = 0; k < causal.problem.nk; k += blockN!) if (k < 2 * blockM! && k + blockN! - 1 > r) crossing++;
    expect(crossing).toBe(4);
    expect(q.answer(lessonContext(c, causal, cache))).toBe(crossing);
    expect(q.answer(lessonContext(c, c.panes[0].preset, cache))).toBe(0);
  });

  it('chapter 7: with ping-pong warpgroup 0 takes its next GEMMs after its softmax; off, warpgroup 1 does its softmax next', () => {
    const c = chapterByNumber(7)!;
    const q = c.questions.find((x) => x.id === 'turn-after-softmax')!;
    expect(q.answer(lessonContext(c, c.panes[0].preset, cache))).toBe(0);
    expect(q.answer(lessonContext(c, { ...c.panes[0].preset, features: { pingpong: false } }, cache))).toBe(1);
  });
});

describe("targets when a change removes the chapter's step", () => {
  it('one split has no combine: chapter 9 stands at the normalize step and says so', () => {
    const c = chapterByNumber(9)!;
    const req = { ...c.panes[0].preset, features: { splits: 1 } };
    const t = locateTarget(c, 0, req, cache);
    expect(t.exact).toBe(false);
    expect(t.describe).toBe(c.panes[0].target.fallback!.describe);
    expect(runRequest(req).events[t.step].kind).toBe('normalize');
  });
  it('one K/V block has no rescale at all: chapter 3 stays at the start, and its first question answers −1', () => {
    const c = chapterByNumber(3)!;
    const req = { ...c.panes[0].preset, blocks: { blockM: 8, blockN: 32 } };
    const t = locateTarget(c, 0, req, cache);
    expect(t).toMatchObject({ step: 0, exact: false });
    expect(t.describe).toContain('has no step matching');
    const q = c.questions[0];
    expect(checkAnswer(c, q.id, req, '-1', cache).verdict).toBe('correct');
  });
});

describe('FA1 IO sweep (chapter 4)', () => {
  it('HBM bytes fall as M grows and stay within a constant factor of N²d²/M', () => {
    const pts = fa1IoSweep();
    for (let i = 1; i < pts.length; i++) expect(pts[i].hbmBytes).toBeLessThan(pts[i - 1].hbmBytes);
    const ratios = pts.map((p) => p.hbmBytes / p.bound);
    expect(Math.max(...ratios) / Math.min(...ratios)).toBeLessThan(1.5);
  });
  it('what chapter 4 says about standard attention holds: FA1 loses below M = 4d² words and wins from there on', () => {
    const std = standardIoBytes();
    const d2 = SWEEP_PROBLEM.d * SWEEP_PROBLEM.d;
    for (const p of fa1IoSweep()) {
      if (p.words < 4 * d2) expect(p.hbmBytes, `${p.sramBytes} B`).toBeGreaterThan(std);
      else expect(p.hbmBytes, `${p.sramBytes} B`).toBeLessThan(std);
    }
  });
});

describe('online softmax (chapter 2 widget)', () => {
  it('final m and ℓ equal the safe-softmax max and sum; probabilities agree', () => {
    const x = [0.5, -1, 3, 2.5, 7, -4, 6.9];
    const steps = onlineSoftmaxSteps(x);
    const last = steps[steps.length - 1];
    expect(last.m).toBe(7);
    expect(last.l).toBeCloseTo(
      x.reduce((a, v) => a + Math.exp(v - 7), 0),
      12,
    );
    const a = softmaxFromOnline(x);
    safeSoftmax(x).forEach((p, i) => expect(a[i]).toBeCloseTo(p, 12));
    // The factor is below 1 exactly where the max grew after the first element.
    expect(steps.map((s) => s.factor < 1)).toEqual([false, false, true, false, true, false, false]);
  });
});

describe('answer parsing', () => {
  const q: Question = { id: 'x', prompt: '', kind: 'integer', answer: () => 3, explain: () => '', hint: 'h' };
  it('explains bad input instead of marking it wrong', () => {
    expect(parseAnswer(q, '')).toEqual({ error: 'Type a number first.' });
    expect(parseAnswer(q, 'abc')).toEqual({ error: '"abc" is not a number.' });
    expect(parseAnswer(q, '2.5')).toEqual({ error: 'The answer is a whole number.' });
    expect(parseAnswer(q, ' 1 024 ')).toEqual({ value: 1024 });
    expect(parseAnswer(q, '\u22123')).toEqual({ value: -3 });
  });
  it('a byte answer read off the Counters view is accepted at the rounding the view shows, and only that', () => {
    const b: Question = { ...q, shownAs: 'counter' };
    expect(isCorrect(b, 4096, 4096)).toBe(true);
    expect(isCorrect(b, 4100, 4096)).toBe(true);
    expect(isCorrect(b, 4200, 4096)).toBe(false);
    expect(isCorrect(b, 4.1, 4096)).toBe(false);
    expect(isCorrect(b, 512, 512)).toBe(true);
    expect(isCorrect(b, 510, 512)).toBe(false);
  });
  it('a byte answer may carry the unit the Counters view prints, or a power-of-two one; other answers may not', () => {
    const b: Question = { ...q, shownAs: 'counter' };
    expect(parseAnswer(b, '2.0 kB')).toEqual({ value: 2000 });
    expect(isCorrect(b, 2000, 2048)).toBe(true);
    expect(parseAnswer(b, '2 KiB')).toEqual({ value: 2048 });
    expect(parseAnswer(b, '512 B')).toEqual({ value: 512 });
    expect(parseAnswer(b, '1.05 MB')).toEqual({ value: 1_050_000 });
    expect(parseAnswer(b, '2 kg')).toEqual({ error: '"2 kg" is not a number.' });
    expect(parseAnswer(q, '2 kB')).toEqual({ error: '"2 kB" is not a number.' });
  });
  it('numbers are accepted within the relative tolerance only', () => {
    const n: Question = { ...q, kind: 'number', tolerance: 0.01 };
    expect(isCorrect(n, 100.9, 100)).toBe(true);
    expect(isCorrect(n, 101.1, 100)).toBe(false);
  });
});

describe('chapter 11 (serving layouts): answers against closed forms', () => {
  const c = chapterByNumber(11)!;
  const ctx = () => lessonContext(c, c.panes[0].preset, cache);
  const q = (id: string) => c.questions.find((x) => x.id === id)!;
  it('packing: Σ n² over B · max n² (no mask, so the FLOPs are exactly 4 · n² · d per sequence)', () => {
    const n = [40, 160, 8, 120];
    const want = (100 * n.reduce((s, x) => s + x * x, 0)) / (4 * 160 * 160);
    expect(Number(q('packing').answer(ctx()))).toBeCloseTo(want, 10);
  });
  it('block table: 4 bytes per page per query head', () => {
    const pages = [70, 5, 33].reduce((s, L) => s + Math.ceil(L / 16), 0);
    expect(q('table-bytes').answer(ctx())).toBe(4 * pages * 2);
  });
  it('split 1 walks two pages of the five (ceil(5 / 3) = 2)', () => {
    expect(q('split-pages').answer(ctx())).toBe(2);
  });
});

/** A request as path → value, to compare two requests field by field. */
function fieldsOf(x: unknown, path = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (x !== null && typeof x === 'object' && !Array.isArray(x))
    for (const [k, v] of Object.entries(x)) fieldsOf(v, path ? `${path}.${k}` : k, out);
  else out.set(path, x);
  return out;
}

describe('chapter 6 (Ampere pipelines): the prefetch and the tensor time', () => {
  const c = chapterByNumber(6)!;
  const q = (id: string) => c.questions.find((x) => x.id === id)!;
  it('the causal change still opens at a K load issued between a qk and its pv (Q tile 1, as Q tile 0 has one block)', () => {
    const req = c.tryThis.find((t) => t.label === 'Causal')!.change(c.panes[0].preset);
    const t = locateTarget(c, 0, req, cache);
    expect(t.exact).toBe(true);
    const ev = cache.get(req).events;
    const e = ev[t.step];
    expect(e.kind === 'load' && e.tensors).toContain('K');
    const before = ev.slice(0, t.step).filter((e) => e.kind === 'qk' || e.kind === 'pv');
    expect(before.at(-1)?.kind).toBe('qk');
    expect(e.tile.qBlock).toBe(1);
  });
  it('by the first P·V the kernel has loaded K₀ and K₁ (one tile ahead), against the trace read directly', () => {
    const ev = cache.get(c.panes[0].preset).events;
    const pv = ev.findIndex((e) => e.kind === 'pv');
    const kBlocks = ev.slice(0, pv).flatMap((e) => (e.kind === 'load' && e.tensors.includes('K') ? [e.tile.kvBlock] : []));
    expect(kBlocks).toEqual([0, 1]);
    expect(q('k-ahead').answer(lessonContext(c, c.panes[0].preset, cache))).toBe(2);
  });
  it("tensor time: fmha_v2's fp16 accumulation halves the tensor-core time of the same matmuls", () => {
    const a = Number(q('tensor-time').answer(lessonContext(c, c.panes[0].preset, cache)));
    expect(a).toBeGreaterThan(1.8);
    expect(a).toBeLessThan(2.2);
  });
});

describe('chapters 7 and 8: the hardware-table questions need reasoning, and accept the figures the table shows', () => {
  /** A row of the table as the view shows it: time to 0.1 µs, unit shares in whole percents. */
  const shown = (n: number, label: string) => {
    const r = hardwareTable(chapterByNumber(n)!).find((x) => x.label === label)!;
    const pct = (k: string) => Math.round((r.utilization[k] ?? 0) * 100) / 100;
    return { time: Number(r.timeUs.toFixed(1)), pct };
  };
  const check = (n: number, qid: string, value: number) => {
    const c = chapterByNumber(n)!;
    return checkAnswer(c, qid, c.panes[0].preset, String(value), cache).verdict;
  };
  it('chapter 7 asks how many times ping-pong off costs the overlap off costs, not a difference of two times', () => {
    const on = shown(7, 'FA3, all on').time;
    const pp = shown(7, 'ping-pong off').time - on;
    const ov = shown(7, 'intra-warpgroup overlap off').time - on;
    expect(ov / pp).toBeGreaterThan(2);
    expect(check(7, 'overlap-vs-pingpong', ov / pp)).toBe('correct');
    expect(check(7, 'overlap-vs-pingpong', ov)).toBe('wrong');
    expect(check(7, 'overlap-vs-pingpong', pp / ov)).toBe('wrong');
  });
  it('chapter 8 asks the tmem time lazy rescaling saves while the kernel time stays put', () => {
    const on = shown(8, 'FA4, all on');
    const off = shown(8, 'lazy rescaling off');
    expect(off.time).toBe(on.time);
    const fromTable = off.time * off.pct('tmem') - on.time * on.pct('tmem');
    expect(fromTable).toBeGreaterThan(1);
    expect(check(8, 'rescale-tmem-us', fromTable)).toBe('correct');
    expect(check(8, 'rescale-tmem-us', off.time - on.time)).toBe('wrong');
    expect(check(8, 'rescale-tmem-us', off.time * off.pct('tmem'))).toBe('wrong');
  });
});

describe('"Try this" lands in the same state whatever was clicked before', () => {
  for (const c of CHAPTERS)
    it(`chapter ${c.number}: every change changes a pane, and sets what it changes to the same value after any other`, () => {
      for (const b of c.tryThis) {
        const changed = c.panes.map((p) => {
          const before = fieldsOf(p.preset);
          const after = fieldsOf(b.change(p.preset));
          return [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));
        });
        expect(changed.flat().length, `"${b.label}" changes nothing`).toBeGreaterThan(0);
        c.panes.forEach((p, i) => {
          const alone = fieldsOf(b.change(p.preset));
          for (const a of c.tryThis) {
            const first = a.change(p.preset);
            const both = fieldsOf(b.change(first));
            for (const k of changed[i])
              if (k === 'seed') expect(both.get(k), `"${b.label}" after "${a.label}"`).not.toBe(fieldsOf(first).get(k));
              else expect(both.get(k), `"${b.label}" after "${a.label}": ${k}`).toBe(alone.get(k));
          }
        });
      }
    });
});

describe('tiles the text names are the ones the engine runs', () => {
  const tileCache = new RunCache(3);
  it('chapter 4: M = 2 KiB at d = 16 gives B_r = B_c = 8', () => {
    const c = chapterByNumber(4)!;
    const req = c.panes[0].preset;
    expect([req.blocks.sramBytes, req.problem.d]).toEqual([2048, 16]);
    expect(lessonContext(c, req, tileCache).run.result.blocks).toEqual({ blockM: 8, blockN: 8 });
  });
  it('chapter 7: 192 × 192 with three consumer warpgroups at d = 16, 192 × 128 when causal', () => {
    const c = chapterByNumber(7)!;
    const run = lessonContext(c, c.panes[0].preset, tileCache).run;
    expect(run.result.blocks).toEqual({ blockM: 192, blockN: 192 });
    expect(new Set(run.events.flatMap((e) => (e.warpgroup === undefined ? [] : [e.warpgroup]))).size).toBe(3);
    const causal = c.tryThis.find((t) => t.label === 'Causal')!.change(c.panes[0].preset);
    expect(causal.blocks).toEqual({ blockM: 192, blockN: 128 });
  });
});
