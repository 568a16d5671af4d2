// FA4 backward as the trace shows it: SM100's 128 × 128 tile, gradients against the float64
// reference, the Q ring of one slot in a 2-CTA pair (d ≥ 128) and two below, the deterministic
// order (last column block first when causal or windowed), FP8 refused.

import { describe, expect, it } from 'vitest';
import { randomGradOutput } from '../../backward/grad-output.ts';
import { naiveBackwardSamePrecision } from '../../backward/accuracy-support.ts';
import { referenceBackward } from '../../backward/reference-backward.ts';
import type { BackwardInputs, BackwardResult } from '../../backward/types.ts';
import { randomInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { runToEnd } from '../../run.ts';
import type { DqEvent, TraceEvent } from '../../trace/events.ts';
import { maxAbs } from '../accuracy-matrix.ts';
import { fa4Backward } from './backward.ts';

const base: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 40, nk: 56, d: 8, dv: 8, causal: true, dtype: 'bf16' };

function trace(p: AttentionProblem, opts: { blockM?: number; blockN?: number; features?: Record<string, boolean> } = {}) {
  const x: BackwardInputs = { ...randomInputs(p, { seed: 4 }), dO: randomGradOutput(p, 4) };
  const events: TraceEvent[] = [];
  const r = runToEnd(fa4Backward, p, x, { blockM: 8, blockN: 8, ...opts, trace: true, onEvent: (e) => events.push(e) }) as BackwardResult;
  return { events, r, x };
}

describe('fa4 backward', () => {
  it('runs the SM100 128 × 128 tile by default, within twice the same-precision naive error of float64', () => {
    const p = { ...base, hq: 1, nq: 150, nk: 260, d: 16, dv: 16 };
    const x: BackwardInputs = { ...randomInputs(p, { seed: 2 }), dO: randomGradOutput(p, 2) };
    const r = runToEnd(fa4Backward, p, x) as BackwardResult;
    expect(r.blocks).toEqual({ blockM: 128, blockN: 128 });
    const ref = referenceBackward(p, x);
    const naive = naiveBackwardSamePrecision(p, x);
    for (const t of ['dq', 'dk', 'dv'] as const)
      expect(maxAbs(r[t], ref[t]), t).toBeLessThanOrEqual(Math.max(2 * maxAbs(naive[t], ref[t]), 4e-3));
  });

  it('keeps at most one Q load ahead in a pair (d ≥ 128) and two on one CTA, the dO ring one', () => {
    for (const [d, depth] of [
      [64, 2],
      [128, 1],
    ] as const) {
      const { events } = trace({ ...base, hq: 1, nq: 24, nk: 32, d, dv: d, causal: false });
      let inFlight = 0;
      let dOInFlight = 0;
      for (const e of events) {
        if (e.line === 'fa4bwd.loadQ') inFlight++;
        if (e.line === 'fa4bwd.loaddO') dOInFlight++;
        if (e.role === 'mma' && e.kind === 'dk') inFlight--;
        if (e.role === 'mma' && e.kind === 'dv') dOInFlight--;
        expect(inFlight, `d = ${d}`).toBeLessThanOrEqual(depth);
        expect(dOInFlight).toBeLessThanOrEqual(1);
      }
    }
  });

  it('deterministic: the column blocks add in turn, from the last one down when causal or windowed, ascending otherwise', () => {
    for (const [over, down] of [
      [{ causal: true }, true],
      [{ causal: false, window: { left: 16, right: 8 } }, true],
      [{ causal: false }, false],
    ] as const) {
      const { events } = trace({ ...base, ...over }, { features: { deterministic: true } });
      const adds = events.filter((e): e is DqEvent => e.kind === 'dq' && e.h === 0);
      const byRow = new Map<number, DqEvent[]>();
      for (const a of adds) byRow.set(a.tile.qBlock, [...(byRow.get(a.tile.qBlock) ?? []), a]);
      for (const [, list] of byRow) {
        expect(list.map((a) => a.turn)).toEqual(list.map((_, n) => n));
        const workers = list.map((a) => a.worker);
        expect(workers).toEqual([...workers].sort((a, b) => (down ? b - a : a - b)));
      }
    }
  });

  it('takes the panel’s forward switches: the forward run that gives O and the LSE runs with them', () => {
    const p = { ...base, causal: false };
    const x: BackwardInputs = { ...randomInputs(p, { seed: 3 }), dO: randomGradOutput(p, 3) };
    const r = runToEnd(fa4Backward, p, x, {
      blockM: 8,
      blockN: 8,
      features: { lazyRescale: false, exp2Emulation: false },
    }) as BackwardResult;
    const ref = referenceBackward(p, x);
    for (const t of ['dq', 'dk', 'dv'] as const) expect(maxAbs(r[t], ref[t]), t).toBeLessThan(4e-2);
  });

  it('refuses FP8 (the FA4 backward is 16-bit only) by name', () => {
    const p = { ...base, dtype: 'fp8e4m3' as const };
    const x: BackwardInputs = { ...randomInputs(p, { seed: 1 }), dO: randomGradOutput(p, 1) };
    expect(() => runToEnd(fa4Backward, p, x)).toThrow(/dtype: the fa4 backward/);
  });
});
