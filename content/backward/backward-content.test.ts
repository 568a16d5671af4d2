// Every step of every backward maps to its own pseudo-code line, an explanation and a
// formula, and the live dS / dQ numbers of the formula panel agree with the engine.

import { describe, expect, it } from 'vitest';
import { BACKWARD_ALGORITHMS } from '../../engine/algorithms/backward-registry.ts';
import { randomGradOutput } from '../../engine/backward/grad-output.ts';
import { randomInputs } from '../../engine/core/inputs.ts';
import { softmaxScale, type AttentionProblem } from '../../engine/core/problem.ts';
import type { TraceEvent } from '../../engine/trace/events.ts';
import { formulaFor } from '../formulas.ts';
import { texNum } from '../tex.ts';
import { contentFor, lineIndexFor } from '../index.ts';
import { backwardLive } from '../backward-live.ts';
import { backwardContentId } from './index.ts';

const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 24, nk: 40, d: 8, dv: 8, causal: true, dtype: 'fp32' };

function trace(algo: (typeof BACKWARD_ALGORITHMS)[number]): TraceEvent[] {
  const x = randomInputs(p, { seed: 5 });
  const events: TraceEvent[] = [];
  const gen = algo.run(p, { ...x, dO: randomGradOutput(p, 5) } as typeof x, { blockM: 8, blockN: 8, trace: true });
  for (let r = gen.next(); !r.done; r = gen.next()) events.push(r.value);
  return events;
}

describe('backward content', () => {
  for (const algo of BACKWARD_ALGORITHMS) {
    it(`${algo.id}: every backward step maps to its own pseudo-code line, explanation and formula`, () => {
      const c = contentFor(backwardContentId(algo.id));
      expect(c, `content for ${algo.id}'s backward`).toBeDefined();
      const seen = new Set<string>();
      for (const ev of trace(algo)) {
        const i = lineIndexFor(c!, ev);
        expect(i, ev.line).toBeGreaterThanOrEqual(0);
        expect(c!.lines[i].id).toBe(ev.line);
        expect(c!.explain[ev.line], ev.line).toBeTruthy();
        expect(formulaFor(algo.id, ev, 0, undefined).symbolic.length).toBeGreaterThan(0);
        seen.add(ev.line);
      }
      expect(seen.size).toBeGreaterThan(8);
    });
  }

  it("the live dS entry is P (dP − D) of the engine, and the dQ update ends in the engine's dQ", () => {
    const events = trace(BACKWARD_ALGORITHMS.find((a) => a.id === 'fa2')!);
    const P = new Float64Array(p.nq * p.nk).fill(NaN);
    const dP = new Float64Array(p.nq * p.nk).fill(NaN);
    const dS = new Float64Array(p.nq * p.nk).fill(NaN);
    const x = randomInputs(p, { seed: 5 });
    const put = (dst: Float64Array, ev: TraceEvent, vals: number[]) => {
      const [r0, r1] = ev.tile.rows;
      const [c0, c1] = ev.tile.cols;
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) dst[r * p.nk + c] = vals[(r - r0) * (c1 - c0) + c - c0];
    };
    let checked = 0;
    for (const ev of events) {
      if (ev.kind === 'recompute') put(P, ev, ev.p);
      if (ev.kind === 'dp') put(dP, ev, ev.dP);
      if (ev.kind === 'ds') put(dS, ev, ev.dS);
      const data = { p: P, dP, dS, k: x.k, nk: p.nk, d: p.d, scale: softmaxScale(p), scaleLater: false };
      if (ev.kind === 'ds') {
        const [line] = backwardLive(ev, 1, data)!;
        const m = /^dS_\{(\d+),(\d+)\} = ([^=]+) \\cdot \\big\(([^ ]+) - \(?([^ )]+)\)?\\big\) = (.+)$/.exec(line)!;
        const [row, col] = [Number(m[1]), Number(m[2])];
        // The numbers shown multiply out to the shown dS, and are the engine's P, dP and D.
        expect(m[3]).toBe(texNum(P[row * p.nk + col]));
        expect(m[4]).toBe(texNum(dP[row * p.nk + col]));
        expect(m[6]).toBe(texNum(ev.dS[1 * (ev.tile.cols[1] - ev.tile.cols[0]) + col - ev.tile.cols[0]]));
        expect(P[row * p.nk + col] * (dP[row * p.nk + col] - ev.D[1])).toBeCloseTo(
          ev.dS[col - ev.tile.cols[0] + (ev.tile.cols[1] - ev.tile.cols[0])],
          5,
        );
        checked++;
      }
      if (ev.kind === 'dq') {
        const lines = backwardLive(ev, 0, data)!;
        expect(lines[1].endsWith(`= ${texNum(ev.dQ[0])}`)).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});
