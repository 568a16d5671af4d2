// The FA4 backward schedule: its grid against a brute-force count of the visible tiles, the
// timeline loading exactly the row blocks of its CTA's range, the warp roles and TMEM/SMEM
// layout flash_bwd_sm100.py@0251105a gives, and a memory map without overlaps.

import { describe, expect, it } from 'vitest';
import { gpuById } from '../../hw/gpus/index.ts';
import { memoryViolations } from '../../hw/memory-check.ts';
import { DEFAULT_FEATURES, type ProblemShape } from '../../hw/model.ts';
import { describeFor, hwAlgorithmFor, scheduleFor, simulateFor } from '../schedule-registry.ts';
import { fa4BwdDispatchOf } from './backward-layout.ts';
import { FA4_DQ_SEMAPHORE_HANDOFF_US, fa4DkvSemaphoreUs } from './backward-schedule.ts';
import { smallShape } from '../../hw/small-shape.ts';

const shape = (o: Partial<ProblemShape> = {}): ProblemShape => smallShape({ dtype: 'bf16', ...o });

/** Row blocks of 128 rows that see some key of [k0, k1), element by element (bottom-right aligned mask and window). */
function visibleRowBlocks(s: ProblemShape, k0: number, k1: number): number[] {
  const off = s.nk - s.nq;
  const left = s.window && s.window.left >= 0 ? s.window.left : Infinity;
  const right = s.causal ? 0 : s.window && s.window.right >= 0 ? s.window.right : Infinity;
  const out = new Set<number>();
  for (let i = 0; i < s.nq; i++)
    for (let j = k0; j < Math.min(k1, s.nk); j++) if (j <= i + off + right && j >= i + off - left) out.add(Math.floor(i / 128));
  return [...out].sort((a, b) => a - b);
}

const b200 = gpuById('b200');
const grid = (s: ProblemShape, deterministic = false) =>
  hwAlgorithmFor('fa4', 'backward').grid(b200, s, { ...DEFAULT_FEATURES, deterministic });

describe('FA4 backward grid (block_info.py get_m_block_min_max over the pair’s keys)', () => {
  const cases: Partial<ProblemShape>[] = [
    { causal: true },
    { causal: true, nq: 300, nk: 1000 },
    { causal: true, nq: 1000, nk: 300 },
    { causal: true, d: 64, dv: 64, nq: 700, nk: 900 },
    { window: { left: 200, right: 0 }, nq: 1024, nk: 1024 },
    { window: { left: 100, right: 50 }, d: 64, dv: 64, nq: 1024, nk: 1024 },
  ];
  for (const o of cases) {
    it(`every visible tile is visited, and causal ranges are exactly the visible row blocks: ${JSON.stringify(o)}`, () => {
      const s = shape(o);
      const pairKeys = (o.d ?? 128) >= 128 ? 256 : 128;
      for (const w of grid(s)) {
        const c = Math.floor((w.qBlock * 128) / pairKeys);
        const seen = visibleRowBlocks(s, c * pairKeys, (c + 1) * pairKeys);
        const range = Array.from({ length: w.kvTo - w.kvFrom }, (_, i) => w.kvFrom + i);
        for (const m of seen) expect(range).toContain(m);
        if (!s.window) expect(range).toEqual(seen);
      }
    });
  }

  it('a pair rounds the column blocks up to an even count; the two CTAs of a pair visit the same row blocks', () => {
    const g = grid(shape({ nk: 600, causal: true, nq: 600 }));
    expect(g.map((w) => w.qBlock)).toEqual([0, 1, 2, 3, 4, 5]);
    for (let n = 0; n < 6; n += 2) expect([g[n].kvFrom, g[n].kvTo]).toEqual([g[n + 1].kvFrom, g[n + 1].kvTo]);
    // Keys [256, 512) are first seen by row 256: row block 2 of 5.
    expect([g[2].kvFrom, g[2].kvTo]).toEqual([2, 5]);
  });

  it('one CTA per (batch, query head, column block); a varlen batch sizes each sequence’s blocks by its own lengths', () => {
    expect(grid(shape({ batch: 3, hq: 2, nk: 1024 })).length).toBe(3 * 2 * 8);
    const v = grid(shape({ batch: 2, nq: 1024, nk: 1024, causal: true, varlen: { seqlensQ: [1024, 200], seqlensK: [1024, 200] } }));
    expect(v.filter((w) => w.b === 0).length).toBe(8);
    // 200 keys: two blocks, one pair; its rows (one block of 128 and the rest) see them all.
    expect(v.filter((w) => w.b === 1).map((w) => [w.qBlock, w.kvFrom, w.kvTo])).toEqual([
      [0, 0, 2],
      [1, 0, 2],
    ]);
  });

  it('deterministic and causal: the LPT scheduler hands out the last pair first (spt)', () => {
    expect(grid(shape({ causal: true, nk: 1024, nq: 1024 }), true).map((w) => w.qBlock)).toEqual([6, 7, 4, 5, 2, 3, 0, 1]);
    expect(grid(shape({ nk: 1024, nq: 1024 }), true).map((w) => w.qBlock)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('FA4 backward timeline', () => {
  const loadsOf = (s: ProblemShape, deterministic = false) => {
    const sch = scheduleFor('fa4', 'b200', s, { deterministic }, 'backward');
    const q = sch.timeline
      .filter((e) => e.role === 'load' && /^tma (K\d+\+)?Q\d+$/.test(e.op))
      .map((e) => Number(/Q(\d+)$/.exec(e.op)![1]));
    const dO = sch.timeline.filter((e) => e.role === 'load' && /dO\d+/.test(e.op)).map((e) => Number(/dO(\d+)/.exec(e.op)![1]));
    return { sch, q, dO };
  };

  it('loads Q and dO of exactly the row blocks its CTA visits, never one the kernel skips', () => {
    for (const o of [
      { causal: true, nq: 1024, nk: 1024 },
      { window: { left: 200, right: 0 }, nq: 1024, nk: 1024 },
      { causal: true, d: 64, dv: 64, nq: 1024, nk: 1024 },
    ]) {
      const s = shape(o);
      const first = grid(s)[0];
      const want = Array.from({ length: first.kvTo - first.kvFrom }, (_, i) => first.kvFrom + i);
      const { sch, q, dO } = loadsOf(s);
      expect(q).toEqual(want);
      expect(dO).toEqual(want);
      expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
    }
  });

  it('warp roles as flash_bwd_sm100.py assigns them (l. 139-144), the relay warp only in a pair', () => {
    const pair = scheduleFor('fa4', 'b200', shape(), {}, 'backward');
    expect(pair.resources.roles.map((r) => [r.name, r.warps])).toEqual([
      ['reduce', [0, 1, 2, 3]],
      ['compute0', [4, 5, 6, 7]],
      ['compute1', [8, 9, 10, 11]],
      ['mma', [12]],
      ['load', [13]],
      ['relay', [14]],
      ['empty', [15]],
    ]);
    expect(pair.roles.map((r) => r.name)).toEqual(['load', 'mma', 'compute0', 'compute1', 'relay', 'reduce']);
    const one = scheduleFor('fa4', 'b200', shape({ d: 64, dv: 64 }), {}, 'backward');
    expect(one.roles.map((r) => r.name)).toEqual(['load', 'mma', 'compute0', 'compute1', 'reduce']);
    expect(one.timeline.some((e) => e.op.includes('cta_group::2'))).toBe(false);
    expect(pair.timeline.filter((e) => e.role === 'mma' && e.unit === 'tensor').every((e) => e.op.endsWith('(cta_group::2)'))).toBe(true);
  });

  it('SMEM as the kernel’s SharedStorage: 231424 bytes in a pair at d 128 (the l. 937 comment), sdQaccum slots of 8 fp32 columns', () => {
    const sheet = describeFor('fa4', 'b200', shape(), {}, 'backward');
    expect(sheet.smem.used_bytes).toBe(231424);
    expect(sheet.smem.buffers.filter((b) => b.name === 'sdQaccum').map((b) => b.bytes)).toEqual([4096, 4096, 4096, 4096]);
    expect(sheet.tmem?.buffers.map((b) => [b.name, b.column, b.columns])).toEqual([
      ['S', 0, 128],
      ['P', 0, 64],
      ['dV', 128, 128],
      ['dP', 256, 128],
      ['dS', 256, 64],
      ['dQ', 64, 64],
      ['dK', 384, 128],
    ]);
    expect(sheet.ctas_per_sm).toBe(1);
  });

  it('the reduce warps add each row block’s dQ in (d / cta_group) / dQ_reduce_ncol chunks: 8 in a pair at d 128, 4 deterministic, 2 on one CTA at d 64', () => {
    const adds = (s: ProblemShape, det = false) =>
      scheduleFor('fa4', 'b200', s, { deterministic: det }, 'backward').timeline.filter(
        (e) => e.role === 'reduce' && e.op.startsWith('tma reduce-add dQ0['),
      ).length;
    expect(adds(shape())).toBe(8);
    expect(adds(shape(), true)).toBe(4);
    expect(adds(shape({ d: 64, dv: 64 }))).toBe(2);
  });

  it('GQA stores dK and dV as fp32 reduce-adds; without GQA as 16-bit TMA stores', () => {
    const gqa = scheduleFor('fa4', 'b200', shape({ hq: 4, hk: 2 }), {}, 'backward');
    expect(gqa.memory.some((m) => m.space === 'hbm' && m.buffer === 'dKaccum')).toBe(true);
    const mha = scheduleFor('fa4', 'b200', shape(), {}, 'backward');
    expect(mha.timeline.some((e) => e.op.startsWith('tma store dK'))).toBe(true);
    expect(memoryViolations(gqa.memory, gqa.resources)).toEqual([]);
  });

  it('d 256: the sheet is the dedicated dK/dV kernel’s CTA (its SMEM fits B200), the dQ kernel in the notes; no timeline', () => {
    const sheet = describeFor('fa4', 'b200', shape({ d: 256, dv: 256, hq: 8, hk: 2 }), {}, 'backward');
    expect(sheet.upstream?.config).toMatchObject({ dedicated_hd256: true, dq_tile: '128x128', dkdv_tile: '128x64', cluster: '2x1' });
    // sm100_hd256_2cta_fmha_backward_dkdvkernel.py l. 633-710: six 32 KB operand tiles, sP and sdST of 16 KB, LSE and dPsum.
    const names = sheet.smem.buffers.filter((b) => b.bytes >= 512).map((b) => `${b.name} ${b.bytes}`);
    expect(names).toEqual([
      'sK 32768',
      'sV 32768',
      'sQ 32768',
      'sQT 32768',
      'sdO 32768',
      'sdOT 32768',
      'sP 16384',
      'sdST 16384',
      'sLSE 512',
      'sSum_OdO 512',
    ]);
    expect(sheet.smem.used_bytes).toBeLessThanOrEqual(sheet.smem.capacity_bytes);
    expect(sheet.tmem?.buffers.map((b) => `${b.name}@${b.column}`)).toEqual(['dK@0', 'dV@128', 'S@256', 'dP@320']);
    expect(sheet.roles.map((r) => `${r.name} ${r.warps.length}×${r.registers}`)).toEqual([
      'compute 8×128',
      'mma 1×128',
      'load 1×96',
      'empty 2×96',
    ]);
    expect(sheet.notes.join(' ')).toMatch(/no fp32 accumulators, no semaphores/);
    expect(sheet.does_not_fit).toEqual([
      'timeline: the d = 256 kernels (sm100_hd256_2cta_fmha_backward.py) have no FlashScope timeline; describe shows their configuration',
    ]);
    expect(() => scheduleFor('fa4', 'b200', shape({ d: 256, dv: 256 }), {}, 'backward')).toThrow(/no FlashScope timeline/);
  });

  it('deterministic GQA: the heads of a group that share a wave wait on the dK/dV semaphores one after another', () => {
    const dp = (s: ProblemShape) => fa4BwdDispatchOf(s, true);
    const gqa = shape({ hq: 32, hk: 8, nq: 2048, nk: 2048 });
    // 32 heads × 16 column blocks = 512 CTAs; in 2 waves each holds 16 heads, so every group of 4 runs together: 3 waits a wave.
    const adds = ((128 * (128 + 128) * 4) / (b200.hbmBytesPerSec / b200.smCount)) * 1e6;
    expect(fa4DkvSemaphoreUs(b200, gqa, dp(gqa), 2)).toBeCloseTo(2 * 3 * (adds + FA4_DQ_SEMAPHORE_HANDOFF_US), 6);
    // A long sequence: a wave holds less than one head, so no head waits for another.
    const long = shape({ hq: 32, hk: 8, nq: 65536, nk: 65536 });
    expect(fa4DkvSemaphoreUs(b200, long, dp(long), 56)).toBe(0);
    // Without GQA there is no dK/dV semaphore.
    expect(fa4DkvSemaphoreUs(b200, shape(), dp(shape()), 2)).toBe(0);
    const t = (s: ProblemShape, deterministic: boolean) => simulateFor('fa4', 'b200', s, { deterministic }, 'backward').time_us;
    // Same grid without GQA: the deterministic mode's extra time differs by the dK/dV waits alone.
    const mha = { ...gqa, hk: 32 };
    const extra = t(gqa, true) - t(gqa, false) - (t(mha, true) - t(mha, false));
    expect(extra).toBeGreaterThanOrEqual(fa4DkvSemaphoreUs(b200, gqa, dp(gqa), 1) - 1e-6);
  });
});
