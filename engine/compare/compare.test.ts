// Compare mode's engine side: the difference table against counters and errors computed
// here from the float64 reference, synchronised positions on each axis, and simulated
// step times from the hardware schedule.

import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../debugger/session.ts';
import type { LoadRequest } from '../request.ts';
import { randomInputs } from '../core/inputs.ts';
import { referenceAttention } from '../core/reference.ts';
import { totalBytes } from '../core/counters.ts';
import { diffTable, diffTableCsv, errorStats, outputDifference, ratioNotes } from './diff.ts';
import { pointOf, stepFor } from './sync.ts';

const base: LoadRequest = {
  algorithm: 'fa2',
  problem: { batch: 1, hq: 2, hk: 2, nq: 32, nk: 48, d: 16, dv: 16, causal: false, dtype: 'fp32' },
  seed: 3,
  distribution: 'normal',
  blocks: { blockM: 16, blockN: 16 },
};

async function loaded(patch: Partial<LoadRequest>) {
  const s = new DebuggerSession();
  await s.load({ ...base, ...patch });
  return s;
}

describe('compare: error and difference', () => {
  it('errorStats and outputDifference measure what they say', () => {
    const e = errorStats([1, 2, NaN, 4], [1, 2.5, 3, 3]);
    // Finite pairs: errors 0, 0.5, 1 against |want| 1, 2.5, 3.
    expect(e).toEqual({ maxAbs: 1, argMax: 3, meanAbs: 0.5, rmse: Math.sqrt(1.25 / 3), relL1: 1.5 / 6.5, nonFinite: 1 });
    expect(errorStats([0, 0], [0, 0]).relL1).toBe(0);
    expect(errorStats([1, 0], [0, 0]).relL1).toBe(Infinity);
    const d = outputDifference([1, 2, Infinity], [0.5, 2, 1]);
    expect(Array.from(d.diff)).toEqual([0.5, 0, NaN]);
    expect(d.maxAbs).toBe(0.5);
    expect(() => outputDifference([1], [1, 2])).toThrow(/same problem/);
  });

  it('ratioNotes: each pane against the lowest and against the next worse pane', () => {
    const names = ['pane 1', 'pane 2', 'pane 3'];
    expect(ratioNotes([1.5e-4, 2.5e-2, 1e-2], names)).toEqual([
      'lowest; 66.67× below pane 3',
      "166.67× pane 1's",
      "66.67× pane 1's; 2.50× below pane 2",
    ]);
    expect(ratioNotes([2e-2, 8e-3, 2e-2], names)).toEqual(["2.50× pane 2's", 'lowest; 2.50× below pane 1', "2.50× pane 2's"]);
    // Ties: a tie for the lowest reads as equal, and both compare with the next strictly higher value.
    expect(ratioNotes([1, 1, 4], names)).toEqual(['lowest; 4.00× below pane 3', 'equal to pane 1; 4.00× below pane 3', "4.00× pane 1's"]);
    expect(ratioNotes([0, 3e-3], names.slice(0, 2))).toEqual(['lowest; ∞ below pane 2', "∞ pane 1's"]);
    // All equal, or a missing value: nothing said where it would mislead.
    expect(ratioNotes([2, 2], names.slice(0, 2))).toEqual(['', '']);
    expect(ratioNotes([NaN, 2, 4], names)).toEqual(['', 'lowest; 2.00× below pane 3', "2.00× pane 2's"]);
  });

  it('compareData: output error against float64, counters equal the run, prediction only where a model exists', async () => {
    const s = await loaded({});
    const d = await s.compareData('h100');
    const x = randomInputs(base.problem, { seed: 3, distribution: 'normal' });
    const ref = referenceAttention(base.problem, x);
    let worst = 0;
    for (let i = 0; i < ref.o.length; i++) worst = Math.max(worst, Math.abs(d.output[i] - ref.o[i]));
    expect(d.error.maxAbs).toBe(worst);
    expect(d.error.maxAbs).toBeLessThan(1e-5);
    expect(d.counters.steps).toBe(s.events().length);
    // FA2 reads Q once and K/V once per Q block: 2 heads × (32·16 + 2 Q blocks × 48·16·2) floats.
    expect(totalBytes(d.counters.hbmRead)).toBe(4 * 2 * (32 * 16 + 2 * 48 * 16 * 2));
    expect(d.prediction).toEqual({ gpu: 'h100', reason: 'no hardware model for fa2' });
    expect(d.hasTimeline).toBe(false);

    const fa3 = await loaded({ algorithm: 'fa3', problem: { ...base.problem, dtype: 'fp16' }, blocks: {} });
    const p = await fa3.compareData('h100');
    expect('timeUs' in p.prediction && p.prediction.timeUs > 0).toBe(true);
    expect(p.hasTimeline).toBe(true);
    const wrongArch = await fa3.compareData('a100');
    expect('reason' in wrongArch.prediction && wrongArch.prediction.reason).toMatch(/SM90/);
  });

  it('diffTable lines up panes and marks the lower value; CSV carries raw numbers', async () => {
    const a = await (await loaded({ algorithm: 'fa1' })).compareData('h100');
    const b = await (await loaded({})).compareData('h100');
    const rows = diffTable([
      { label: 'FA1', ...a },
      { label: 'FA2', ...b },
    ]);
    const read = rows.find((r) => r.metric === 'HBM bytes read')!;
    expect(read.raw).toEqual([totalBytes(a.counters.hbmRead), totalBytes(b.counters.hbmRead)]);
    // FA1 re-reads and re-writes O, m, l per K/V block: more HBM traffic than FA2.
    expect(read.raw[0]).toBeGreaterThan(read.raw[1]);
    expect(read.best).toBe(1);
    const time = rows.find((r) => r.metric === 'predicted time (µs)')!;
    expect(time.values).toEqual(['no hardware model for fa1', 'no hardware model for fa2']);
    const csv = diffTableCsv(['FA1', 'FA2'], rows).split('\n');
    expect(csv[0]).toBe('metric,FA1,FA2');
    expect(csv[1]).toBe(`HBM bytes read,${read.raw[0]},${read.raw[1]}`);
  });
});

describe('compare: synchronised stepping', () => {
  it("'kv' puts the follower on the same query row and key column, in the same phase", async () => {
    const fa1 = await loaded({ algorithm: 'fa1' });
    const fa2 = await loaded({ blocks: { blockM: 8, blockN: 16 } });
    const ev1 = fa1.events();
    const ev2 = fa2.events();
    for (let i = 0; i < ev1.length; i += 7) {
      const pt = pointOf(ev1, i, null);
      if (pt.col < 0) continue;
      const { step, used } = stepFor(ev2, pt, 'kv', null);
      expect(used).toBe('kv');
      const e = ev2[step];
      expect([e.b, e.h]).toEqual([pt.b, pt.h]);
      expect(pt.row >= e.tile.rows[0] && pt.row < e.tile.rows[1]).toBe(true);
      expect(pt.col >= e.tile.cols[0] && pt.col < e.tile.cols[1]).toBe(true);
      const sameTile = ev2.filter(
        (x) => x.b === e.b && x.h === e.h && x.tile.qBlock === e.tile.qBlock && x.tile.kvBlock === e.tile.kvBlock,
      );
      if (sameTile.some((x) => x.kind === pt.kind)) expect(e.kind).toBe(pt.kind);
      else expect(step).toBe(ev2.indexOf(sameTile[0]));
    }
  });

  it("'progress' maps fractions; 'time' falls back to progress without a schedule", async () => {
    const s = await loaded({});
    const ev = s.events();
    const pt = pointOf(ev, Math.floor(ev.length / 2), null);
    const other = (await loaded({ algorithm: 'fa1' })).events();
    expect(stepFor(other, pt, 'progress', null).step).toBe(Math.round(pt.progress * (other.length - 1)));
    expect(stepFor(other, pt, 'time', null).used).toBe('progress');
  });

  it("'time': FA3 with and without ping-pong sync on simulated time; all steps of one tile share its time", async () => {
    const req = { algorithm: 'fa3', problem: { ...base.problem, nq: 128, nk: 256, d: 64, dv: 64, dtype: 'fp16' as const }, blocks: {} };
    const on = await loaded(req);
    const off = await loaded({ ...req, features: { pingpong: false } });
    const last = on.events().length - 1;
    await on.seek(last);
    const pt = await on.syncPoint('h100');
    expect(pt.timeUs).toBeGreaterThan(0);
    const r = await off.seekSync(pt, 'time', 'h100');
    expect(r.used).toBe('time');
    // The follower's step is done by the leader's time and its next step is not.
    const offTimes = (await import('./session-compare.ts')).timesFor(
      { ...base, ...req, features: { pingpong: false } },
      req.problem,
      off.events(),
      'h100',
    ).times!;
    expect(offTimes[r.frame.step]).toBeLessThanOrEqual(pt.timeUs!);
    const evOn = on.events();
    const times = (await import('./session-compare.ts')).timesFor({ ...base, ...req }, req.problem, evOn, 'h100').times!;
    for (let i = 1; i < evOn.length; i++) {
      const same =
        evOn[i].b === evOn[i - 1].b &&
        evOn[i].h === evOn[i - 1].h &&
        evOn[i].tile.qBlock === evOn[i - 1].tile.qBlock &&
        evOn[i].tile.kvBlock >= 0 &&
        evOn[i - 1].tile.kvBlock >= 0;
      if (same && evOn[i].tile.kvBlock === evOn[i - 1].tile.kvBlock) expect(times[i]).toBe(times[i - 1]);
    }
  });

  it('exports the trace as JSONL, one event per line, non-finite numbers as strings', async () => {
    const s = await loaded({ problem: { ...base.problem, causal: true } });
    const lines = (await s.traceJsonl()).trimEnd().split('\n');
    expect(lines.length).toBe(s.events().length);
    expect(JSON.parse(lines[0]).step).toBe(0);
    expect(lines.some((l) => l.includes('"-Infinity"'))).toBe(true);
  });
});

describe('compare: FA4 with and without lazy rescale', () => {
  it('lazy rescale skips rescales the eager schedule does, with the error against float64 still small', async () => {
    const req = {
      algorithm: 'fa4',
      problem: { ...base.problem, nq: 128, nk: 256, d: 64, dv: 64, dtype: 'bf16' as const },
      blocks: {},
      distribution: 'outlier-row' as const,
    };
    const lazy = await (await loaded(req)).compareData('b200');
    const eager = await (await loaded({ ...req, features: { lazyRescale: false } })).compareData('b200');
    expect(lazy.counters.rescaleCount).toBeLessThan(eager.counters.rescaleCount);
    const rows = diffTable([
      { label: 'lazy', ...lazy },
      { label: 'eager', ...eager },
    ]);
    expect(rows.find((r) => r.metric === 'rescale count')!.best).toBe(0);
    // bf16 inputs and P: errors of the order of bf16's 2^-8, not more.
    expect(lazy.error.maxAbs).toBeLessThan(0.05);
    expect(eager.error.maxAbs).toBeLessThan(0.05);
    expect('timeUs' in lazy.prediction && 'timeUs' in eager.prediction).toBe(true);
  });
});
