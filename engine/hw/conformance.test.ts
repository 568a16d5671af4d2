// docs/conformance.md is what `npm run conformance` prints, and the configurations that the
// issue's examples and the heuristics' edge cases take, read by hand off flash-attention at
// 0251105a (hopper/flash_api.cpp, tile_size.h, heuristics.h, flash_fwd_launch_template.h;
// flash_attn/cute/interface.py, flash_fwd_sm100.py).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { conformanceCases, conformanceMarkdown, conformanceShape } from './conformance.ts';
import type { ProblemShape } from './model.ts';
import { gpuById } from './gpus/index.ts';
import { DEFAULT_FEATURES } from './model.ts';
import { describeFor, hwAlgorithmById, scheduleFor, scheduleOf, simulateFor } from '../algorithms/schedule-registry.ts';

const shape = conformanceShape;
const fa3 = (o: Partial<ProblemShape>) => describeFor('fa3', 'h100', shape(o));
const fa4 = (o: Partial<ProblemShape>) => describeFor('fa4', 'b200', shape(o));

describe('docs/conformance.md', () => {
  it('holds at least 80 shapes and is byte for byte what npm run conformance writes', () => {
    expect(conformanceCases().length).toBeGreaterThanOrEqual(80);
    const file = readFileSync(new URL('../../docs/conformance.md', import.meta.url), 'utf8');
    expect(file).toBe(conformanceMarkdown(scheduleOf));
  });
});

describe('FA3 takes the configuration mha_fwd picks', () => {
  it('d 64 with dv 384 runs the compiled ⟨64, 512⟩ kernel with 64×64 tiles and fits', () => {
    const s = fa3({ d: 64, dv: 384 });
    expect(s.upstream?.config).toMatchObject({ instance: '64x512', block_m: 64, block_n: 64, mma_pv: 'SS', intra_wg_overlap: false });
    expect(s.tiles).toEqual({ block_m: 64, block_n: 64 });
    expect(s.does_not_fit).toEqual([]);
  });
  it('d 64 with dv 128 runs the ⟨64, 256⟩ kernel (128×96)', () => {
    expect(fa3({ d: 64, dv: 128 }).tiles).toEqual({ block_m: 128, block_n: 96 });
  });
  it('seqlen_q = 1 drops causal (128×176), except d 128 with a page table, which keeps causal (128×128)', () => {
    expect(fa3({ nq: 1, nk: 8192, causal: true, hq: 32, hk: 32, batch: 8 }).upstream?.config).toMatchObject({ mask: 'none', block_n: 176 });
    expect(fa3({ nq: 1, nk: 8192, causal: true, pageSize: 256 }).upstream?.config).toMatchObject({ mask: 'causal', block_n: 128 });
  });
  it('decoding with GQA 32/8 on 8 sequences: 8·8 = 64 M blocks < 0.8·132, so 2 splits, packed, single-tile grid', () => {
    expect(fa3({ nq: 1, nk: 8192, hq: 32, hk: 8, batch: 8 }).upstream?.config).toMatchObject({
      num_splits: 2,
      pack_gqa: true,
      tiles: 128,
      grid: 128,
      scheduler: 'single-tile',
    });
  });
  it('paged KV goes by TMA only when the page is a multiple of kBlockN and seqlen_q·h/h_k > kBlockM', () => {
    expect(fa3({ pageSize: 256, causal: true }).upstream?.config).toMatchObject({ paged_kv_non_tma: false, registers: '24/240' });
    expect(fa3({ pageSize: 64, causal: true }).upstream?.config).toMatchObject({ paged_kv_non_tma: true, registers: '40/232' });
  });
  it('a window reaching past seqlen_k is no window; one that does not is local', () => {
    expect(fa3({ window: { left: 8192, right: 0 } }).upstream?.config).toMatchObject({ mask: 'causal' });
    expect(fa3({ window: { left: 256, right: 0 } }).upstream?.config).toMatchObject({ mask: 'local(256,0)', block_n: 128 });
  });
  it('clusters of 2 for 16-bit d ≥ 128 without a mask when the M blocks are even, none when causal', () => {
    expect(fa3({}).upstream?.config.cluster).toBe(2);
    expect(fa3({ causal: true }).upstream?.config.cluster).toBe(1);
  });
  it('refuses what mha_fwd refuses, with its message', () => {
    expect(fa3({ dtype: 'fp8e4m3', d: 64, dv: 384 }).does_not_fit[0]).toBe(
      'upstream refuses: HeaddimV > 256 requires fp16 and bf16 data type',
    );
    expect(fa3({ d: 128, dv: 64 }).does_not_fit[0]).toMatch(/^upstream refuses: If V headdim is different from Q\/K dim/);
    expect(fa3({ numSplits: 300 }).does_not_fit[0]).toBe('upstream refuses: num_splits > 256 not supported');
  });
  it('every decision carries an upstream file:line', () => {
    for (const w of fa3({ hq: 32, hk: 8, nq: 1, nk: 8192 }).upstream?.why ?? []) expect(w).toMatch(/@0251105a l\. \d/);
  });
});

describe('FA4 takes the configuration _flash_attn_fwd picks', () => {
  it('d 192 / dv 128 split in 2 over 64 blocks of 128 drops to tile_n 64, and the schedule loads 64-row K/V blocks', () => {
    // interface.py l. 373-381: d ≠ dv, num_splits > 1, num_n_blocks 8192 / 128 = 64 ≥ 64 → tile_n 64;
    // flash_fwd_sm100.py l. 344-349: S0, S1 at columns 0 and n_block_size, O after them at 2 · n_block_size.
    const s = shape({ d: 192, dv: 128, hq: 1, hk: 1, nq: 128, nk: 8192, numSplits: 2 });
    const sheet = fa4(s);
    expect(sheet.upstream?.config.tile_n).toBe(64);
    expect(sheet.tiles).toEqual({ block_m: 128, block_n: 64 });
    expect(sheet.tmem?.buffers.map((b) => [b.name, b.column])).toEqual([
      ['S0', 0],
      ['S1', 64],
      ['P0', 32],
      ['P1', 96],
      ['O0', 128],
    ]);
    const sch = scheduleFor('fa4', 'b200', s);
    // One split of 8192 keys: 64 blocks of 64 rows, the last first.
    const k = sch.timeline.filter((e) => e.role === 'load' && /^tma K\d+$/.test(e.op));
    expect(k.length).toBe(64);
    expect(k[0].op).toBe('tma K63');
    expect(sch.memory.find((m) => m.buffer === 'sKV' && m.tile === 'K63' && m.action === 'fill')?.bytes).toBe(64 * 192 * 2);
  });
  it('Hq 16 / Hk 2, seqlen_q 64: packed to 512 rows, q_stage 2 in 2-CTA mode', () => {
    const s = fa4({ hq: 16, hk: 2, nq: 64 });
    expect(s.upstream?.config).toMatchObject({ pack_gqa: true, packed_rows: 512, q_stage: 2, cta_group: 2 });
    expect(s.q_stage).toBe(2);
    expect(s.cta_group).toBe(2);
  });
  it('without packing the same problem runs one Q tile on one CTA', () => {
    expect(fa4({ hq: 16, hk: 2, nq: 64, packGqa: false }).upstream?.config).toMatchObject({ q_stage: 1, cta_group: 1 });
  });
  it('tile_m % qhead_per_kvhead ≠ 0 (Hq 6 / Hk 2) keeps 1-CTA mode and loads Q and stores O without TMA', () => {
    expect(fa4({ hq: 6, hk: 2, nq: 1024 }).upstream?.config).toMatchObject({ cta_group: 1, tma_q: false, tma_o: false });
  });
  it('a page size other than tile_n loads K/V by cp.async, with the paged register split', () => {
    expect(fa4({ pageSize: 64 }).upstream?.config).toMatchObject({ paged_kv_non_tma: true, cta_group: 1, registers: '184/64/80' });
    expect(fa4({ pageSize: 128 }).upstream?.config).toMatchObject({ paged_kv_non_tma: false, cta_group: 2 });
  });
  it('num_splits 0 asks the heuristic: 148 SMs // 8 M blocks = 18 splits', () => {
    expect(fa4({ hq: 8, hk: 8, nq: 128, nk: 65536, numSplits: 0 }).upstream?.config.num_splits).toBe(18);
  });
  it('the d = 256 kernel turns packing off and refuses softcap', () => {
    expect(fa4({ d: 256, dv: 256, hq: 16, hk: 2, nq: 64 }).upstream?.config).toMatchObject({ pack_gqa: false, dedicated_hd256: true });
    expect(fa4({ d: 256, dv: 256, softcap: 30 }).does_not_fit[0]).toBe(
      'upstream refuses: SM100 forward with head_dim=256 does not support softcap',
    );
  });
});

describe('FA4 backward takes the configuration _flash_attn_bwd picks (flash_attn/cute/interface.py, flash_bwd_sm100.py)', () => {
  const bwd = (o: Partial<ProblemShape>, deterministic = false) => describeFor('fa4', 'b200', shape(o), { deterministic }, 'backward');
  it('d 128: a 2-CTA pair (head_dim ≥ 128, l. 1948-1952), one Q stage, dQ in 8-column reduce-adds through 4 slots (l. 237-253)', () => {
    expect(bwd({}).upstream?.config).toMatchObject({
      tile_m: 128,
      tile_n: 128,
      cta_group: 2,
      q_stage: 1,
      dq_reduce: '8x4',
      registers: '136/136/104/104',
    });
  });
  it('d 64 causal: one CTA, two Q stages, registers 136/144/88 (l. 209-213); deterministic goes back to 152/136/88 and runs shortest first', () => {
    expect(bwd({ d: 64, dv: 64, causal: true }).upstream?.config).toMatchObject({ cta_group: 1, q_stage: 2, registers: '136/144/88/88' });
    expect(bwd({ d: 64, dv: 64, causal: true }, true).upstream?.config).toMatchObject({
      registers: '152/136/88/88',
      scheduler: 'SingleTileLPTBwdScheduler',
      spt: true,
    });
  });
  it('GQA 32/8 keeps pack_gqa off and adds dK/dV in fp32 (l. 2088-2092, 2161); d 256 runs the dedicated kernel', () => {
    expect(bwd({ hq: 32, hk: 8, packGqa: true }).upstream?.config).toMatchObject({ pack_gqa: false, dkv_postprocess: true });
    expect(bwd({ d: 256, dv: 256 }).upstream?.config).toMatchObject({ dedicated_hd256: true, dq_tile: '128x128', dkdv_tile: '128x64' });
    expect(bwd({ d: 256, dv: 256, softcap: 30 }).does_not_fit[0]).toBe(
      'upstream refuses: SM100 backward with head_dim=256 does not support softcap',
    );
  });
  it('d 256: dQ kernel over Q tiles of every head, dK/dV kernel over 64-key blocks of every KV head (dqkernel.py l. 304-307, dkdvkernel.py l. 3168-3176); no local, no deterministic (l. 60, 70-72)', () => {
    expect(bwd({ d: 256, dv: 256, hq: 32, hk: 8, nq: 1000, nk: 1000, causal: true }).upstream?.config).toMatchObject({
      dq_grid: '8x32x1',
      dkdv_grid: '16x8x1',
      dkdv_tmem: 'dK@0 dV@128 S@256 dP@320',
      dq_tmem: 'S@0 dP@128 dQ@256',
      dkv_postprocess: false,
    });
    expect(bwd({ d: 256, dv: 256, window: { left: 256, right: 0 } }).does_not_fit[0]).toBe(
      'upstream refuses: SM100 backward with head_dim=256 does not support local attention',
    );
    expect(bwd({ d: 256, dv: 256 }, true).does_not_fit[0]).toBe(
      'upstream refuses: SM100 backward with head_dim=256 does not support deterministic mode',
    );
  });
});

describe('the grid loads only the K/V blocks the kernel visits (block_info get_n_block_min_max)', () => {
  it('a (256, 0) window on FA3 d 128: the CTA of rows [1280, 1408) loads blocks 8-10 of 128 keys, and the timeline only those', () => {
    const s = shape({ window: { left: 256, right: 0 }, hq: 1, hk: 1 });
    const grid = hwAlgorithmById('fa3').grid(gpuById('h100'), s, DEFAULT_FEATURES);
    const cta = grid.find((w) => w.qBlock === 10)!;
    expect([cta.kvFrom, cta.kvTo]).toEqual([8, 11]);
    expect(Math.max(...grid.map((w) => w.kvTo - w.kvFrom))).toBe(3);
  });
  it('the timeline of one 128-row FA3 CTA over 4096 keys with a (256, 0) window loads K29-K31 only', () => {
    const s = shape({ window: { left: 256, right: 0 }, hq: 1, hk: 1, nq: 128, nk: 4096 });
    const loads = scheduleFor('fa3', 'h100', s).timeline.filter((e) => e.op.startsWith('tma K'));
    expect(loads.map((e) => e.op).sort()).toEqual(['tma K29', 'tma K30', 'tma K31']);
  });
  it('packed GQA: FA4 Hq 16 / Hk 2, seqlen_q 64, causal, nk 256 runs 2 CTAs of 256 packed rows per KV head, each loading blocks [0, 2)', () => {
    // Causal keeps 1-CTA mode; q_stage 2 as 512 packed rows > 128. Packed rows [256, 512) are query rows [32, 64): keys up to 63 + 192.
    const s = shape({ hq: 16, hk: 2, nq: 64, nk: 256, causal: true });
    const grid = hwAlgorithmById('fa4').grid(gpuById('b200'), s, DEFAULT_FEATURES);
    expect(grid.map((w) => [w.h, w.qBlock, w.kvFrom, w.kvTo])).toEqual([
      [0, 0, 0, 2],
      [0, 1, 0, 2],
      [1, 0, 0, 2],
      [1, 1, 0, 2],
    ]);
  });
});

describe('split KV: partials and the combine kernel', () => {
  it('FA3 decoding in 2 splits writes fp32 partials and adds the combine after the kernel; one split writes O and adds none', () => {
    const s = shape({ nq: 1, nk: 8192, hq: 32, hk: 8, batch: 8 });
    const split = simulateFor('fa3', 'h100', s);
    const single = simulateFor('fa3', 'h100', { ...s, numSplits: 1 });
    // Combine: 2 µs launch gap plus 2 splits × 256 rows × 129 fp32 read and 256 × 128 bf16 written, over H100's HBM.
    expect(split.extra_kernel_us).toBeGreaterThan(2);
    expect(single.extra_kernel_us).toBe(0);
    const writes = scheduleFor('fa3', 'h100', s).memory.filter((m) => m.space === 'hbm' && m.action === 'fill');
    expect(new Set(writes.map((m) => m.buffer))).toEqual(new Set(['Opartial']));
    expect(writes[0].bytes % ((128 + 1) * 4)).toBe(0);
  });
});
