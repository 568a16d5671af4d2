import { describe, expect, it } from 'vitest';
import { fa2 } from '../algorithms/fa2/forward.ts';
import { ALGORITHMS } from '../algorithms/registry.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { modifyScore, scoreModel, visible } from '../core/scores.ts';
import { runToEnd } from '../run.ts';
import type { TraceEvent } from '../trace/events.ts';
import { matchBreakpoint, nonFiniteIn } from './breakpoints.ts';
import { applyUpdate } from './frames.ts';
import type { Frame, Granularity } from './protocol.ts';
import type { LoadRequest } from '../request.ts';
import { DebuggerSession } from './session.ts';

const problem: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 40, nk: 56, d: 16, dv: 8, causal: true, dtype: 'fp32' };
const req: LoadRequest = {
  algorithm: 'fa2',
  problem,
  seed: 3,
  distribution: 'outlier-row',
  outlierRow: 21,
  blocks: { blockM: 16, blockN: 16 },
};

// Copies: a viewer's frame is patched in place by the next update.
const view = (f: Frame) => ({
  b: f.b,
  h: f.h,
  s: f.s.slice(),
  p: f.p.slice(),
  o: f.o.slice(),
  m: f.m.slice(),
  l: f.l.slice(),
  mask: f.mask.slice(),
  oState: f.oState.slice(),
  counters: f.counters,
});

/** The receiving end, as the app's pane holds it: applies each update to its frame. */
function viewer(s: DebuggerSession) {
  let f: Frame | undefined;
  return {
    seek: async (k: number) => (f = applyUpdate(f, await s.seek(k, f === undefined))),
    step: async (d: number, g: Granularity) => (f = applyUpdate(f, await s.step(d, g))),
  };
}

describe('DebuggerSession', () => {
  it('records the same steps as a plain run and is deterministic', async () => {
    const s = new DebuggerSession();
    const sum = await s.load(req);
    const x = randomInputs(problem, { seed: 3, distribution: 'outlier-row', outlierRow: 21 });
    const plain = runToEnd(fa2, problem, x, { blockM: 16, blockN: 16 });
    expect(sum.total).toBe(plain.counters.steps);
    const s2 = new DebuggerSession();
    await s2.load(req);
    expect(JSON.stringify(s2.events())).toBe(JSON.stringify(s.events()));
  });

  it('seeking anywhere shows exactly what stepping there one phase at a time shows', async () => {
    const s = new DebuggerSession();
    const { total } = await s.load(req);
    const v = viewer(s);
    const walked = [view(await v.seek(0))];
    for (let i = 1; i < total; i++) {
      const f = await v.step(1, 'phase');
      expect(f.step).toBe(i);
      walked.push(view(f));
    }
    const jumper = new DebuggerSession();
    await jumper.load(req);
    const j = viewer(jumper);
    for (const k of [total - 1, 5, 77, 3, total - 2, 130, 0, 131, 132, 140]) {
      const f = await j.seek(k);
      expect(f.step).toBe(k);
      expect(view(f)).toEqual(walked[k]);
    }
    // Stepping backward, and forward by iterations, patch the same way.
    await j.seek(100);
    expect(view(await j.step(-1, 'phase'))).toEqual(walked[99]);
    const it = await j.step(1, 'inner');
    expect(view(it)).toEqual(walked[it.step]);
  });

  it('the last frame of each head holds the float64 reference output, and m + log l is the LSE', async () => {
    const s = new DebuggerSession();
    const { total } = await s.load(req);
    const ref = referenceAttention(problem, randomInputs(problem, { seed: 3, distribution: 'outlier-row', outlierRow: 21 }));
    const last = await viewer(s).seek(total - 1);
    expect(last.h).toBe(1);
    const base = problem.nq * problem.dv; // head 1 of batch 0
    let err = 0;
    for (let i = 0; i < base; i++) err = Math.max(err, Math.abs(last.o[i] - ref.o[base + i]));
    expect(err).toBeLessThan(2e-5);
    for (let r = 0; r < problem.nq; r++) {
      const lse = ref.lse[problem.nq + r];
      if (lse === -Infinity) continue;
      expect(last.m[r] + Math.log(last.l[r])).toBeCloseTo(lse, 4);
    }
    expect(Array.from(last.oState).every((v) => v === 3)).toBe(true);
  });

  // sage quantizes (no 2e-5 agreement to expect, and it takes d = dv only): its own case follows.
  for (const algo of ALGORITHMS.filter((a) => !a.quantized)) {
    it(`${algo.id}: stepping to the end reproduces the float64 reference output, and every step replays exactly`, async () => {
      const s = new DebuggerSession();
      const r = { ...req, algorithm: algo.id, problem: { ...problem, hq: 1 } };
      const { total } = await s.load(r);
      const ref = referenceAttention(r.problem, randomInputs(r.problem, { seed: 3, distribution: 'outlier-row', outlierRow: 21 }));
      const last = await viewer(s).seek(total - 1);
      let err = 0;
      for (let i = 0; i < ref.o.length; i++) err = Math.max(err, Math.abs(last.o[i] - ref.o[i]));
      expect(err).toBeLessThan(2e-5);
      // Row 21 (the outlier) has its final, finite max.
      expect(Number.isFinite(last.m[21])).toBe(true);
      const walker = new DebuggerSession();
      await walker.load(r);
      const w = viewer(walker);
      const jumper = viewer(s);
      await w.seek(0);
      for (let k = 1; k < total; k++) {
        const f = await w.step(1, 'phase');
        if (k % 97 === 0 || k === total - 1) expect(view(f)).toEqual(view(await jumper.seek(k)));
      }
    });
  }

  for (const version of [1, 2]) {
    it(`sage v${version}: stepping to the end lands near the float64 reference (INT8 Q·Kᵀ), and every step replays exactly`, async () => {
      const sp: AttentionProblem = { ...problem, hq: 1, d: 16, dv: 16, dtype: 'fp16' };
      // Normal inputs: the outlier row of the other cases would set its whole Q block's INT8 step (the weakness per-block scales have).
      const r: LoadRequest = {
        algorithm: 'sage',
        problem: sp,
        seed: 3,
        distribution: 'normal',
        features: { version },
        blocks: { blockM: 16, blockN: 16 },
      };
      const s = new DebuggerSession();
      const { total } = await s.load(r);
      const ref = referenceAttention(sp, randomInputs(sp, { seed: 3 }));
      const last = await viewer(s).seek(total - 1);
      let err = 0;
      for (let i = 0; i < ref.o.length; i++) err = Math.max(err, Math.abs(last.o[i] - ref.o[i]));
      // Quantized: never exact, but an INT8 step of a few hundredths moves O by far less than this.
      expect(err).toBeGreaterThan(0);
      expect(err).toBeLessThan(0.1);
      const walker = new DebuggerSession();
      await walker.load(r);
      const w = viewer(walker);
      const jumper = viewer(s);
      await w.seek(0);
      for (let k = 1; k < total; k++) {
        const f = await w.step(1, 'phase');
        if (k % 37 === 0 || k === total - 1) expect(view(f)).toEqual(view(await jumper.seek(k)));
      }
    });
  }

  it("FA4's row history is marked base 2, so its rescale factor reads 2^(m_old - m_new)", async () => {
    const s = new DebuggerSession();
    const fa4Problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 256, d: 16, dv: 16, causal: false, dtype: 'bf16' };
    await s.load({ algorithm: 'fa4', problem: fa4Problem, seed: 1, distribution: 'normal', blocks: { blockM: 128, blockN: 64 } });
    const k = s.events().findIndex((e) => e.kind === 'rowmax');
    expect(k).toBeGreaterThanOrEqual(0);
    const f = await s.seek(k, true);
    const entries = f.history.entries;
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e) => e.base2 === true)).toBe(true);
    const fa2s = new DebuggerSession();
    await fa2s.load(req);
    const k2 = fa2s.events().findIndex((e) => e.kind === 'rowmax');
    const f2 = await fa2s.seek(k2, true);
    expect(f2.history.entries[0].base2).toBeUndefined();
  });

  it("the O colour range is the final output's (from the float64 reference) where the run normalizes at the end", async () => {
    const s = new DebuggerSession();
    const sum = await s.load(req);
    const x = randomInputs(problem, { seed: 3, distribution: 'outlier-row', outlierRow: 21 });
    const ref = referenceAttention(problem, x);
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of ref.o) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    expect(sum.ranges.o[0]).toBeCloseTo(lo, 4);
    expect(sum.ranges.o[1]).toBeCloseTo(hi, 4);
    // The unnormalized accumulator really does leave that range (so the choice matters).
    const accMax = Math.max(...s.events().flatMap((e) => (e.kind === 'pv' ? e.o.map(Math.abs) : [])));
    expect(accMax).toBeGreaterThan(Math.max(Math.abs(lo), Math.abs(hi)) * 1.5);
  });

  it("standard attention's P colour range is the normalized P's (max over rows of exp(max S − LSE), from the float64 reference)", async () => {
    const problem: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 40, nk: 56, d: 16, dv: 8, causal: false, dtype: 'fp32' };
    const s = new DebuggerSession();
    const sum = await s.load({ algorithm: 'standard', problem, seed: 5, distribution: 'normal', blocks: { blockM: 16, blockN: 16 } });
    const x = randomInputs(problem, { seed: 5, distribution: 'normal' });
    const ref = referenceAttention(problem, x);
    const model = scoreModel(problem);
    let hi = 0;
    for (let h = 0; h < problem.hq; h++) {
      for (let i = 0; i < problem.nq; i++) {
        let smax = -Infinity;
        for (let j = 0; j < problem.nk; j++) {
          if (!visible(model, i, j, 0, h)) continue;
          let dot = 0;
          for (let c = 0; c < problem.d; c++) dot += x.q[(h * problem.nq + i) * problem.d + c] * x.k[j * problem.d + c];
          smax = Math.max(smax, modifyScore(model, h, i, j, dot, 0));
        }
        if (smax > -Infinity) hi = Math.max(hi, Math.exp(smax - ref.lse[h * problem.nq + i]));
      }
    }
    expect(sum.ranges.p[0]).toBe(0);
    expect(sum.ranges.p[1]).toBeCloseTo(hi, 5);
    // exp(S − m) before normalizing reaches 1, far above it (so the choice matters)
    expect(hi).toBeLessThan(0.7);
  });

  it('not-yet-computed entries are NaN and masked entries are flagged', async () => {
    const s = new DebuggerSession();
    await s.load(req);
    const events = s.events();
    const firstQk = events.findIndex((e) => e.kind === 'qk');
    const v = viewer(s);
    const f = await v.seek(firstQk);
    const [r0, r1] = f.event.tile.rows;
    const [c0, c1] = f.event.tile.cols;
    expect(Number.isNaN(f.s[r0 * f.nk + c1])).toBe(true);
    expect(Number.isFinite(f.s[r0 * f.nk + c0])).toBe(true);
    expect(Number.isNaN(f.p[r0 * f.nk + c0])).toBe(true);
    const maskStep = events.findIndex((e) => e.kind === 'mask');
    const g = await v.seek(maskStep);
    const ev = g.event as Extract<TraceEvent, { kind: 'mask' }>;
    const cols = ev.tile.cols[1] - ev.tile.cols[0];
    const hidden = ev.masked.indexOf(1);
    const r = ev.tile.rows[0] + Math.floor(hidden / cols);
    const c = ev.tile.cols[0] + (hidden % cols);
    expect(g.mask[r * g.nk + c]).toBe(1);
    expect(g.s[r * g.nk + c]).toBe(-Infinity);
    expect(r1 - r0).toBeGreaterThan(0);
  });

  it('inner and outer granularity land on the first step of an iteration', async () => {
    const s = new DebuggerSession();
    await s.load(req);
    const ev = s.events();
    const f1 = await s.step(1, 'inner');
    expect(f1.step).toBeGreaterThan(0);
    const a = ev[f1.step - 1];
    const b = ev[f1.step];
    expect([a.outer, a.inner]).not.toEqual([b.outer, b.inner]);
    const f2 = await s.step(1, 'outer');
    expect(ev[f2.step].outer).not.toBe(ev[f2.step - 1].outer);
    const back = await s.step(-1, 'inner');
    expect(back.step).toBeLessThan(f2.step);
    expect(`${ev[back.step].outer},${ev[back.step].inner}`).not.toBe(`${ev[back.step - 1].outer},${ev[back.step - 1].inner}`);
  });

  it('breakpoints stop where they should', async () => {
    const s = new DebuggerSession();
    await s.load(req);
    const ev = s.events();
    await s.setBreakpoints([{ id: 't', enabled: true, kind: 'tile', qBlock: 1, kvBlock: 1 }]);
    const t = await s.runToBreakpoint();
    expect(t.step).toBe(ev.findIndex((e) => e.tile.qBlock === 1 && e.tile.kvBlock === 1));
    expect(t.hit?.id).toBe('t');

    await s.seek(0);
    await s.setBreakpoints([{ id: 'r', enabled: true, kind: 'rescale-row', row: 21 }]);
    const r = await s.runToBreakpoint();
    const e = r.event as Extract<TraceEvent, { kind: 'rescale' }>;
    expect(e.kind).toBe('rescale');
    expect(e.factor[21 - e.tile.rows[0]]).not.toBe(1);
    expect(
      ev
        .slice(0, r.step)
        .some((x) => x.kind === 'rescale' && x.tile.rows[0] <= 21 && x.tile.rows[1] > 21 && x.factor[21 - x.tile.rows[0]] !== 1),
    ).toBe(false);

    await s.seek(0);
    await s.setBreakpoints([
      { id: 'off', enabled: false, kind: 'phase', phase: 'qk' },
      { id: 'n', enabled: true, kind: 'phase', phase: 'normalize' },
    ]);
    const n = await s.runToBreakpoint();
    expect(n.event.kind).toBe('normalize');
    expect(n.step).toBe(ev.findIndex((x) => x.kind === 'normalize'));
    // Playback (step forward) stops at the same place.
    await s.seek(0);
    let f = await s.step(1, 'outer');
    while (!f.hit && f.step < f.total - 1) f = await s.step(1, 'outer');
    expect(f.step).toBe(n.step);

    await s.seek(0);
    await s.setBreakpoints([{ id: 'j', enabled: true, kind: 'm-jump', threshold: 5 }]);
    const j = await s.runToBreakpoint();
    const je = j.event as Extract<TraceEvent, { kind: 'rowmax' }>;
    expect(je.kind).toBe('rowmax');
    expect(je.mAfter.some((m, i) => Number.isFinite(je.mBefore[i]) && m - je.mBefore[i] > 5)).toBe(true);

    // No enabled breakpoint ahead: runs to the end without a hit.
    await s.setBreakpoints([]);
    const end = await s.runToBreakpoint();
    expect(end.step).toBe(end.total - 1);
    expect(end.hit).toBeUndefined();
  });

  it('the NaN/Inf breakpoint ignores masked -inf but catches NaN and overflow', () => {
    const base = {
      step: 0,
      b: 0,
      h: 0,
      outer: 0,
      inner: 0,
      tile: { qBlock: 0, kvBlock: 0, rows: [0, 1], cols: [0, 2] },
      line: 'x',
      delta: {},
    } as const;
    const masked = { ...base, kind: 'mask', masked: [0, 1], s: [1, -Infinity] } as TraceEvent;
    expect(nonFiniteIn(masked)).toBeUndefined();
    const nan = { ...base, kind: 'pv', o: [1, NaN] } as TraceEvent;
    expect(nonFiniteIn(nan)).toMatch(/O has NaN/);
    const inf = { ...base, kind: 'exp', p: [Infinity, 0], m: [0] } as TraceEvent;
    expect(matchBreakpoint({ kind: 'nonfinite' }, inf, undefined)).toMatch(/P has Infinity/);
  });

  it('refuses problems too large to step, with a suggestion, and bad input keeps the loaded run', async () => {
    const s = new DebuggerSession();
    await s.load(req);
    await s.seek(42);
    await expect(s.load({ ...req, problem: { ...problem, nq: 8192, nk: 8192, hq: 8, hk: 8 } })).rejects.toThrow(/counters-only/);
    await expect(s.load({ ...req, problem: { ...problem, hk: 3 } })).rejects.toThrow(/^hk:/);
    // d counts as well as dv: a huge head dim is refused before its inputs are drawn, naming d.
    await expect(s.load({ ...req, problem: { ...problem, d: 1_000_000, dv: 32 } })).rejects.toThrow(
      /too large to step through.*make d smaller/,
    );
    await expect(s.runCounters({ ...req, problem: { ...problem, d: 3_000_000, dv: 32 } })).rejects.toThrow(
      /too large to run here.*make d smaller/,
    );
    expect(s.position).toBe(42);
    expect((await s.seek(42)).step).toBe(42);
  });

  it('a load can be cancelled and a counters-only run matches the plain counters', async () => {
    const s = new DebuggerSession();
    const big: LoadRequest = { ...req, problem: { ...problem, nq: 512, nk: 512, d: 64, dv: 64, hq: 1, causal: false }, blocks: {} };
    const p = s.load(big, () => s.cancel());
    await expect(p).rejects.toThrow(/cancelled/);
    const c = await s.runCounters(req);
    const plain = runToEnd(fa2, problem, randomInputs(problem, { seed: 3, distribution: 'outlier-row', outlierRow: 21 }), {
      blockM: 16,
      blockN: 16,
    });
    expect(c.counters).toEqual(plain.counters);
    expect(c.cancelled).toBe(false);
  });

  it('marks a base-2 trace in the summary (sage, fa4), whose S is log₂e times the natural logit', async () => {
    const small: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 32, nk: 32, d: 16, dv: 16, causal: false, dtype: 'fp16' };
    const sage = new DebuggerSession();
    // smoothK off: smoothing shifts every score of a row by q·mean(K) (softmax does not see it).
    const sum = await sage.load({
      algorithm: 'sage',
      problem: small,
      seed: 1,
      distribution: 'normal',
      blocks: { blockM: 16, blockN: 16 },
      features: { smoothK: false },
    });
    expect(sum.base2).toBe(true);
    // The title's claim, checked against float64: the scores of a base-2 trace are τ·log₂e·QKᵀ (up to INT8 quantization).
    const x = randomInputs(small, { seed: 1, distribution: 'normal' });
    const qk = sage.events().find((e) => e.kind === 'qk');
    if (qk?.kind !== 'qk') throw new Error('no qk step');
    const [r0] = qk.tile.rows;
    const [c0] = qk.tile.cols;
    let dot = 0;
    for (let e = 0; e < small.d; e++) dot += x.q[r0 * small.d + e] * x.k[c0 * small.d + e];
    const natural = dot / Math.sqrt(small.d);
    expect(Math.abs(qk.s[0] - natural * Math.LOG2E)).toBeLessThan(0.05 * Math.max(1, Math.abs(natural * Math.LOG2E)));
    // …and not the natural logit, which the natural-unit title would claim.
    expect(Math.abs(qk.s[0] - natural)).toBeGreaterThan(0.2 * Math.abs(natural));
    const fa2s = new DebuggerSession();
    expect((await fa2s.load({ ...req, problem: { ...small, dtype: 'fp32' } })).base2).toBeUndefined();
  });
  it("carries FA3's sentence on its warpgroup order (ping-pong or side by side) into the summary; FA2 has none", async () => {
    const load = (d: number, features?: Record<string, boolean>) =>
      new DebuggerSession().load({
        algorithm: 'fa3',
        problem: { batch: 1, hq: 1, hk: 1, nq: 128, nk: 160, d, dv: d, causal: false, dtype: 'fp16' },
        seed: 1,
        distribution: 'normal',
        blocks: { blockM: 128, blockN: 80 },
        ...(features ? { features } : {}),
      });
    expect((await load(256)).schedule).toMatch(/^No ping-pong: the kernel has no scheduler barrier for 16-bit inputs at d > 128/);
    expect((await load(128)).schedule).toMatch(/^Ping-pong: a scheduler barrier hands the tensor cores to the 2 consumer warpgroups/);
    expect((await load(128, { pingpong: false })).schedule).toMatch(/^Ping-pong switched off/);
    expect((await new DebuggerSession().load(req)).schedule).toBeUndefined();
  });
});
