import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { gpuById } from './gpus/index.ts';
import { memoryViolations } from './memory-check.ts';
import type { HwFeatures } from './model.ts';
import { describeFor, scheduleFor, simulateFor } from '../algorithms/schedule-registry.ts';
import { fa4LoadOrder } from '../algorithms/fa4/schedule.ts';
import { DEFAULT_FEATURES, hbmOut, ioBytes } from './model.ts';
import { smallShape } from './small-shape.ts';

const shape = smallShape;

const ALGO_GPU: [string, string][] = [
  ['fa3', 'h100'],
  ['fa4', 'b200'],
  ['fmha-v2', 'rtx4060'],
  ['cute-fa2', 'a100'],
  ['flash-decoding', 'a100'],
];

describe('FA4 storage and load order (flash_fwd_sm100.py@0251105a)', () => {
  const s = shape({ d: 192, dv: 128, dtype: 'bf16', nq: 256, nk: 512 });
  it('fills SMEM to the byte and TMEM to the column', () => {
    const sheet = describeFor('fa4', 'b200', s);
    expect(sheet.does_not_fit).toEqual([]);
    const tiles = sheet.smem.buffers.filter((b) => b.name === 'sQ' || b.name === 'sKV');
    const q = tiles.filter((b) => b.name === 'sQ').reduce((a, b) => a + b.bytes, 0);
    expect(q).toBe(96 * 1024);
    // Large + Small + Large = 48 + 32 + 48 KB.
    expect(tiles.filter((b) => b.name === 'sKV').map((b) => b.bytes)).toEqual([48 * 1024, 32 * 1024, 48 * 1024]);
    // 224 KB of tiles (sO over sQ at d 192); with sScale (2 KB), barriers and alignment the struct ends at the 227 KB limit.
    expect(sheet.smem.used_bytes).toBe(232448);
    expect(sheet.smem.used_bytes).toBeLessThanOrEqual(sheet.smem.capacity_bytes);
    expect(sheet.tmem!.used_columns).toBe(512);
    expect(sheet.tmem!.buffers.map((b) => [b.name, b.column, b.columns])).toEqual([
      ['S0', 0, 128],
      ['S1', 128, 128],
      ['P0', 64, 64],
      ['P1', 192, 64],
      ['O0', 256, 128],
      ['O1', 384, 128],
    ]);
    const regs = Object.fromEntries(sheet.roles.map((r) => [r.name, r.registers]));
    // d 192 on one CTA has no _TUNING_CONFIG row: 192 / 80, the rest 512 − 2·192 − 80 = 48.
    expect(regs).toEqual({ consumer0: 192, consumer1: 192, correction: 80, mma: 48, epilogue: 48, load: 48, empty: 48 });
    expect(sheet.registers.used).toBeLessThanOrEqual(65536);
    expect([sheet.q_stage, sheet.kv_stage]).toEqual([2, 3]);
  });

  it('loads K, Q0, Q1, V, then K/V from the right, with the middle stage shifting (Large-Small-Large)', () => {
    const order = fa4LoadOrder(gpuById('b200'), s, DEFAULT_FEATURES, [3, 2, 1, 0]);
    const base = 101376;
    const K = 48 * 1024;
    expect(order.map((x) => [x.tile, x.stage, x.offset - (x.kind === 'Q' ? 0 : base)])).toEqual([
      ['K3', 0, 0],
      ['Q0', 0, 3072],
      ['Q1', 1, 52224],
      ['V3', 1, K], // stage 1 moved right: V sits just after K3
      ['K2', 2, 80 * 1024],
      ['V2', 0, 0], // ring wrapped: stage 0 now holds a Small tile
      ['K1', 1, 32 * 1024], // stage 1 moved left: K sits just after V2
      ['V1', 2, 80 * 1024],
      ['K0', 0, 0],
      ['V0', 1, K],
    ]);
  });

  it('correction rescales O after every block without lazy rescaling, only where the numeric run says with it', () => {
    const rescales = (f: Partial<HwFeatures>) =>
      scheduleFor('fa4', 'b200', shape({ nq: 256, nk: 128 * 5, dtype: 'bf16' }), f).timeline.filter(
        (e) => e.role === 'correction' && e.op.startsWith('O0 *='),
      ).length;
    expect(rescales({ lazyRescale: false })).toBe(4);
    expect(rescales({})).toBe(0);
    expect(rescales({ rescaleAt: [2, 4] })).toBe(2);
    expect(() => scheduleFor('fa3', 'h100', shape(), { rescaleAt: [1] })).toThrow(/rescaleAt does not apply to fa3/);
  });

  it('never lets two live tiles overlap in SMEM or TMEM, with or without the optimizations', () => {
    for (const f of [{}, { lazyRescale: false, exp2Emulation: false }]) {
      const sch = scheduleFor('fa4', 'b200', s, f);
      expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
      const fills = sch.memory.filter((m) => m.space === 'tmem' && m.action === 'fill').map((m) => m.tile);
      expect(fills).toContain('P0.3');
      expect(fills).toContain('S1.0');
    }
  });
});

describe('resource sheets', () => {
  it('every algorithm fits its GPU at d = 128 and lists its roles', () => {
    for (const [algo, gpu] of ALGO_GPU) {
      const sheet = describeFor(algo, gpu, shape());
      expect(sheet.does_not_fit, algo).toEqual([]);
      expect(sheet.smem.used_bytes).toBeLessThanOrEqual(sheet.smem.capacity_bytes);
      expect(sheet.roles.length).toBeGreaterThan(0);
      expect(sheet.ctas_per_sm).toBeGreaterThan(0);
    }
  });

  it('reports what does not fit, with need and capacity', () => {
    // The dv = 512 MLA shapes are accepted upstream but run a kernel FlashScope does not model.
    const mla = describeFor('fa4', 'b200', shape({ d: 64, dv: 512, dtype: 'bf16' }));
    expect(mla.does_not_fit.join('\n')).toMatch(/MLA kernel \(flash_fwd_mla_sm100\.py.*does not model/);
    expect(describeFor('fa4', 'b200', shape({ d: 256, dv: 256, dtype: 'bf16' })).does_not_fit).toEqual([]);
    const fa3 = describeFor('fa3', 'h100', shape({ d: 256, dv: 256 }), { stages: 4 });
    expect(fa3.does_not_fit.join('\n')).toMatch(/smem: needs \d+ bytes per CTA, NVIDIA H100 SXM5 80GB has 232448/);
  });

  it('FA3 gives the consumers 240 registers and the producer 24 (setmaxnreg)', () => {
    const sheet = describeFor('fa3', 'h100', shape());
    expect(sheet.roles.map((r) => [r.name, r.registers])).toEqual([
      ['producer', 24],
      ['consumer0', 240],
      ['consumer1', 240],
    ]);
    expect(sheet.registers.used).toBe(128 * 24 + 256 * 240);
  });

  it('rejects fp32 inputs and a depth the uneven FA4 ring cannot have', () => {
    expect(describeFor('fa3', 'h100', shape({ dtype: 'fp32' })).does_not_fit).toContain(
      'dtype: FA3 takes fp16 or bf16 inputs (its MMAs have no fp32 path)',
    );
    expect(describeFor('fa4', 'b200', shape({ d: 192, dv: 128, nq: 256 }), { stages: 4 }).does_not_fit[0]).toMatch(/exactly 3 stages/);
  });

  it('records the HBM writes: O rows, or partial O and LSE per split for flash-decoding', () => {
    const fa3 = scheduleFor('fa3', 'h100', shape({ nq: 256, nk: 256 }));
    const o = fa3.memory.filter((m) => m.space === 'hbm');
    expect(o.map((m) => [m.buffer, m.offset, m.bytes])).toEqual([
      ['O', 0, 64 * 128 * 2],
      ['O', 64 * 128 * 2, 64 * 128 * 2],
    ]);
    const dec = scheduleFor('flash-decoding', 'a100', shape({ nq: 1, nk: 4096 }), { splits: 4 });
    const part = dec.memory.filter((m) => m.space === 'hbm');
    expect(part.length).toBeGreaterThan(0);
    expect(part.every((m) => m.buffer === 'Opartial')).toBe(true);
    expect(dec.resources.splits).toBe(4);
  });

  it('varlen: O rows sit after the rows of the sequences before them, and a short sequence writes only its own rows', () => {
    // cu_seqlens_q = [0, 512, 612, 912]: sequence 2 starts at row 612 and holds 300 rows.
    const v = shape({ batch: 3, nq: 512, nk: 512, varlen: { seqlensQ: [512, 100, 300], seqlensK: [512, 100, 300] } });
    const row = 128 * 2;
    const work = { b: 2, h: 0, qBlock: 4, kvFrom: 0, kvTo: 1, reverse: true, split: 0 };
    expect(hbmOut(v, work, 256, 64, 'O4')).toMatchObject({ offset: (612 + 256) * row, bytes: 44 * row });
    expect(hbmOut(v, { ...work, b: 1 }, 64, 64, 'O1')).toMatchObject({ offset: (512 + 64) * row, bytes: 36 * row });
    // Q, K, V read once and O written once over 912 query and 912 key rows, not 3 × 512.
    expect(ioBytes(v)).toBe(912 * 128 * 2 * 4);
  });

  it('rejects an algorithm on a GPU it was not written for, and unknown switches', () => {
    expect(() => describeFor('fa4', 'h100', shape())).toThrow(/SM100/);
    expect(() => describeFor('fa3', 'h100', shape(), { splits: 2 })).toThrow(/--splits does not apply to fa3/);
  });
});

describe('schedules', () => {
  it('FA3 intra-warpgroup overlap issues GEMM0 of the next block before GEMM1 of the current one', () => {
    const on = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: 384 }));
    const ops = on.timeline.filter((e) => e.role === 'consumer0' && e.unit === 'tensor').map((e) => e.op);
    expect(ops.slice(0, 3)).toEqual(['gemm0 S=Q·K2ᵀ', 'gemm0 S=Q·K1ᵀ', 'gemm1 O+=P·V2']);
    const off = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: 384 }), { intraOverlap: false });
    const opsOff = off.timeline.filter((e) => e.role === 'consumer0' && e.unit === 'tensor').map((e) => e.op);
    expect(opsOff.slice(0, 3)).toEqual(['gemm0 S=Q·K2ᵀ', 'gemm1 O+=P·V2', 'gemm0 S=Q·K1ᵀ']);
  });

  it('FA3 ping-pong: a consumer never issues GEMMs while the other holds the turn', () => {
    const sch = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: 1024 }));
    const waits = sch.timeline.filter((e) => e.op.startsWith('wait pingpong'));
    expect(waits.length).toBeGreaterThan(0);
    const none = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: 1024 }), { pingpong: false });
    expect(none.timeline.some((e) => e.op.startsWith('wait pingpong'))).toBe(false);
  });

  it('timeline events are deterministic and well-formed', () => {
    for (const [algo, gpu] of ALGO_GPU) {
      const a = scheduleFor(algo, gpu, shape({ causal: true }));
      const b = scheduleFor(algo, gpu, shape({ causal: true }));
      expect(JSON.stringify(a.timeline)).toBe(JSON.stringify(b.timeline));
      const ids = new Set(a.timeline.map((e) => e.id));
      for (const e of a.timeline) {
        expect(e.end).toBeGreaterThanOrEqual(e.start);
        for (const w of e.waitedOn) expect(ids.has(w)).toBe(true);
      }
      expect(memoryViolations(a.memory, a.resources), algo).toEqual([]);
    }
  });

  it('two co-resident CTAs share the SM: separate buffers, shared sub-partition units', () => {
    const sch = scheduleFor('cute-fa2', 'a100', shape({ batch: 8, hq: 16, hk: 16, nq: 2048, nk: 512 }));
    expect(sch.resources.ctas_per_sm).toBe(2);
    expect(sch.roles.map((r) => r.name)).toContain('cta1/warp3');
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
    const units = new Set(sch.timeline.filter((e) => e.role === 'cta0/warp1' || e.role === 'cta1/warp1').map((e) => e.unit));
    expect(units).toContain('tensor.sp1');
    // cta1 starts out of phase with cta0.
    const first = (role: string) => sch.timeline.find((e) => e.role === role && e.unit.startsWith('tensor'))!.start;
    expect(first('cta1/warp0')).toBeGreaterThan(first('cta0/warp0'));
  });

  it('FA3 split KV draws the combine kernel after the split CTAs', () => {
    // 4 splits of 128 rows, d = dv = 128: flash_api.cpp l. 397-401 takes kBlockK 128 (dv > 64), the
    // launch template kBlockM 8 (l. 69), the combine kernel kStages 4 of fp32 O partials (l. 36).
    const sch = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: 4096, numSplits: 4 }));
    const combine = sch.timeline.filter((e) => e.role === 'combine' && e.unit !== 'sync');
    expect(combine.map((e) => e.op)).toEqual([
      'cp.async LSE partials ×4',
      'exp(LSE_s − max) ×4',
      'cp.async O partials ×4 (4-slot ring)',
      'O += scale_s · O_s ×4',
      'st.global O, LSE',
    ]);
    const lastStore = Math.max(...sch.timeline.filter((e) => e.op.startsWith('tma store O')).map((e) => e.end));
    for (const e of combine) expect(e.start).toBeGreaterThanOrEqual(lastStore);
    const fills = sch.memory.filter((m) => m.role === 'combine' && m.action === 'fill');
    expect(fills.find((m) => m.buffer === 'combine/sO')?.bytes).toBe(4 * 8 * 128 * 4);
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
    expect(sch.resources.notes.some((n) => n.includes('the combine kernel (16 CTAs'))).toBe(true);
    const one = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: 4096, numSplits: 1 }));
    expect(one.timeline.some((e) => e.role === 'combine')).toBe(false);
  });

  it("FA4 split KV draws flash_fwd_combine.py's kernel after the split CTAs, with its tile, SMEM and upstream lines", () => {
    // dv 128: k_block_size 128, tile_m 8, log_max_splits max(ceil(log2 4), 4) raised to 5 for tile_m 8
    // (flash_attn/cute/interface.py@0251105a l. 3643-3651); 4 stages of fp32 O partials (flash_fwd_combine.py l. 39).
    const sch = scheduleFor('fa4', 'b200', shape({ hq: 4, hk: 4, nq: 128, nk: 4096, numSplits: 4 }));
    const combine = sch.timeline.filter((e) => e.role === 'combine' && e.unit !== 'sync');
    expect(combine.map((e) => e.op)).toEqual([
      'cp.async LSE partials ×4',
      'exp(LSE_s − max) ×4',
      'cp.async O partials ×4 (4-slot ring)',
      'O += scale_s · O_s ×4',
      'st.global O, LSE',
    ]);
    const lastStore = Math.max(...sch.timeline.filter((e) => e.op.startsWith('tma store O')).map((e) => e.end));
    for (const e of combine) expect(e.start).toBeGreaterThanOrEqual(lastStore);
    const fills = sch.memory.filter((m) => m.role === 'combine' && m.action === 'fill');
    // sLSE 32 splits × 8 rows × 4 bytes, then sMaxValidSplit (8 × 4), each 128-byte aligned (l. 276-283): sO at 1152.
    expect(fills.find((m) => m.buffer === 'combine/sLSE')?.bytes).toBe(32 * 8 * 4);
    expect(fills.find((m) => m.buffer === 'combine/sO')).toMatchObject({ offset: 1152, bytes: 4 * 8 * 128 * 4 });
    expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
    // 128 rows × 4 heads in tiles of 8 rows: 64 M blocks × 1 K block × batch 1 (flash_fwd_combine.py l. 287-322).
    expect(sch.resources.notes.some((n) => n.includes('the combine kernel (64 CTAs of 256 threads, 8 × 128 tiles, 17536 bytes'))).toBe(
      true,
    );
    const why = sch.resources.upstream!.why;
    expect(
      why.some((w) =>
        w.startsWith('flash_attn/cute/interface.py@0251105a l. 3643-3651: k_block_size 128 (dv 128), tile_m 8, log_max_splits 5'),
      ),
    ).toBe(true);
    expect(why.some((w) => w.includes('grid 64 M blocks × 1 K blocks × batch 1 (64 CTAs)'))).toBe(true);
    const one = scheduleFor('fa4', 'b200', shape({ hq: 4, hk: 4, nq: 128, nk: 4096, numSplits: 1 }));
    expect(one.timeline.some((e) => e.role === 'combine')).toBe(false);
  });

  it('the combine grid counts every batch; a varlen FA4 grid covers total_q · Hq with a tile of slack per sequence', () => {
    const dense = describeFor('fa3', 'h100', shape({ batch: 3, nq: 128, nk: 4096, numSplits: 4 })).upstream!.why;
    // hopper/flash_fwd_combine_kernel.h@0251105a l. 228-232: (ceil(seqlen_q · h / kBlockM), ceil(dv / kBlockK), b).
    expect(dense.some((w) => w.includes('grid 16 M blocks × 1 K blocks × batch 3 (48 CTAs)'))).toBe(true);
    // Lengths 96 and 8, Hq 2, dv 64 → tile_m 16: (208 + 2 · 15) // 16 = 14 M blocks (tile_scheduler.py l. 1295-1300); 12 + 1 hold rows.
    const v = describeFor(
      'fa4',
      'b200',
      shape({
        batch: 2,
        hq: 2,
        hk: 2,
        nq: 96,
        nk: 4096,
        d: 64,
        dv: 64,
        numSplits: 4,
        varlen: { seqlensQ: [96, 8], seqlensK: [4096, 4096] },
      }),
    ).upstream!.why;
    expect(v.some((w) => w.includes('grid 14 M blocks (total_q · Hq 208) × 1 K blocks (14 CTAs, 13 with rows)'))).toBe(true);
  });

  it('FA3 in a thread-block cluster loads half of each K/V block and multicasts it; causal runs without a cluster', () => {
    // 512 rows in 128-row tiles: 4 M blocks, even, 16-bit d 128, no mask: ClusterM 2 (launch template l. 212-218).
    const pair = scheduleFor('fa3', 'h100', shape());
    const k = pair.timeline.filter((e) => e.role === 'producer' && e.op.startsWith('tma K'));
    expect(k.length).toBeGreaterThan(0);
    for (const e of k) expect(e.op).toMatch(/\(½, multicast ×2\)$/);
    // The block still lands whole in this CTA's shared memory.
    expect(pair.memory.find((m) => m.buffer === 'sK' && m.action === 'fill')?.bytes).toBe(pair.resources.tiles.block_n * 128 * 2);
    const causal = scheduleFor('fa3', 'h100', shape({ causal: true }));
    expect(causal.timeline.some((e) => e.op.includes('multicast'))).toBe(false);
  });

  it('a long FA3 CTA yields more than 50 000 events (timed in npm run bench:hw)', () => {
    const blockN = describeFor('fa3', 'h100', shape({ nq: 128, nk: 128 })).tiles.block_n;
    // One split: upstream's heuristic would split a single M block this long across the SMs.
    const sch = scheduleFor('fa3', 'h100', shape({ nq: 128, nk: blockN * 2000, numSplits: 1 }));
    expect(sch.timeline.length + sch.memory.length).toBeGreaterThan(50_000);
    expect(sch.timeline.filter((e) => e.op.startsWith('tma K')).length).toBe(2000);
  });
});

const algoArb = fc.constantFrom(...ALGO_GPU);
describe('simulate on any size (property)', () => {
  it('gives a finite time, utilizations within [0, 1], and never beats the HBM floor', () => {
    fc.assert(
      fc.property(
        algoArb,
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 20000 }),
        fc.constantFrom(64, 128),
        fc.boolean(),
        ([algo, gpu], b, hq, nq, nk, d, causal) => {
          const s = shape({ batch: b, hq, hk: hq, nq, nk, d, dv: d, causal, dtype: algo === 'fa4' ? 'bf16' : 'fp16' });
          const r = simulateFor(algo, gpu, s);
          expect(Number.isFinite(r.time_us) && r.time_us > 0).toBe(true);
          for (const [u, v] of Object.entries(r.utilization)) expect(v, u).toBeLessThanOrEqual(1 + 1e-9);
          const g = gpuById(gpu);
          const io = 2 * b * (hq * nq * 2 * d + hq * nk * 2 * d);
          expect(r.time_us).toBeGreaterThanOrEqual((io / g.hbmBytesPerSec) * 1e6 * (1 - 1e-9));
          expect(r.sms_busy).toBeLessThanOrEqual(g.smCount);
          return true;
        },
      ),
      { numRuns: 25, seed: 7 },
    );
  });
});

describe('barrier phases never deadlock (property)', () => {
  it('random sizes, causal masks, features and depths schedule to the end with consistent memory', () => {
    fc.assert(
      fc.property(
        algoArb,
        fc.integer({ min: 1, max: 700 }),
        fc.integer({ min: 1, max: 900 }),
        fc.constantFrom(64, 128),
        fc.boolean(),
        fc.record({ pingpong: fc.boolean(), intraOverlap: fc.boolean(), lazyRescale: fc.boolean(), exp2Emulation: fc.boolean() }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 8 }),
        fc.boolean(),
        ([algo, gpu], nq, nk, d, causal, flags, depth, splits, uneven) => {
          const f: Partial<HwFeatures> = {};
          if (algo === 'fa3') Object.assign(f, { pingpong: flags.pingpong, intraOverlap: flags.intraOverlap, stages: depth });
          if (algo === 'fa4')
            Object.assign(f, { lazyRescale: flags.lazyRescale, exp2Emulation: flags.exp2Emulation, stages: Math.max(2, depth) });
          if (algo === 'fmha-v2') f.stages = depth <= 2 ? depth : 2;
          if (algo === 'flash-decoding') f.splits = splits;
          const s = shape({ nq, nk, d, dv: d, causal, hq: 2, hk: 1, dtype: algo === 'fa4' ? 'bf16' : 'fp16' });
          if (algo === 'fa4' && uneven) Object.assign(s, { d: 192, dv: 128 });
          const sheet = describeFor(algo, gpu, s, f);
          if (sheet.does_not_fit.length > 0) return true;
          const sch = scheduleFor(algo, gpu, s, f);
          expect(memoryViolations(sch.memory, sch.resources)).toEqual([]);
          // Every role ran to its last op: nothing is left blocked (simulateKernel throws otherwise).
          expect(sch.cycles).toBeGreaterThanOrEqual(0);
          return true;
        },
      ),
      { numRuns: 80, seed: 4242 },
    );
  });
});
