// FA4's CTA pairs as the hardware model builds them: the dedicated d = dv = 256 kernel
// (sm100_hd256_2cta_fmha_forward.py@0251105a) and 2-CTA mode of flash_fwd_sm100.py@0251105a.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../../debugger/session.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import type { TimelineEvent } from '../../hw/events.ts';
import { memoryViolations } from '../../hw/memory-check.ts';
import type { ProblemShape } from '../../hw/model.ts';
import { gpuById } from '../../hw/gpus/index.ts';
import { describeFor, resolveFeatures, scheduleFor, simulateFor, smScheduleFor } from '../schedule-registry.ts';
import { simulateProblem } from '../../hw/simulate.ts';
import { fa4Hw } from './schedule.ts';
import { smallShape } from '../../hw/small-shape.ts';

const shape = (o: Partial<ProblemShape> = {}): ProblemShape => smallShape({ d: 256, dv: 256, dtype: 'bf16', ...o });

describe('FA4 d = dv = 256: the dedicated 2-CTA kernel', () => {
  it('takes the kernel’s tiles, stages, SMEM and TMEM layout and registers', () => {
    for (const causal of [false, true]) {
      const sheet = describeFor('fa4', 'b200', shape({ causal }));
      expect(sheet.does_not_fit).toEqual([]);
      expect(sheet.cta_group).toBe(2);
      expect(sheet.tiles).toEqual({ block_m: 128, block_n: 128 });
      expect([sheet.q_stage, sheet.kv_stage, sheet.ctas_per_sm]).toEqual([2, 4, 1]);
      const bytes = (name: string) => sheet.smem.buffers.filter((b) => b.name === name).map((b) => b.bytes);
      // Q: its two 128-column halves of 128 rows; K and V: 64 of a chunk's 128 rows × 128 columns per stage.
      expect(bytes('sQ')).toEqual([32768, 32768]);
      expect(bytes('sK')).toEqual([16384, 16384, 16384, 16384]);
      expect(bytes('sV')).toEqual([16384, 16384, 16384, 16384]);
      expect(sheet.smem.used_bytes).toBe(197504);
      expect(sheet.tmem?.buffers.map((b) => [b.name, b.column, b.columns])).toEqual([
        ['S0', 0, 128],
        ['S1', 128, 128],
        ['P0', 0, 64],
        ['P1', 128, 64],
        ['O', 256, 256],
      ]);
      expect(sheet.tmem?.used_columns).toBe(512);
      expect(sheet.roles.map((r) => [r.name, r.warps.length, r.registers])).toEqual([
        ['consumer0', 4, 256],
        ['correction', 4, 160],
        ['mma', 1, 32],
        ['load', 1, 32],
        ['empty', 2, 32],
      ]);
      expect(sheet.registers.used).toBe(128 * 256 + 128 * 160 + 128 * 32);
    }
  });

  const kvOrder = [3, 2, 1, 0];
  const sch = scheduleFor('fa4', 'b200', shape({ nq: 256, nk: 512 }));
  const of = (role: string) => sch.timeline.filter((e) => e.role === role && e.unit !== 'sync');

  it('lays out both CTAs of the pair, leader above peer, job by job', () => {
    expect(sch.roles.map((r) => r.name)).toEqual([
      'leader/load',
      'peer/load',
      'leader/mma',
      'peer/mma',
      'leader/softmax0',
      'peer/softmax0',
      'leader/correction',
      'peer/correction',
      'leader/empty',
      'peer/empty',
    ]);
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
  });

  it('has the leader’s MMA warp issue every cta_group::2 MMA, QK_i before PV_i−1, and the peer’s issue none', () => {
    const tensor = sch.timeline.filter((e) => e.unit.startsWith('tensor'));
    expect(new Set(tensor.map((e) => e.role))).toEqual(new Set(['leader/mma']));
    expect(of('peer/mma')).toEqual([]);
    expect(tensor.every((e) => e.op.includes('cta_group::2'))).toBe(true);
    // Two MMAs per block for S (the halves of d) and for P·V (the halves of dv).
    const seq = tensor.map((e) => `${e.tile}:${/K(\d+)ᵀ|V(\d+)/.exec(e.op)?.slice(1).find(Boolean)}`);
    const [a, b, c, d] = kvOrder;
    expect(seq).toEqual([`S0:${a}`, `S1:${b}`, `O:${a}`, `S0:${c}`, `O:${b}`, `S1:${d}`, `O:${c}`, `O:${d}`].flatMap((x) => [x, x]));
  });

  it('loads each CTA’s own Q tile and its half of every K/V chunk, K_i before V_i−1', () => {
    const tiles = (role: string) => of(role).map((e) => e.op);
    const [a, b, c, d] = kvOrder;
    const kv = [`K${a}`, `K${b}`, `V${a}`, `K${c}`, `V${b}`, `K${d}`, `V${c}`, `V${d}`].flatMap((t) => [
      `tma ${t} ${t[0] === 'K' ? 'd' : 'dv'}-half 0`,
      `tma ${t} ${t[0] === 'K' ? 'd' : 'dv'}-half 1`,
    ]);
    expect(tiles('leader/load')).toEqual(['tma Q0 d-half 0', 'tma Q0 d-half 1', ...kv]);
    expect(tiles('peer/load')).toEqual(['tma Q1 d-half 0', 'tma Q1 d-half 1', ...kv]);
    expect(of('peer/load').every((e) => e.unit === 'tma.peer')).toBe(true);
    expect(of('leader/load').every((e) => e.unit === 'tma')).toBe(true);
  });

  it('runs each CTA’s softmax and correction on its own SM, coupled to the leader’s MMA both ways', () => {
    expect(of('peer/softmax0').every((e) => e.unit.endsWith('.peer'))).toBe(true);
    expect(of('leader/softmax0').some((e) => e.unit.endsWith('.peer'))).toBe(false);
    const byId = new Map(sch.timeline.map((e) => [e.id, e]));
    const waitedOnRoles = (e: TimelineEvent | undefined) => new Set((e?.waitedOn ?? []).map((i) => byId.get(i)?.role));
    // The peer reads S that the leader's MMA wrote into the peer's TMEM...
    expect(waitedOnRoles(of('peer/softmax0').find((e) => e.op.startsWith('tcgen05.ld S0'))).has('leader/mma')).toBe(true);
    // ...and the leader's first P·V waits for P from both CTAs (p_mma_full counts both CTAs' softmax).
    const pv = of('leader/mma').find((e) => e.tile === 'O')!;
    expect([...waitedOnRoles(pv)].some((r) => r?.endsWith('/softmax0'))).toBe(true);
    for (const side of ['leader', 'peer']) {
      const p0 = of(`${side}/softmax0`).find((e) => e.op === 'tcgen05.st P0')!;
      expect(pv.start, side).toBeGreaterThanOrEqual(p0.end);
    }
    // Both CTAs hold S and O in their own TMEM.
    const tmemFills = new Set(sch.memory.filter((m) => m.space === 'tmem' && m.action === 'fill').map((m) => m.buffer));
    for (const b of ['leader/tmem.S0', 'peer/tmem.S0', 'leader/tmem.O', 'peer/tmem.O', 'peer/tmem.P1']) expect(tmemFills).toContain(b);
  });

  it('rescales O after every block but the first, lazy rescaling or not (no threshold in this kernel)', () => {
    for (const f of [{}, { lazyRescale: false }]) {
      const s = scheduleFor('fa4', 'b200', shape({ nq: 256, nk: 512 }), f);
      for (const side of ['leader', 'peer'])
        expect(s.timeline.filter((e) => e.role === `${side}/correction` && e.op === 'O *= scale').length).toBe(kvOrder.length - 1);
    }
  });

  it('starts its pairs in grid order (not persistent), where the main kernel hands out the longest first', () => {
    const first = fa4Hw.longestFirst as (s: ProblemShape) => boolean;
    expect(first(shape({ causal: true }))).toBe(false);
    expect(first(shape({ d: 128, dv: 128, causal: true }))).toBe(true);
    const causal = shape({ batch: 2, hq: 16, nq: 4096, nk: 4096, causal: true });
    const f = resolveFeatures(fa4Hw, {});
    // Grid order leaves long pairs of the bottom rows for the last wave: slower than longest-first would be.
    const gridOrder = simulateProblem(fa4Hw, gpuById('b200'), causal, f).time_us;
    expect(gridOrder).toBeGreaterThan(simulateProblem({ ...fa4Hw, longestFirst: true }, gpuById('b200'), causal, f).time_us);
  });

  it('counts a pair as two CTAs on two SMs in the whole-GPU simulation', () => {
    const r = simulateFor('fa4', 'b200', shape({ batch: 2, hq: 16, nq: 4096, nk: 4096 }));
    expect(r.ctas).toBe(2 * 16 * (4096 / 128));
    expect(r.sms_busy).toBe(148);
    for (const [u, v] of Object.entries(r.utilization)) expect(v, u).toBeLessThanOrEqual(1);
    // Tensor-bound: both SMs' tensor cores are busy through the pair's MMAs.
    expect(r.utilization.tensor).toBeGreaterThan(0.8);
  });

  it('never deadlocks and keeps memory consistent on any size, causal or not (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 700 }), fc.integer({ min: 1, max: 900 }), fc.boolean(), fc.boolean(), (nq, nk, causal, emu) => {
        const s = shape({ nq, nk, causal });
        const r = scheduleFor('fa4', 'b200', s, { exp2Emulation: emu });
        expect(memoryViolations(r.memory, r.resources)).toEqual([]);
        expect(r.cycles).toBeGreaterThan(0);
        return true;
      }),
      { numRuns: 30, seed: 256 },
    );
  });

  it('places the debugger’s steps on the CTA that owns their rows: rows 128-255 of a pair on the peer', async () => {
    const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 384, d: 256, dv: 256, causal: false, dtype: 'bf16' };
    const session = new DebuggerSession();
    await session.load({ algorithm: 'fa4', problem, seed: 3, distribution: 'normal', blocks: {} });
    const events = session.events();
    const s = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem, features: {}, step: 0 }, events);
    let checked = 0;
    events.forEach((e, k) => {
      if (!['rowmax', 'exp', 'rowsum', 'normalize'].includes(e.kind) || s.view.map.stepApprox[k]) return;
      const op = s.timeline[s.view.map.stepOp[k]];
      expect(op.role.startsWith(e.tile.rows[0] >= 128 ? 'peer/' : 'leader/'), `${e.kind} rows ${e.tile.rows}`).toBe(true);
      checked++;
    });
    expect(checked).toBeGreaterThan(8);
  });
});

describe('FA4 2-CTA mode of the main kernel (use_2cta_instrs)', () => {
  const s = shape({ d: 128, dv: 128, nq: 1024, nk: 512 });
  const sch = scheduleFor('fa4', 'b200', s);
  const of = (role: string) => sch.timeline.filter((e) => e.role === role && e.unit !== 'sync');

  it('gives the leader the even Q tiles of the pair and the peer the odd ones, each loading half of every K/V tile', () => {
    expect(sch.resources.cta_group).toBe(2);
    const qs = (role: string) =>
      of(role)
        .filter((e) => e.op.startsWith('tma Q'))
        .map((e) => e.tile);
    expect(qs('leader/load')).toEqual(['Q0', 'Q2']);
    expect(qs('peer/load')).toEqual(['Q1', 'Q3']);
    const k = (role: string) => sch.memory.find((m) => m.role === role && m.action === 'fill' && m.tile.startsWith('K'));
    expect(k('leader/load')?.bytes).toBe(64 * 128 * 2);
    expect(k('peer/load')?.buffer).toBe('peer/sKV');
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
  });

  it('places the debugger’s steps on the CTA and warpgroup of their Q tile: even tiles on the leader, odd on the peer', async () => {
    const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 512, nk: 384, d: 128, dv: 128, causal: false, dtype: 'bf16' };
    const session = new DebuggerSession();
    await session.load({ algorithm: 'fa4', problem, seed: 5, distribution: 'normal', blocks: {} });
    const events = session.events();
    const v = smScheduleFor({ algorithm: 'fa4', gpu: 'b200', problem, features: {}, step: 0 }, events);
    let checked = 0;
    events.forEach((e, k) => {
      if (!['rowmax', 'exp', 'rowsum'].includes(e.kind) || v.view.map.stepApprox[k]) return;
      const tile = Math.floor(e.tile.rows[0] / 128);
      const op = v.timeline[v.view.map.stepOp[k]];
      expect(op.role, `${e.kind} rows ${e.tile.rows}`).toBe(`${tile % 2 ? 'peer' : 'leader'}/softmax${Math.floor(tile / 2)}`);
      checked++;
    });
    expect(checked).toBeGreaterThan(16);
  });

  it('has only the leader issue MMAs, for both CTAs, while each CTA runs its two softmax warpgroups on its own SM', () => {
    const tensor = sch.timeline.filter((e) => e.unit.startsWith('tensor'));
    expect(new Set(tensor.map((e) => e.role))).toEqual(new Set(['leader/mma']));
    expect(tensor.every((e) => e.op.endsWith('(cta_group::2)'))).toBe(true);
    for (const r of ['peer/softmax0', 'peer/softmax1', 'peer/correction'])
      expect(
        of(r).every((e) => e.unit.endsWith('.peer')),
        r,
      ).toBe(true);
    expect(sch.roles.map((r) => r.name).slice(0, 8)).toEqual([
      'leader/load',
      'peer/load',
      'leader/mma',
      'peer/mma',
      'leader/softmax0',
      'peer/softmax0',
      'leader/softmax1',
      'peer/softmax1',
    ]);
  });
});
