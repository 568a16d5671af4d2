// FA3 backward's kernel structure as the trace shows it: the kernel's tile table, the
// roles, the two producer rings (never more loads in flight than stages, every consumer
// step after the load it needs), the dQ writer's adds, and the deterministic mode's order.

import { describe, expect, it } from 'vitest';
import { randomGradOutput } from '../../backward/grad-output.ts';
import { referenceBackward } from '../../backward/reference-backward.ts';
import { naiveBackwardSamePrecision } from '../../backward/accuracy-support.ts';
import type { BackwardInputs, BackwardResult } from '../../backward/types.ts';
import { randomInputs } from '../../core/inputs.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { runToEnd } from '../../run.ts';
import type { DqEvent, TraceEvent } from '../../trace/events.ts';
import { maxAbs } from '../accuracy-matrix.ts';
import { fa3Backward, fa3BackwardStages, fa3BackwardTile } from './backward.ts';

const base: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 40, nk: 40, d: 8, dv: 8, causal: false, dtype: 'bf16' };

function trace(
  p: AttentionProblem,
  opts: { blockM?: number; blockN?: number; features?: Record<string, boolean> } = {},
): { events: TraceEvent[]; r: BackwardResult; x: BackwardInputs } {
  const x: BackwardInputs = { ...randomInputs(p, { seed: 8 }), dO: randomGradOutput(p, 8) };
  const events: TraceEvent[] = [];
  const r = runToEnd(fa3Backward, p, x, { blockM: 8, blockN: 8, ...opts, trace: true, onEvent: (e) => events.push(e) }) as BackwardResult;
  return { events, r, x };
}

describe('fa3 backward', () => {
  it('uses the SM90 launch table for its default tiles', () => {
    const t = (over: Partial<AttentionProblem>) => fa3BackwardTile({ ...base, ...over });
    expect(t({ d: 64 })).toEqual({ blockM: 128, blockN: 128 });
    expect(t({ d: 64, causal: true, softcap: 30 })).toEqual({ blockM: 96, blockN: 128 });
    expect(t({ d: 128 })).toEqual({ blockM: 80, blockN: 128 });
    expect(t({ d: 128, causal: true })).toEqual({ blockM: 64, blockN: 128 });
    expect(t({ d: 256 })).toEqual({ blockM: 64, blockN: 80 });
    expect(fa3BackwardStages({ ...base, d: 192 })).toEqual({ q: 2, dO: 1 });
    const p = { ...base, nq: 200, nk: 150, d: 128, dv: 128, causal: true };
    const x: BackwardInputs = { ...randomInputs(p, { seed: 1 }), dO: randomGradOutput(p, 1) };
    const r = runToEnd(fa3Backward, p, x) as BackwardResult;
    expect(r.blocks).toEqual({ blockM: 64, blockN: 128 });
    const ref = referenceBackward(p, x);
    const naive = naiveBackwardSamePrecision(p, x);
    for (const t of ['dq', 'dk', 'dv'] as const)
      expect(maxAbs(r[t], ref[t]), t).toBeLessThanOrEqual(Math.max(2 * maxAbs(naive[t], ref[t]), 4e-3));
  });

  it('tags every step with its role; the producer keeps at most `stages` loads of a ring ahead of the MMA steps', () => {
    for (const d of [8, 160]) {
      const p = { ...base, d, dv: d };
      const { events } = trace(p);
      const stages = fa3BackwardStages(p);
      expect(events.every((e) => e.role !== undefined && e.pass === 'backward')).toBe(true);
      expect(new Set(events.map((e) => e.role))).toEqual(new Set(['preprocess', 'producer', 'mma', 'dqwriter', 'postprocess']));
      for (const [line, ring, depth] of [
        ['fa3bwd.loadQ', 'Q', stages.q],
        ['fa3bwd.loaddO', 'dO', stages.dO],
      ] as const) {
        // Loads of a ring minus the row blocks whose last reader (dK for Q, dV for dO) has run, per CTA.
        const lastReader = ring === 'Q' ? 'dk' : 'dv';
        let inFlight = 0;
        let cta = -2;
        for (const e of events) {
          if (e.role === 'producer' && e.outer !== cta) {
            cta = e.outer;
            inFlight = 0;
          }
          if (e.line === line) {
            inFlight++;
            expect(e.stage).toBe((e.stage ?? -1) % depth);
            expect(inFlight, `${ring} ring, d = ${d}`).toBeLessThanOrEqual(depth);
          }
          if (e.role === 'mma' && e.kind === lastReader) inFlight--;
        }
      }
      // Each MMA step comes after the loads of its row block.
      const seen = new Set<string>();
      for (const e of events) {
        if (e.role === 'producer') seen.add(`${e.outer}:${e.line}:${e.inner}`);
        if (e.kind === 'qk') expect(seen.has(`${e.outer}:fa3bwd.loadQ:${e.inner}`)).toBe(true);
        if (e.kind === 'dp') expect(seen.has(`${e.outer}:fa3bwd.loaddO:${e.inner}`)).toBe(true);
      }
    }
  });

  it('dQaccum holds unscaled sums; the postprocess multiplies by the scale', () => {
    const p = { ...base, dtype: 'fp32' as const };
    const { events, r, x } = trace(p);
    const ref = referenceBackward(p, x);
    const lastDq = events.filter((e): e is DqEvent => e.kind === 'dq' && e.tile.qBlock === 0).at(-1)!;
    const scale = 1 / Math.sqrt(p.d);
    expect(lastDq.dQ[0] * scale).toBeCloseTo(ref.dq[0], 5);
    const convert = events.find((e) => e.kind === 'dqconvert' && e.tile.qBlock === 0)!;
    expect(convert.kind === 'dqconvert' && convert.dQ[0]).toBeCloseTo(ref.dq[0], 5);
    expect(r.dq[0]).toBeCloseTo(ref.dq[0], 5);
  });

  it('deterministic mode: every dQ row block receives its adds in the kernel’s fixed order', () => {
    for (const causal of [false, true]) {
      const p = { ...base, causal };
      const { events } = trace(p, { features: { deterministic: true } });
      const adds = events.filter((e): e is DqEvent => e.kind === 'dq');
      const byRow = new Map<number, DqEvent[]>();
      for (const a of adds) byRow.set(a.tile.qBlock, [...(byRow.get(a.tile.qBlock) ?? []), a]);
      for (const [, list] of byRow) {
        expect(list.map((a) => a.turn)).toEqual(list.map((_, n) => n));
        const workers = list.map((a) => a.worker);
        expect(workers).toEqual([...workers].sort((a, b) => (causal ? b - a : a - b)));
      }
      // Without it there is no turn.
      expect(trace(p).events.some((e) => e.kind === 'dq' && e.turn !== undefined)).toBe(false);
    }
  });

  it('dq events say which workers would collide: without a mask, every column block at once', () => {
    const { events } = trace({ ...base, nq: 16, nk: 24 });
    const first = events.find((e): e is DqEvent => e.kind === 'dq' && e.worker === 0)!;
    expect(first.collidesWith).toEqual([1, 2]);
    expect(first.atomic).toBe(true);
  });

  it('rejects unknown features and d > 256 by name', () => {
    const x: BackwardInputs = { ...randomInputs(base, { seed: 1 }), dO: randomGradOutput(base, 1) };
    expect(() => runToEnd(fa3Backward, base, x, { features: { bogus: true } })).toThrow(/unknown feature 'bogus' for fa3/);
    const big = { ...base, d: 288, dv: 8 };
    expect(() => runToEnd(fa3Backward, big, { ...randomInputs(big, { seed: 1 }), dO: randomGradOutput(big, 1) } as BackwardInputs)).toThrow(
      /d: FA3 instantiates head dims up to 256/,
    );
  });
});
