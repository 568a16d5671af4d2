// The debugger session on a backward run: the frames' gradients against the float64
// reference backward, time travel that patches the backward arrays exactly like stepping,
// the backward breakpoints, and the dQ accumulation model against the engine's own
// record of which workers collide.

import { describe, expect, it } from 'vitest';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { referenceBackward } from '../backward/reference-backward.ts';
import { randomGradOutput } from '../backward/grad-output.ts';
import { dsAbove, gradientNonFinite } from './backward-breakpoints.ts';
import { dqAccumulationAt } from './dq-accumulation.ts';
import { applyUpdate } from './frames.ts';
import type { Frame, Granularity } from './protocol.ts';
import type { LoadRequest } from '../request.ts';
import { DebuggerSession } from './session.ts';
import type { TraceEvent } from '../trace/events.ts';

const problem: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 24, nk: 40, d: 8, dv: 6, causal: true, dtype: 'fp32' };
const req: LoadRequest = { algorithm: 'fa2', problem, seed: 5, distribution: 'normal', blocks: { blockM: 8, blockN: 8 }, pass: 'backward' };

const view = (f: Frame) => ({
  b: f.b,
  h: f.h,
  s: f.s.slice(),
  p: f.p.slice(),
  D: f.bwd!.D.slice(),
  dP: f.bwd!.dP.slice(),
  dS: f.bwd!.dS.slice(),
  dQ: f.bwd!.dQ.slice(),
  dQState: f.bwd!.dQState.slice(),
  dK: f.bwd!.dK.slice(),
  dV: f.bwd!.dV.slice(),
  kvState: f.bwd!.kvState.slice(),
});

function viewer(s: DebuggerSession) {
  let f: Frame | undefined;
  return {
    seek: async (k: number) => (f = applyUpdate(f, await s.seek(k, f === undefined))),
    step: async (d: number, g: Granularity) => (f = applyUpdate(f, await s.step(d, g))),
  };
}

async function loaded(r: LoadRequest = req) {
  const s = new DebuggerSession();
  const summary = await s.load(r);
  return { s, summary };
}

describe('DebuggerSession, backward pass', () => {
  for (const algorithm of ['standard', 'fa1', 'fa2', 'fa3'])
    it(`${algorithm}: the last frame of each head holds the float64 gradients of that head`, async () => {
      const { s, summary } = await loaded({ ...req, algorithm });
      expect(summary.pass).toBe('backward');
      const x = randomInputs(problem, { seed: 5, distribution: 'normal' });
      const ref = referenceBackward(problem, { ...x, dO: randomGradOutput(problem, 5) });
      const v = viewer(s);
      // The last step of head 0, then of head 1.
      const ev = s.events();
      const lastOf = (h: number) => ev.reduce((k, e, i) => (e.h === h ? i : k), -1);
      for (const h of [0, 1]) {
        const f = await v.seek(lastOf(h));
        expect(f.h).toBe(h);
        let err = 0;
        for (let i = 0; i < problem.nq * problem.d; i++)
          err = Math.max(err, Math.abs(f.bwd!.dQ[i] - ref.dq[h * problem.nq * problem.d + i]));
        expect(err, `dQ of head ${h}`).toBeLessThan(1e-4);
        // D of every row that sees a key: dO · O in float64.
        const dO = randomGradOutput(problem, 5);
        for (let r = 0; r < problem.nq; r++) {
          let want = 0;
          for (let c = 0; c < problem.dv; c++)
            want += dO[(h * problem.nq + r) * problem.dv + c] * ref.o[(h * problem.nq + r) * problem.dv + c];
          expect(Math.abs(f.bwd!.D[r] - want), `D of row ${r}`).toBeLessThan(1e-4);
        }
      }
      // The frame's dK and dV are the on-chip accumulators of the head being stepped: with
      // GQA, that query head's part of the K/V head's sum (the sum over the group happens in HBM).
      const f = await v.seek(lastOf(1));
      expect(f.bwd!.kvState.every((st) => st === 2)).toBe(true);
      const one: AttentionProblem = { ...problem, hq: 1 };
      const qd = problem.nq * problem.d;
      const own = referenceBackward(one, {
        q: x.q.slice(qd, 2 * qd),
        k: x.k,
        v: x.v,
        dO: randomGradOutput(problem, 5).slice(problem.nq * problem.dv),
      });
      // FA3 keeps dK without the softmax scale until its epilogue write.
      const unscale = algorithm === 'fa3' ? Math.sqrt(problem.d) : 1;
      let errK = 0;
      let errV = 0;
      for (let i = 0; i < problem.nk * problem.d; i++) errK = Math.max(errK, Math.abs(f.bwd!.dK[i] - own.dk[i] * unscale));
      for (let i = 0; i < problem.nk * problem.dv; i++) errV = Math.max(errV, Math.abs(f.bwd!.dV[i] - own.dv[i]));
      expect(errK, 'dK of head 1').toBeLessThan(1e-4);
      expect(errV, 'dV of head 1').toBeLessThan(1e-4);
    });

  for (const algorithm of ['standard', 'fa1', 'fa2', 'fa3'])
    it(`${algorithm}: seeking anywhere shows exactly what stepping there one phase at a time shows`, async () => {
      const r = { ...req, algorithm };
      const { s, summary } = await loaded(r);
      const v = viewer(s);
      const walked = [view(await v.seek(0))];
      for (let i = 1; i < summary.total; i++) walked.push(view(await v.step(1, 'phase')));
      const { s: s2 } = await loaded(r);
      const j = viewer(s2);
      const n = summary.total;
      for (const k of [n - 1, 7, Math.floor(n / 2), 3, n - 2, Math.floor(n / 3), 0, Math.floor(n / 3) + 1])
        expect(view(await j.seek(k))).toEqual(walked[k]);
      await j.seek(Math.floor(n / 2));
      expect(view(await j.step(-1, 'phase'))).toEqual(walked[Math.floor(n / 2) - 1]);
    });

  it('the recomputed P equals the P a standard forward stores, and every dQ add is listed', async () => {
    const { s, summary } = await loaded();
    const b = summary.backward!;
    expect(b.recomputeMaxDiff).toBeLessThan(1e-6);
    const adds = s.events().filter((e) => e.kind === 'dq');
    expect(b.dqAdds.map((a) => a.step)).toEqual(adds.map((e) => e.step));
    expect(b.dqAdds.every((a) => a.atomic)).toBe(true);
    const inputs = await s.headInputs(0, 1);
    expect(inputs.dO).toEqual(randomGradOutput(problem, 5).slice(problem.nq * problem.dv, 2 * problem.nq * problem.dv));
    expect(inputs.pForward!.length).toBe(problem.nq * problem.nk);
  });

  const cases: [string, Partial<AttentionProblem>, 'none' | 'some'][] = [
    ['no mask', { causal: false }, 'some'],
    ['causal, Nq < Nk', { causal: true }, 'some'],
    ['causal, square, Br = Bc', { causal: true, nq: 32, nk: 32 }, 'none'],
  ];
  for (const [name, change, expected] of cases) {
    it(`the dQ accumulation model names the same colliding workers as the engine (${name})`, async () => {
      const { s, summary } = await loaded({ ...req, problem: { ...problem, ...change } });
      const adds = summary.backward!.dqAdds;
      let collisions = 0;
      for (const e of s.events()) {
        if (e.kind !== 'dq') continue;
        const st = dqAccumulationAt(adds, e.step, e.b, e.h, summary.tiles.rows, summary.tiles.cols);
        expect(st.together, `step ${e.step}`).toEqual([...e.collidesWith].sort((a, b) => a - b));
        // The row block's own column of the grid holds exactly the engine's contributors.
        const row = Array.from(st.count.subarray(e.tile.qBlock * st.cols, (e.tile.qBlock + 1) * st.cols));
        expect(row.flatMap((n, j) => (n > 0 ? [j] : []))).toEqual([...e.contributors].sort((a, b) => a - b));
        collisions += st.together.length;
      }
      // Without a mask every worker meets the others on every row block. A causal mask over a
      // square problem starts worker j at row block j, so in step no two of them meet; with
      // Nq < Nk the bottom-right diagonal lets the first workers share their first row block.
      if (expected === 'none') expect(collisions).toBe(0);
      else expect(collisions).toBeGreaterThan(0);
    });
  }

  it('breaks on |dS| above a threshold at the first such dS step, and on nothing for finite gradients', async () => {
    const { s } = await loaded();
    const ev = s.events();
    const dss = ev.filter((e): e is Extract<TraceEvent, { kind: 'ds' }> => e.kind === 'ds');
    const big = Math.max(...dss.map((e) => Math.max(...e.dS.map(Math.abs))));
    const thr = big * 0.6;
    const first = dss.find((e) => e.dS.some((x) => Math.abs(x) > thr))!;
    await s.setBreakpoints([{ id: 'a', enabled: true, kind: 'ds-above', threshold: thr }]);
    const hit = await s.runToBreakpoint();
    expect(hit.step).toBe(first.step);
    expect(hit.hit?.reason).toMatch(/^\|dS\| above .*: \|dS\[\d+, \d+\]\| = /);
    await s.setBreakpoints([{ id: 'b', enabled: true, kind: 'grad-nonfinite' }]);
    await s.seek(0);
    const end = await s.runToBreakpoint();
    expect(end.hit).toBeUndefined();
    expect(end.step).toBe(ev.length - 1);
  });
});

describe('compare data of a backward run', () => {
  it('judges the gradients against float64 and differences dQ; no forward-kernel prediction', async () => {
    const { s } = await loaded();
    const c = await s.compareData('h100');
    expect(c.outputName).toBe('dQ');
    expect(c.output.length).toBe(problem.batch * problem.hq * problem.nq * problem.d);
    expect(c.error.maxAbs).toBeGreaterThan(0);
    expect(c.error.maxAbs).toBeLessThan(1e-4);
    expect(c.counters.atomicAdds).toBeGreaterThan(0);
    expect('reason' in c.prediction).toBe(true);
    expect(c.hasTimeline).toBe(false);
  });
});

describe('backward breakpoint matching', () => {
  const base = { step: 0, b: 0, h: 0, outer: 1, inner: 2, line: 'x', delta: {}, pass: 'backward' as const };
  it('names the gradient and the matrix entry of the first NaN/Inf', () => {
    const dq = {
      ...base,
      kind: 'dq' as const,
      tile: { qBlock: 2, kvBlock: 1, rows: [16, 18] as [number, number], cols: [8, 16] as [number, number] },
      dQ: [1, 2, 3, Infinity],
      worker: 1,
      contributors: [0, 1],
      atomic: true,
      collidesWith: [],
    };
    expect(gradientNonFinite(dq)).toBe('dQ[17, 1] is Infinity');
    const dk = {
      ...base,
      kind: 'dk' as const,
      tile: { qBlock: 0, kvBlock: 1, rows: [0, 8] as [number, number], cols: [8, 10] as [number, number] },
      dK: [0, NaN, 0, 0],
    };
    expect(gradientNonFinite(dk)).toBe('dK[8, 1] is NaN');
    expect(gradientNonFinite({ ...dk, dK: [0, 1, 2, 3] })).toBeUndefined();
  });
  it('|dS| above a threshold points at the largest entry of the tile', () => {
    const ds = {
      ...base,
      kind: 'ds' as const,
      tile: { qBlock: 1, kvBlock: 2, rows: [8, 10] as [number, number], cols: [16, 19] as [number, number] },
      dS: [0.1, -0.2, 0.3, -0.9, 0.5, 0],
      D: [0, 0],
    };
    expect(dsAbove(ds, 0.4)).toBe('|dS[9, 16]| = 0.9000 > 0.4');
    expect(dsAbove(ds, 0.95)).toBeUndefined();
  });
});
