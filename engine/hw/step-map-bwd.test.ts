// The backward hardware view driven by the numeric FA2 backward's own trace: which SM is
// shown, where each step's cursor lands, and click-to-seek back.
import { describe, expect, it } from 'vitest';
import { fa2Backward } from '../algorithms/fa2/backward.ts';
import { fa3Backward } from '../algorithms/fa3/backward.ts';
import { fa4Backward } from '../algorithms/fa4/backward.ts';
import { randomGradOutput } from '../backward/grad-output.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import type { TraceEvent } from '../trace/events.ts';
import { smScheduleFor } from '../algorithms/schedule-registry.ts';
import { classifyOps, stepForClick } from './sm-view.ts';

function backwardTrace(p: AttentionProblem, blockM: number, blockN: number, algo = fa2Backward): TraceEvent[] {
  const x = { ...randomInputs(p, { seed: 3 }), dO: randomGradOutput(p, 4) };
  const gen = algo.run(p, x, { blockM, blockN, trace: true });
  const out: TraceEvent[] = [];
  for (let r = gen.next(); !r.done; r = gen.next()) out.push(r.value);
  return out;
}

const p: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 256, nk: 256, d: 64, dv: 64, causal: true, dtype: 'fp16' };
// Numeric blocks 64×64; the SM80 kernel's tiles at d = 64 are 128×128.
const events = backwardTrace(p, 64, 64);
const find = (pred: (e: TraceEvent) => boolean) => events.findIndex(pred);

describe('backward hardware view', () => {
  it("shows the SM of the step's column block, with keys and the row blocks it visits", () => {
    const step = find((e) => e.kind === 'ds' && e.h === 1 && e.tile.cols[0] === 128 && e.tile.rows[0] === 192);
    const v = smScheduleFor({ algorithm: 'fa2', gpu: 'a100', problem: p, features: {}, step, pass: 'backward' }, events).view;
    expect(v.pass).toBe('backward');
    expect(v.ctas).toEqual([{ b: 0, h: 1, qBlock: 1, split: 0, rows: [128, 256], kvBlocks: [1], keys: [128, 256] }]);
    expect(v.firstCta).toBe(3);
    expect(v.gridCtas).toBe(4);
  });

  it("each step's cursor is the end of the op of its kind and row block; the D and dQ conversion steps have none", () => {
    const step = find((e) => e.kind === 'dq' && e.h === 0 && e.tile.cols[0] === 64 && e.tile.rows[0] === 128);
    const s = smScheduleFor({ algorithm: 'fa2', gpu: 'a100', problem: p, features: {}, step, pass: 'backward' }, events);
    const { map } = s.view;
    const opOf = (i: number) => s.timeline[map.stepOp[i]];
    // Row 128 is in hardware row block 1; the dq step lands on the last add of dQ1 (warps finish their atomics at different times).
    expect(opOf(step).op).toMatch(/^atomicAdd dQ1$/);
    expect(map.stepCycle[step]).toBe(Math.max(...s.timeline.filter((e) => e.op === 'atomicAdd dQ1').map((e) => e.end)));
    for (const [kind, re] of [
      ['qk', /^mma\.sync S=Q1·K0ᵀ$/],
      ['recompute', /^exp2 → P$/],
      ['dp', /^mma\.sync dP=dO1·V0ᵀ$/],
      ['dv', /^mma\.sync dV\+=P1ᵀ·dO1$/],
      ['dk', /^mma\.sync dK\+=dS1ᵀ·Q1$/],
    ] as const) {
      const i = find((e) => e.kind === kind && e.h === 0 && e.tile.cols[0] === 64 && e.tile.rows[0] === 128);
      expect(opOf(i).op, kind).toMatch(re);
      expect(map.stepApprox[i]).toBe(0);
    }
    // Causal: the diagonal tile has a mask step; the kernel masks row block 1 of column block 0 too.
    const mask = find((e) => e.kind === 'mask' && e.h === 0 && e.tile.cols[0] === 64 && e.tile.rows[0] === 64);
    expect(opOf(mask).op).toBe('causal mask');
    // Steps are ordered on the SM as the kernel orders them: dP before dS before the dQ add of the same block.
    const at = (kind: string) =>
      map.stepCycle[find((e) => e.kind === kind && e.h === 0 && e.tile.cols[0] === 64 && e.tile.rows[0] === 128)];
    expect(at('dp')).toBeLessThan(at('ds'));
    expect(at('ds')).toBeLessThan(at('dq'));
    // Preprocessing and conversion run in other kernels; other heads' column blocks on other SMs.
    expect(Number.isNaN(map.stepCycle[find((e) => e.kind === 'dsum')])).toBe(true);
    expect(Number.isNaN(map.stepCycle[find((e) => e.kind === 'dqconvert')])).toBe(true);
    expect(Number.isNaN(map.stepCycle[find((e) => e.kind === 'qk' && e.h === 1)])).toBe(true);
    // Clicking the dV GEMM of row block 1 seeks to the first step that maps onto it.
    const dvOp = s.timeline.findIndex((e) => e.role === 'warp0' && e.op.startsWith('mma.sync dV+=P1ᵀ'));
    const back = stepForClick(map, dvOp, s.timeline[dvOp].end);
    expect(events[back].kind).toBe('dv');
    expect(Math.floor(events[back].tile.rows[0] / 128)).toBe(1);
  });

  it('FA3 ops are classified per consumer warpgroup and row block', () => {
    const s = smScheduleFor(
      { algorithm: 'fa3', gpu: 'h100', problem: { ...p, d: 128, dv: 128 }, features: {}, step: 0, pass: 'backward' },
      backwardTrace({ ...p, d: 128, dv: 128 }, 64, 64),
    );
    const phases = classifyOps(s.timeline);
    const at = (re: RegExp) => phases[s.timeline.findIndex((e) => re.test(e.op) && e.role === 'consumer1')];
    expect(at(/^gemm dQ1=dS1·K0$/)).toEqual({ cta: 0, kinds: ['dq'], kv: 1, sub: 1, tensors: [] });
    expect(at(/^exp2/)!.kinds).toEqual(['recompute']);
    const red = phases[s.timeline.findIndex((e) => e.op.startsWith('tma reduce-add dQ0'))];
    expect(red).toEqual({ cta: 0, kinds: ['dq'], kv: 0, sub: null, tensors: [] });
    expect(phases[s.timeline.findIndex((e) => e.op.startsWith('tma dO0+D0'))]!.tensors).toEqual(['dO', 'D']);
  });

  it("the numeric FA3 backward at the kernel's own tiles lands every main-kernel step exactly, on the consumer of its keys", () => {
    const q: AttentionProblem = { ...p, d: 128, dv: 128, causal: false, nq: 160, nk: 256 };
    const evs = backwardTrace(q, 80, 128, fa3Backward);
    const s = smScheduleFor(
      {
        algorithm: 'fa3',
        gpu: 'h100',
        problem: q,
        features: {},
        step: evs.findIndex((e) => e.kind === 'dk' && e.tile.cols[0] === 128),
        pass: 'backward',
      },
      evs,
    );
    expect(s.view.ctas.map((c) => c.keys)).toEqual([[128, 256]]);
    const mine = evs.map((e, i) => ({ e, i })).filter(({ e }) => e.h === 0 && e.tile.cols[0] === 128 && e.tile.cols[1] > e.tile.cols[0]);
    expect(mine.length).toBeGreaterThan(10);
    for (const { e, i } of mine) {
      expect(Number.isNaN(s.view.map.stepCycle[i]), `${e.kind} rows ${e.tile.rows}`).toBe(false);
      expect(s.view.map.stepApprox[i], `${e.kind} rows ${e.tile.rows}`).toBe(0);
      const op = s.timeline[s.view.map.stepOp[i]];
      if (['qk', 'dp', 'dv', 'dk'].includes(e.kind)) expect(op.op).toContain(`${Math.floor(e.tile.rows[0] / 80)}`);
      if (e.kind === 'dq') expect(op.op).toMatch(/^tma reduce-add dQ\d\.\d$/);
    }
  });

  it('the numeric FA4 backward lands every main-kernel step of a causal pair on its CTA, the dQ add on the reduce warps', () => {
    const q: AttentionProblem = { ...p, hq: 1, hk: 1, d: 128, dv: 128, nq: 384, nk: 384, dtype: 'bf16' };
    const evs = backwardTrace(q, 128, 128, fa4Backward);
    const step = evs.findIndex((e) => e.kind === 'dk' && e.tile.cols[0] === 128);
    const s = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem: q, features: {}, step, pass: 'backward' }, evs);
    // Column block 1 is the peer of a pair over keys [0, 256): it visits every row block from 0 (block_info over the pair's keys).
    expect(s.view.ctas).toEqual([{ b: 0, h: 0, qBlock: 1, split: 0, rows: [0, 384], kvBlocks: [1], keys: [128, 256] }]);
    const mine = evs.map((e, i) => ({ e, i })).filter(({ e }) => e.tile.cols[0] === 128 && e.tile.cols[1] > e.tile.cols[0]);
    expect(mine.length).toBeGreaterThan(10);
    for (const { e, i } of mine) {
      expect(Number.isNaN(s.view.map.stepCycle[i]), `${e.kind} rows ${e.tile.rows}`).toBe(false);
      const op = s.timeline[s.view.map.stepOp[i]];
      if (['qk', 'dp', 'dv', 'dk'].includes(e.kind)) expect(op.op).toContain(`${e.tile.rows[0] / 128}`);
      if (e.kind === 'dq') expect(op.role).toBe('reduce');
    }
  });
});
