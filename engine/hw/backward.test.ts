// The backward schedules: grids against a brute-force count of the visible tiles, the
// FA3 kernel's structure (roles, rings, the dQ path), the FA2 kernel's, and what the
// registry refuses.
import { describe, expect, it } from 'vitest';
import { backwardFlops, backwardGrid, tileCrossesDiagonal, visibleRowRange } from './backward.ts';
import { memoryViolations } from './memory-check.ts';
import type { ProblemShape } from './model.ts';
import { smallShape } from './small-shape.ts';
import { describeFor, scheduleFor, simulateFor } from '../algorithms/schedule-registry.ts';
import { predictionFor } from '../compare/session-compare.ts';
import type { LoadRequest } from '../request.ts';

const shape = (p: Partial<ProblemShape> = {}): ProblemShape => smallShape({ hq: 2, hk: 2, ...p });

/** Tiles (m, n) with at least one visible element, counted element by element. */
function visibleTiles(s: ProblemShape, M: number, N: number): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < s.nq; i++)
    for (let c = 0; c < s.nk; c++) if (!s.causal || c <= i + s.nk - s.nq) out.add(`${Math.floor(i / M)},${Math.floor(c / N)}`);
  return out;
}

describe('backward grid', () => {
  it('FLOPs: 2.5 × 4·B·H·Nq·Nk·d, halved when causal', () => {
    expect(backwardFlops(shape())).toBe(2.5 * 4 * 2 * 512 * 512 * 128);
    expect(backwardFlops(shape({ causal: true }))).toBe((2.5 * 4 * 2 * 512 * 512 * 128) / 2);
  });

  for (const s of [
    shape(),
    shape({ causal: true }),
    shape({ causal: true, nq: 200, nk: 520 }),
    shape({ causal: true, nq: 520, nk: 200 }),
    shape({ causal: true, nq: 64, nk: 640 }),
  ]) {
    it(`visits exactly the tiles with a visible element (Nq ${s.nq}, Nk ${s.nk}, causal ${s.causal})`, () => {
      const [M, N] = [80, 128];
      const want = visibleTiles(s, M, N);
      const got = new Set<string>();
      for (const w of backwardGrid(s, M, N)) if (w.h === 0) for (let m = w.kvFrom; m < w.kvTo; m++) got.add(`${m},${w.qBlock}`);
      expect([...got].sort()).toEqual([...want].sort());
      // A tile is masked inside exactly when some element in it is hidden.
      for (const t of got) {
        const [m, n] = t.split(',').map(Number);
        let hidden = false;
        for (let i = m * M; i < Math.min(s.nq, (m + 1) * M); i++)
          for (let c = n * N; c < Math.min(s.nk, (n + 1) * N); c++) if (s.causal && c > i + s.nk - s.nq) hidden = true;
        if (hidden) expect(tileCrossesDiagonal(s, m, n, M, N)).toBe(true);
      }
    });
  }

  it('a column block whose keys no row sees has no row blocks', () => {
    expect(visibleRowRange(shape({ causal: true, nq: 520, nk: 200 }), 0, 64, 128)).toEqual([5, 9]);
    expect(visibleRowRange(shape({ causal: true, nq: 128, nk: 128 }), 1, 64, 128)).toEqual([0, 0]);
  });
});

describe('FA3 backward schedule (SM90)', () => {
  const s = shape({ nq: 400, nk: 256 });
  const sched = scheduleFor('fa3', 'h100', s, {}, 'backward');
  const ops = (role: string, prefix: string) => sched.timeline.filter((e) => e.role === role && e.op.startsWith(prefix));

  it('tiles and registers of the launch template: 80×128 at d = 128, 64×128 causal, 128×128 at d = 64, three consumers at d = 192', () => {
    expect(sched.resources.tiles).toEqual({ block_m: 80, block_n: 128 });
    expect(describeFor('fa3', 'h100', shape({ causal: true }), {}, 'backward').tiles).toEqual({ block_m: 64, block_n: 128 });
    expect(describeFor('fa3', 'h100', shape({ d: 64, dv: 64 }), {}, 'backward').tiles).toEqual({ block_m: 128, block_n: 128 });
    const d192 = describeFor('fa3', 'h100', shape({ d: 192, dv: 192 }), {}, 'backward');
    expect(d192.roles.filter((r) => r.name.startsWith('consumer')).map((r) => r.registers)).toEqual([160, 160, 160]);
    expect(sched.resources.roles.map((r) => [r.name, r.registers])).toEqual([
      ['producer', 24],
      ['dq_writer', 24],
      ['consumer0', 240],
      ['consumer1', 240],
    ]);
    // The SMEM ring: two stages of Q (and LSE), two of dO (and D), two of dS; sdQaccum one slice per consumer.
    const stages = (name: string) => sched.resources.smem.buffers.filter((b) => b.name === name).length;
    expect([stages('sQ'), stages('sLSE'), stages('sdO'), stages('sD'), stages('sdS'), stages('sdQaccum'), stages('sP')]).toEqual([
      2, 2, 2, 2, 2, 2, 0,
    ]);
    expect(sched.resources.smem.buffers.find((b) => b.name === 'sdQaccum')!.bytes).toBe((80 * 128 * 4) / 2);
    expect(sched.resources.does_not_fit).toEqual([]);
  });

  it('K and V load once; every row block brings Q+LSE and dO+D; each consumer runs five GEMMs per row block', () => {
    const rowBlocks = Math.ceil(400 / 80);
    expect(ops('producer', 'tma K').length).toBe(1);
    expect(ops('producer', 'tma Q').length).toBe(rowBlocks);
    expect(ops('producer', 'tma dO').length).toBe(rowBlocks);
    for (const c of ['consumer0', 'consumer1']) {
      expect(ops(c, 'gemm').length).toBe(5 * rowBlocks);
      expect(ops(c, 'exp2').length).toBe(rowBlocks);
    }
  });

  it("dQ path: each consumer's partial is reduce-added after its dQ GEMM ended, into distinct dQaccum slices", () => {
    const adds = ops('dq_writer', 'tma reduce-add');
    expect(adds.length).toBe(2 * 5);
    for (const a of adds) {
      const [, m, w] = /dQ(\d+)\.(\d)/.exec(a.op)!;
      const gemm = ops(`consumer${w}`, `gemm dQ${m}=`)[0];
      expect(a.start).toBeGreaterThanOrEqual(gemm.end);
    }
    const hbm = sched.memory.filter((e) => e.space === 'hbm' && e.buffer === 'dQaccum');
    expect(new Set(hbm.map((e) => e.offset)).size).toBe(10);
  });

  it('the producer refills a Q stage only after both consumers released it, and no two live tiles overlap', () => {
    const fills = sched.memory.filter((e) => e.buffer === 'sQ' && e.action === 'fill');
    const releases = sched.memory.filter((e) => e.buffer === 'sQ' && e.action === 'release');
    for (let i = 2; i < fills.length; i++) {
      const freed = releases.find((r) => r.tile === fills[i - 2].tile)!;
      expect(fills[i].t).toBeGreaterThanOrEqual(freed.t);
    }
    expect(memoryViolations(sched.memory, sched.resources)).toEqual([]);
  });

  it('GQA reduce-adds dK/dV in fp32; d = 256 adds dQ from registers; no two live tiles overlap there either', () => {
    const g = scheduleFor('fa3', 'h100', shape({ hq: 4, hk: 1, nq: 256, nk: 256 }), {}, 'backward');
    expect(g.timeline.some((e) => e.op.startsWith('tma reduce-add dK'))).toBe(true);
    expect(g.memory.some((e) => e.buffer === 'dKaccum')).toBe(true);
    const big = scheduleFor('fa3', 'h100', shape({ d: 256, dv: 256, nq: 256, nk: 256 }), {}, 'backward');
    expect(big.roles.map((r) => r.name)).not.toContain('dq_writer');
    expect(big.timeline.some((e) => e.op.startsWith('atomicAdd dQ'))).toBe(true);
    for (const x of [g, big, scheduleFor('fa3', 'h100', shape({ causal: true, d: 64, dv: 64 }), {}, 'backward')])
      expect(memoryViolations(x.memory, x.resources)).toEqual([]);
  });
});

describe('FA2 backward schedule (SM80)', () => {
  it('8 warps, 64×128 at d = 128 and 128×128 at d = 64 on A100, one Q buffer at d = 256; an atomicAdd per row block per warp', () => {
    const s = shape({ nq: 256, nk: 256 });
    const sched = scheduleFor('fa2', 'a100', s, {}, 'backward');
    expect(sched.resources.tiles).toEqual({ block_m: 64, block_n: 128 });
    expect(sched.roles.length).toBe(8);
    expect(describeFor('fa2', 'a100', shape({ d: 64, dv: 64 }), {}, 'backward').tiles).toEqual({ block_m: 128, block_n: 128 });
    expect(describeFor('fa2', 'a100', shape({ d: 256, dv: 256 }), {}, 'backward').q_stage).toBe(1);
    expect(describeFor('fa2', 'h100', shape({ d: 256, dv: 256 }), {}, 'backward').q_stage).toBe(2);
    expect(sched.timeline.filter((e) => e.role === 'warp3' && e.op.startsWith('atomicAdd dQ')).length).toBe(4);
    expect(memoryViolations(sched.memory, sched.resources)).toEqual([]);
    const d256 = scheduleFor('fa2', 'a100', shape({ d: 256, dv: 256, nq: 256, nk: 256, causal: true }), {}, 'backward');
    expect(memoryViolations(d256.memory, d256.resources)).toEqual([]);
  });

  it('cute-fa2 names the same backward; the forward-only schedules and wrong GPUs are refused by name', () => {
    expect(describeFor('cute-fa2', 'a100', shape(), {}, 'backward').algo).toBe('fa2');
    expect(() => simulateFor('flash-decoding', 'h100', shape(), {}, 'backward')).toThrow(
      /no backward hardware schedule for 'flash-decoding'; backward schedules: fa2, fa3, fa4 \(cute-fa2 runs the fa2 one\)/,
    );
    expect(() => simulateFor('fa4', 'h100', shape(), {}, 'backward')).toThrow(/fa4 is written for SM100; NVIDIA H100/);
    // FA4's backward (flash_bwd_sm100.py) on its B200, with and without the deterministic dQ order.
    const fa4 = simulateFor('fa4', 'b200', shape({ dtype: 'bf16' }), {}, 'backward');
    expect(fa4.flops).toBe(backwardFlops(shape()));
    // The preprocess and the dQ conversion run around it (interface.py l. 2230-2238, 2591-2615).
    expect(fa4.extra_kernel_us).toBeGreaterThan(0);
    expect(simulateFor('fa4', 'b200', shape({ dtype: 'bf16' }), { deterministic: true }, 'backward').time_us).toBeGreaterThan(fa4.time_us);
    expect(() => simulateFor('fa3', 'a100', shape(), {}, 'backward')).toThrow(/fa3 is written for SM90; NVIDIA A100 SXM4 80GB is SM80/);
    expect(() => simulateFor('fa2', 'a100', shape(), { deterministic: true }, 'backward')).toThrow(/--deterministic does not apply to fa2/);
    expect(() => simulateFor('fa3', 'h100', shape(), { deterministic: true })).toThrow(/--deterministic does not apply to fa3/);
    expect(() => simulateFor('fa2', 'a100', shape({ dtype: 'fp32' }), {}, 'backward')).toThrow(
      /dtype: the FA2 backward takes fp16 or bf16/,
    );
  });
});

describe('compare mode predicts the backward kernels', () => {
  const problem = shape({ nq: 2048, nk: 2048 });
  const req = (algorithm: string, features?: Record<string, boolean>): LoadRequest => ({
    algorithm,
    problem: { ...problem },
    seed: 1,
    distribution: 'normal',
    blocks: { blockM: 64, blockN: 64 },
    pass: 'backward',
    features,
  });
  // A prediction is either a timing or a reason: read its fields loosely so a wrong kind fails the expectation, not the compiler.
  const predict = (r: LoadRequest, gpu: string) =>
    predictionFor(r, problem, gpu) as Partial<Record<'tflops' | 'timeUs' | 'reason', unknown>>;
  it("FA4, FA3 and FA2 get the backward schedule's time; FA1 has no backward kernel model", () => {
    expect(predict(req('fa3'), 'h100').tflops).toBe(simulateFor('fa3', 'h100', problem, {}, 'backward').tflops);
    expect(predict(req('fa3', { deterministic: true }), 'h100').timeUs).toBe(
      simulateFor('fa3', 'h100', problem, { deterministic: true }, 'backward').time_us,
    );
    expect(predict(req('fa2'), 'a100').tflops).toBe(simulateFor('fa2', 'a100', problem, {}, 'backward').tflops);
    expect(predict(req('fa4'), 'b200').tflops).toBe(simulateFor('fa4', 'b200', problem, {}, 'backward').tflops);
    expect(predict(req('fa1'), 'a100').reason).toMatch(/no hardware model of the fa1 backward/);
  });
});
