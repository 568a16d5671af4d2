// What a debugger session derives from a recorded backward trace, beyond the per-step
// state: fixed colour ranges for the gradients, the list of adds into dQ (the dQ
// accumulation view), and the P a standard forward stores in HBM, to show beside the P the
// flash backward recomputes. Pure TS, used by the session (worker) and its tests.

import { standard } from '../algorithms/standard/forward.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { TraceEvent } from '../trace/events.ts';
import type { BackwardSummary } from './protocol.ts';
import type { DqAdd } from './dq-accumulation.ts';

type RangeName = keyof BackwardSummary['ranges'];

function widen(r: [number, number], values: ArrayLike<number>): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    if (v < r[0]) r[0] = v;
    if (v > r[1]) r[1] = v;
  }
}

/** A range that a colour scale can use: [0, 1] when nothing was seen, widened when flat. */
function settle(r: [number, number]): [number, number] {
  if (r[0] > r[1]) return [0, 1];
  if (r[0] === r[1]) return [r[0] - 1, r[1] + 1];
  return r;
}

/**
 * The normalized P = softmax(S) a standard forward writes to HBM, [batch, hq, nq, nk] (the
 * tensor the flash backward never stores), from the standard algorithm's own trace.
 */
export function storedForwardP(problem: AttentionProblem, inputs: AttentionInputs): Float32Array {
  const { nq, nk } = problem;
  const out = new Float32Array(problem.batch * problem.hq * nq * nk);
  const gen = standard.run(problem, inputs, { trace: true });
  for (let r = gen.next(); !r.done; r = gen.next()) {
    const ev = r.value;
    if (ev.kind !== 'normalize' || !ev.p) continue;
    const base = (ev.b * problem.hq + ev.h) * nq * nk;
    out.set(ev.p, base + ev.tile.rows[0] * nk);
  }
  return out;
}

/** Ranges, the dQ adds and the largest difference between recomputed and stored P, over the whole trace. */
export function summarizeBackward(
  problem: AttentionProblem,
  events: readonly TraceEvent[],
  dO: Float32Array,
  pForward: Float32Array,
): BackwardSummary {
  const ranges: Record<RangeName, [number, number]> = {
    dO: [Infinity, -Infinity],
    D: [Infinity, -Infinity],
    dP: [Infinity, -Infinity],
    dS: [Infinity, -Infinity],
    dQ: [Infinity, -Infinity],
    dK: [Infinity, -Infinity],
    dV: [Infinity, -Infinity],
  };
  const dqAdds: DqAdd[] = [];
  let diff = 0;
  const { nq, nk } = problem;
  for (const ev of events) {
    switch (ev.kind) {
      case 'dsum':
        widen(ranges.D, ev.D);
        break;
      case 'dp':
        widen(ranges.dP, ev.dP);
        break;
      case 'ds':
        widen(ranges.dS, ev.dS);
        widen(ranges.D, ev.D);
        break;
      case 'dq':
        widen(ranges.dQ, ev.dQ);
        dqAdds.push({ step: ev.step, b: ev.b, h: ev.h, qBlock: ev.tile.qBlock, kvBlock: ev.tile.kvBlock, atomic: ev.atomic });
        break;
      case 'dqconvert':
        widen(ranges.dQ, ev.dQ);
        break;
      case 'dk':
        widen(ranges.dK, ev.dK);
        break;
      case 'dv':
        widen(ranges.dV, ev.dV);
        break;
      case 'recompute': {
        const [r0, r1] = ev.tile.rows;
        const [c0, c1] = ev.tile.cols;
        const cols = c1 - c0;
        const base = (ev.b * problem.hq + ev.h) * nq * nk;
        for (let r = 0; r < r1 - r0; r++)
          for (let c = 0; c < cols; c++) {
            const e = Math.abs(ev.p[r * cols + c] - pForward[base + (r0 + r) * nk + c0 + c]);
            if (e > diff) diff = e;
          }
        break;
      }
      default:
        break;
    }
  }
  widen(ranges.dO, dO);
  for (const k of Object.keys(ranges) as RangeName[]) ranges[k] = settle(ranges[k]);
  return { ranges, dqAdds, recomputeMaxDiff: diff };
}
