import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../debugger/session.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { LoadRequest } from '../request.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { chromeTrace, scheduleJsonl } from './export.ts';
import { fa4LoadOrder } from '../algorithms/fa4/schedule.ts';
import { gpuById } from './gpus/index.ts';
import { scheduleFor, shapeOf, smScheduleFor } from '../algorithms/schedule-registry.ts';
import { liveAt, memoryIntervals, stepForClick } from './sm-view.ts';

async function loaded(algorithm: string, problem: AttentionProblem) {
  const s = new DebuggerSession();
  const req: LoadRequest = { algorithm, problem, seed: 3, distribution: 'normal', blocks: {} };
  await s.load(req);
  return s.events();
}

const fa4Problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 768, d: 192, dv: 128, causal: false, dtype: 'bf16' };

describe('step ↔ cycle map', () => {
  it('FA4 d=192/dv=128: each numeric load lands on the TMA copy of the same tile, at its completion', async () => {
    const events = await loaded('fa4', fa4Problem);
    const s = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem: fa4Problem, features: {}, step: 0 }, events);
    const loads = events.map((e, i) => [e, i] as const).filter(([e]) => e.kind === 'load');
    expect(loads.length).toBeGreaterThanOrEqual(8);
    const order = fa4LoadOrder(gpuById('b200'), shapeOf(fa4Problem), s.view.features, [5, 4, 3, 2, 1, 0]);
    for (let k = 0; k < 8; k++) {
      const [e, step] = loads[k];
      const op = s.timeline[s.view.map.stepOp[step]];
      // The numeric trace loads in the kernel's order: Q0, K5, Q1, V5, K4, V4, K3, V3.
      expect(op.op).toBe(`tma ${order[k].tile}`);
      expect(e.kind === 'load' && e.tensors[0]).toBe(order[k].kind);
      expect(s.view.map.stepCycle[step]).toBe(op.end);
      expect(s.view.map.stepApprox[step]).toBe(0);
      // At the cursor the tile is in SMEM at the offset the load order gives (L-S-L rotation).
      const live = liveAt(s.view.memory, s.view.map.stepCycle[step]).filter((m) => m.space === 'smem' && m.tile === order[k].tile);
      expect(live.map((m) => m.offset)).toEqual([order[k].offset]);
    }
  });

  it("every numeric step of the SM's CTA maps to an op of its own kind and K/V block (FA4, FA3, fmha_v2, CuTe, decoding)", async () => {
    const cases: [string, string, AttentionProblem][] = [
      ['fa4', 'b200', fa4Problem],
      ['fa3', 'h100', { batch: 1, hq: 1, hk: 1, nq: 128, nk: 512, d: 64, dv: 64, causal: false, dtype: 'fp16' }],
      ['fmha-v2', 'rtx4060', { batch: 1, hq: 1, hk: 1, nq: 128, nk: 512, d: 64, dv: 64, causal: false, dtype: 'fp16' }],
      ['cute-fa2', 'a100', { batch: 1, hq: 1, hk: 1, nq: 128, nk: 512, d: 64, dv: 64, causal: false, dtype: 'fp16' }],
      ['flash-decoding', 'a100', { batch: 1, hq: 1, hk: 1, nq: 4, nk: 1024, d: 64, dv: 64, causal: false, dtype: 'fp16' }],
      // A document mask: the CTA of the last 128 queries visits only the K/V blocks of their document.
      [
        'fa3',
        'h100',
        {
          batch: 1,
          hq: 1,
          hk: 1,
          nq: 128,
          nk: 512,
          d: 64,
          dv: 64,
          causal: false,
          dtype: 'fp16',
          mask: maskSpecFrom({ maskMod: 'document:200,150' }, { hq: 1, nq: 128, nk: 512 }),
        },
      ],
    ];
    for (const [algo, gpu, problem] of cases) {
      const events = await loaded(algo, problem);
      const s = smScheduleFor({ algorithm: algo, gpu, problem, features: {}, step: 0 }, events);
      const { map } = s.view;
      const blockN = s.view.geometry.blockN;
      let mapped = 0;
      for (let k = 0; k < events.length; k++) {
        const e = events[k];
        if (Number.isNaN(map.stepCycle[k]) || map.stepApprox[k]) continue;
        mapped++;
        const op = s.timeline[map.stepOp[k]];
        expect(s.view.opKinds[map.stepOp[k]], `${algo} step ${k} ${e.kind} → ${op.op}`).toContain(e.kind);
        const m = / K\/V block (\d+)/.exec(s.view.opKinds[map.stepOp[k]]);
        if (m && e.tile.cols[1] > e.tile.cols[0]) {
          const kv = Number(m[1]);
          expect(kv * blockN < e.tile.cols[1] && (kv + 1) * blockN > e.tile.cols[0], `${algo} step ${k}`).toBe(true);
        }
      }
      expect(mapped, algo).toBeGreaterThan(10);
      if (problem.mask) {
        // The SM's CTA loads exactly the K/V blocks the numeric run visits.
        const touched = new Set(events.filter((e) => e.kind === 'qk').map((e) => Math.floor(e.tile.cols[0] / blockN)));
        expect(touched.size).toBeLessThan(Math.ceil(problem.nk / blockN));
        expect(s.view.ctas[0].kvBlocks.toSorted((x, y) => x - y)).toEqual([...touched].sort((x, y) => x - y));
      }
    }
  });

  it('a click on an op seeks to the first step mapped onto it; a click on a wait to the last step before it', async () => {
    const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 512, d: 64, dv: 64, causal: false, dtype: 'fp16' };
    const events = await loaded('fa3', problem);
    const s = smScheduleFor({ algorithm: 'fa3', gpu: 'h100', problem, features: {}, step: 0 }, events);
    const { map } = s.view;
    const gemm = s.timeline.findIndex((e) => e.op.startsWith('gemm1'));
    const step = stepForClick(map, gemm, s.timeline[gemm].start);
    expect(events[step].kind).toBe('pv');
    expect(map.stepOp[step] === gemm || map.stepCycle[step] >= s.timeline[gemm].end).toBe(true);
    const wait = s.timeline.findIndex((e, i) => e.unit === 'sync' && i > 10);
    const at = s.timeline[wait].start;
    const back = stepForClick(map, wait, at);
    expect(map.stepCycle[back]).toBeLessThanOrEqual(at);
    for (let k = 0; k < events.length; k++) if (map.stepCycle[k] <= at) expect(map.stepCycle[k]).toBeLessThanOrEqual(map.stepCycle[back]);
  });

  it('a step of another CTA selects the SM that runs that CTA', async () => {
    const problem: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: 256, nk: 256, d: 64, dv: 64, causal: false, dtype: 'fp16' };
    const events = await loaded('fa3', problem);
    const last = events.length - 1;
    const s = smScheduleFor({ algorithm: 'fa3', gpu: 'h100', problem, features: {}, step: last }, events);
    expect(
      s.view.ctas.some((c) => c.h === events[last].h && events[last].tile.rows[0] >= c.rows[0] && events[last].tile.rows[0] < c.rows[1]),
    ).toBe(true);
    expect(Number.isNaN(s.view.map.stepCycle[last])).toBe(false);
    expect(Number.isNaN(s.view.map.stepCycle[0])).toBe(true);
  });

  it('FA3 ping-pong off changes the schedule', async () => {
    const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 1024, d: 128, dv: 128, causal: false, dtype: 'fp16' };
    const events = await loaded('fa3', problem);
    const on = smScheduleFor({ algorithm: 'fa3', gpu: 'h100', problem, features: {}, step: 0 }, events);
    const off = smScheduleFor({ algorithm: 'fa3', gpu: 'h100', problem, features: { pingpong: false }, step: 0 }, events);
    expect(on.timeline.some((e) => e.op.startsWith('wait pingpong'))).toBe(true);
    expect(off.timeline.some((e) => e.op.startsWith('wait pingpong'))).toBe(false);
    expect(off.view.cycles).not.toBe(on.view.cycles);
  });
});

describe('memory intervals', () => {
  it('pairs fills with releases of the same tile; register fills end at the next fill', () => {
    const iv = memoryIntervals(
      [
        { t: 0, space: 'smem', buffer: 'sK', stage: 0, offset: 0, bytes: 10, action: 'alloc', tile: '', role: 'kernel' },
        { t: 5, ready: 9, space: 'smem', buffer: 'sK', stage: 0, offset: 0, bytes: 10, action: 'fill', tile: 'K0', role: 'load' },
        { t: 7, space: 'regs', buffer: 'regs.S', stage: 0, offset: 0, bytes: 4, action: 'fill', tile: 'S0', role: 'c' },
        { t: 12, space: 'smem', buffer: 'sK', stage: 0, offset: 0, bytes: 10, action: 'release', tile: 'K0', role: 'c' },
        { t: 14, space: 'regs', buffer: 'regs.S', stage: 0, offset: 0, bytes: 4, action: 'fill', tile: 'S1', role: 'c' },
      ],
      100,
    );
    expect(iv.map((x) => [x.tile, x.start, x.ready, x.end])).toEqual([
      ['K0', 5, 9, 12],
      ['S0', 7, 7, 14],
      ['S1', 14, 14, 100],
    ]);
    expect(liveAt(iv, 12).map((x) => x.tile)).toEqual(['S0']);
  });
});

describe('export', () => {
  it("Chrome trace: parses, one track per role, every op on its role's track", async () => {
    const events = await loaded('fa4', fa4Problem);
    const s = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem: fa4Problem, features: {}, step: 0 }, events);
    const parsed = JSON.parse(JSON.stringify(chromeTrace(s))) as ReturnType<typeof chromeTrace>;
    const names = parsed.traceEvents.filter((e) => e.name === 'thread_name');
    expect(names.length).toBe(s.view.roles.length);
    expect(new Set(names.map((e) => e.tid)).size).toBe(s.view.roles.length);
    const x = parsed.traceEvents.filter((e) => e.ph === 'X');
    expect(x.length).toBe(s.timeline.length);
    const roleOfTid = new Map(names.map((e) => [e.tid, String((e.args as { name: string }).name).split(' ')[0]]));
    x.forEach((e, i) => expect(roleOfTid.get(e.tid)).toBe(s.timeline[i].role));
    const tma = x.find((e) => e.name.startsWith('tma K'))!;
    expect(tma.ts).toBeCloseTo(s.timeline[0].start / (s.view.clockGHz * 1e3), 6);
  });

  it('JSONL: header, every timeline and memory event, one hw.step line per mapped step', async () => {
    const events = await loaded('fa4', fa4Problem);
    const s = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem: fa4Problem, features: {}, step: 0 }, events);
    const lines = scheduleJsonl(s)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(lines[0].type).toBe('hw.header');
    expect(lines.filter((l) => l.type === 'hw.timeline').length).toBe(s.timeline.length);
    expect(lines.filter((l) => l.type === 'hw.memory').length).toBe(s.memory.length);
    expect(lines.filter((l) => l.type === 'hw.step').length).toBe(Array.from(s.view.map.stepCycle).filter((c) => !Number.isNaN(c)).length);
  });
});

describe('FA4 lazy rescaling from the trace', () => {
  it('the schedule rescales O at the iterations where the numeric run did (large logits), and nowhere on plain inputs', async () => {
    const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 1024, d: 64, dv: 64, causal: false, dtype: 'bf16' };
    const plain = new DebuggerSession();
    await plain.load({ algorithm: 'fa4', problem, seed: 3, distribution: 'normal', blocks: {} });
    const spiky = new DebuggerSession();
    await spiky.load({ algorithm: 'fa4', problem, seed: 3, distribution: 'large-logits', blocks: {} });
    const rescales = (s: ReturnType<typeof smScheduleFor>) => s.timeline.filter((e) => /O\d \*= exp2/.test(e.op)).length;
    const a = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem, features: {}, step: 0 }, plain.events());
    const b = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem, features: {}, step: 0 }, spiky.events());
    const numericIters = (ev: readonly import('../trace/events.ts').TraceEvent[]) =>
      new Set(ev.filter((e) => e.kind === 'rescale' && e.tile.kvBlock !== 7).map((e) => e.tile.kvBlock)).size;
    expect(a.view.features.rescaleAt).toEqual(Array.from({ length: 0 }));
    expect(rescales(a)).toBe(0);
    expect(b.view.features.rescaleAt!.length).toBeGreaterThan(0);
    expect(b.view.features.rescaleAt!.length).toBe(numericIters(spiky.events()));
    expect(rescales(b)).toBe(2 * b.view.features.rescaleAt!.length);
    const off = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem, features: { lazyRescale: false }, step: 0 }, plain.events());
    expect(rescales(off)).toBe(2 * 7);
  });
});

describe('op phases come from the schedules, not from their labels', () => {
  const causal = (d: number, dtype: AttentionProblem['dtype']) => ({
    batch: 1,
    hq: 1,
    hk: 1,
    nq: 512,
    nk: 512,
    d,
    dv: d,
    dtype,
    causal: true,
  });
  it('every op of every schedule but waits carries a phase (FP8 FA3’s V transpose, no step of its own, aside)', () => {
    const cases: [string, string, ReturnType<typeof causal>, 'forward' | 'backward'][] = [
      ['fa3', 'h100', causal(128, 'fp16'), 'forward'],
      ['fa4', 'b200', causal(128, 'bf16'), 'forward'],
      ['cute-fa2', 'a100', causal(64, 'fp16'), 'forward'],
      ['fmha-v2', 'rtx4060', causal(64, 'fp16'), 'forward'],
      ['flash-decoding', 'h100', { ...causal(128, 'fp16'), nq: 1, nk: 2048, causal: false }, 'forward'],
      ['fa3', 'h100', causal(128, 'fp16'), 'backward'],
      ['fa2', 'a100', causal(64, 'fp16'), 'backward'],
    ];
    for (const [algo, gpu, shape, pass] of cases) {
      const s = scheduleFor(algo, gpu, shape, {}, pass);
      const bare = s.timeline.filter((e) => e.unit !== 'sync' && !e.phase).map((e) => e.op);
      expect(bare, `${algo} ${pass}`).toEqual([]);
    }
  });
  it('FA4: a causal mask op is a mask phase, and a rescale in the last iteration is a rescale of that block', () => {
    const s = scheduleFor('fa4', 'b200', causal(128, 'bf16'), { lazyRescale: false });
    const mask = s.timeline.filter((e) => e.op === 'causal mask');
    expect(mask.length).toBeGreaterThan(0);
    for (const e of mask) expect(e.phase?.kinds).toEqual(['mask']);
    const scaled = s.timeline.filter((e) => e.role.endsWith('correction') && e.op.includes('*= exp2'));
    expect(scaled.length).toBeGreaterThan(0);
    for (const e of scaled) {
      expect(e.phase?.kinds).toEqual(['rescale']);
      expect(e.phase?.kv).not.toBeNull();
    }
  });
});

describe('step map of a GQA-packing kernel', () => {
  it('FA4 Hq 4 / Hk 1, seqlen_q 64: a step of Q head 3 lands on the packed CTA of KV head 0, on an op of its K/V block', async () => {
    // interface.py@0251105a l. 693-695: pack_gqa on (Hq > Hk); 256 packed rows > 128 → q_stage 2, one CTA.
    const problem: AttentionProblem = { batch: 1, hq: 4, hk: 1, nq: 64, nk: 256, d: 64, dv: 64, causal: false, dtype: 'bf16' };
    const events = await loaded('fa4', problem);
    const step = events.findIndex((e) => e.h === 3 && e.kind === 'qk');
    expect(step).toBeGreaterThanOrEqual(0);
    const s = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem, features: {}, step }, events);
    expect(s.view.resources.upstream?.config).toMatchObject({ pack_gqa: true, packed_rows: 256, q_stage: 2 });
    expect(s.view.ctas.map((c) => [c.h, c.rows[0], c.rows[1]])).toEqual([[0, 0, 256]]);
    expect(Number.isNaN(s.view.map.stepCycle[step])).toBe(false);
    const op = s.timeline[s.view.map.stepOp[step]];
    const e = events[step];
    expect(op.phase?.kv).toBe(Math.floor(e.tile.cols[0] / s.view.geometry.blockN));
  });
});
