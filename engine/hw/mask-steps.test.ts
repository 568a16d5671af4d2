// The masking steps the FA3 and FA4 forward schedules charge, against counts worked out by hand
// from flash-attention 0251105a: flash_attn/cute/flash_fwd_sm100.py l. 2303-2357 (the first block
// with mask_seqlen=True, then the causal/local blocks, the unmasked ones, the left-window ones),
// flash_attn/cute/block_info.py l. 27-68 and 117-152 (the bounds), flash_attn/cute/mask.py
// l. 659-672 (the seqlen-only mask runs its R2P selects on every column, whatever seqlen_k), and
// hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp l. 1150, 1209-1235 with hopper/block.h l. 14-59, 103-135.

import { describe, expect, it } from 'vitest';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { ProblemShape } from './model.ts';
import { maskedKvSteps } from './mask-steps.ts';
import { describeFor, scheduleFor } from '../algorithms/schedule-registry.ts';

const shape = (o: Partial<ProblemShape>): ProblemShape => ({
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 1,
  nk: 1024,
  d: 128,
  dv: 128,
  dtype: 'bf16',
  causal: false,
  ...o,
});

/** The masking ops of the drawn SM's first CTA: their K/V blocks by sub-unit, and their labels. */
function masks(algo: 'fa3' | 'fa4', s: ProblemShape) {
  const ops = scheduleFor(algo, algo === 'fa3' ? 'h100' : 'b200', s).timeline.filter((e) => e.op?.endsWith(' mask'));
  return { kv: ops.map((e) => e.phase?.kv).sort((a, b) => (b ?? 0) - (a ?? 0)), ops: new Set(ops.map((e) => e.op)) };
}

const none = { causal: false, local: false, left: null, right: null };

describe('maskedKvSteps walks the blocks as the mainloops do', () => {
  it('no mask: only the first block visited (n_block_max − 1), multiple of the tile or not', () => {
    expect([...maskedKvSteps({ nq: 128, nk: 1000 }, 0, 128, 128, 0, 8, none)]).toEqual([7]);
    expect([...maskedKvSteps({ nq: 128, nk: 1024 }, 0, 128, 128, 0, 8, none)]).toEqual([7]);
  });

  it('causal, 256-row m block, seqlen 256: both blocks (the first, then down to floor(0 / 128) = 0)', () => {
    expect([...maskedKvSteps({ nq: 256, nk: 256 }, 0, 256, 128, 0, 2, { ...none, causal: true })].sort()).toEqual([0, 1]);
  });

  it('local (512, 0), seqlen_q 256, seqlen_k 2048, 256-row m block 0: blocks [10, 16), masked 15, 14, 11, 10', () => {
    // n_block_max = ceil((256 + 1792) / 128) = 16, n_block_min = floor((1792 − 512) / 128) = 10;
    // causal/local edge floor(1792 / 128) = 14; unmasked down to ceil((256 + 1792 − 512) / 128) = 12.
    const local = { causal: false, local: true, left: 512, right: 0 };
    expect([...maskedKvSteps({ nq: 256, nk: 2048 }, 0, 256, 128, 10, 16, local)].sort((a, b) => a - b)).toEqual([10, 11, 14, 15]);
  });

  it('local with no left window (None): nothing masked past the right edge', () => {
    const local = { causal: false, local: true, left: null, right: 256 };
    // n_idx_right = 0 + 1792 + 256 = 2048 → edge block 16 ≥ n_block_max − 1: only the first block.
    expect([...maskedKvSteps({ nq: 256, nk: 2048 }, 0, 256, 128, 0, 16, local)]).toEqual([15]);
  });

  it('packed GQA divides the rows by the heads per KV head (m_idx_min // qhead_per_kvhead)', () => {
    // 4 heads per KV head, 256 packed rows = query rows 0-63; causal edge floor((0 + 1024 − 64) / 128) = 7.
    const steps = maskedKvSteps({ nq: 256, nk: 1024, packRatio: 4 }, 0, 256, 128, 0, 8, { ...none, causal: true });
    expect([...steps]).toEqual([7]);
  });
});

describe('FA4 charges the masking steps where flash_fwd_sm100.py@0251105a l. 2303-2357 runs mask_fn', () => {
  it('not causal, seqlen_k 1000: the first block visited (the last, 7) runs the seqlen mask', () => {
    const m = masks('fa4', shape({ nk: 1000 }));
    expect(m.kv).toEqual([7]);
    expect(m.ops).toEqual(new Set(['seqlen mask']));
  });

  it('not causal, seqlen_k a multiple of tile_n: the mask step still runs on the first block', () => {
    expect(masks('fa4', shape({})).kv).toEqual([7]);
  });

  it('causal at seqlen_q 1: one masked block, the last in K (visited first)', () => {
    expect(masks('fa4', shape({ causal: true })).kv).toEqual([7]);
    expect(masks('fa4', shape({ causal: true, hq: 8 })).kv).toEqual([7]);
  });

  it('causal, seqlen 256 (q_stage 2): both Q stages mask both blocks of the CTA, 4 steps', () => {
    const m = masks('fa4', shape({ causal: true, nq: 256, nk: 256 }));
    expect(m.kv).toEqual([1, 1, 0, 0]);
  });

  it('local (512, 0), seqlen_q 256, seqlen_k 2048: each Q stage masks blocks 15, 14, 11 and 10 (8 steps), not 13 and 12', () => {
    const m = masks('fa4', shape({ nq: 256, nk: 2048, window: { left: 512, right: 0 } }));
    expect(m.kv).toEqual([15, 15, 14, 14, 11, 11, 10, 10]);
    expect(m.ops).toEqual(new Set(['local mask']));
  });

  it('block-sparse (document mask 700, 300): the first block a CTA visits, 5 of [0, 16), runs the mask in both Q stages (block_sparse_utils.py l. 951-997)', () => {
    const n = 2048;
    const mask = maskSpecFrom({ maskMod: 'document:700,300' }, { hq: 1, nq: n, nk: n });
    const m = masks('fa4', shape({ nq: n, nk: n, mask }));
    expect(m.kv.filter((kv) => kv === 5)).toEqual([5, 5]);
  });

  it('d = dv = 256 (sm100_hd256_2cta_fmha_forward.py l. 1386-1398): the last K block of each CTA of the pair, not causal', () => {
    expect(masks('fa4', shape({ d: 256, dv: 256, nq: 256 })).kv).toEqual([7, 7]);
  });
});

// numSplits 1: one head of 128 rows would otherwise be split over the SMs, one block per split.
describe('FA3 charges them where mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a l. 1150, 1209-1235 runs mask.apply', () => {
  it('not causal, seqlen_k 1000 (128×176 tiles): both warpgroups mask the first block, ceil(1000 / 176) − 1 = 5', () => {
    const m = masks('fa3', shape({ nq: 128, nk: 1000, dtype: 'fp16', numSplits: 1 }));
    expect(m.kv).toEqual([5, 5]);
    expect(m.ops).toEqual(new Set(['seqlen mask']));
  });

  it('causal, seqlen_q 128, seqlen_k 192 (128×128 tiles): both warpgroups mask blocks 1 and 0 (block.h l. 106-118 over the CTA)', () => {
    expect(masks('fa3', shape({ nq: 128, nk: 192, causal: true, dtype: 'fp16', numSplits: 1 })).kv).toEqual([1, 1, 0, 0]);
  });

  it('local (512, 0), seqlen_q 256, seqlen_k 2048, m block 0: blocks [10, 15), masked 14 and 10 in both warpgroups', () => {
    // n_block_max = ceil((128 + 1792) / 128) = 15, n_block_min = 10; edge floor(1792 / 128) = 14;
    // unmasked down to ceil((128 + 1792 − 512) / 128) = 11; block 10 on the left.
    const m = masks('fa3', shape({ nq: 256, nk: 2048, window: { left: 512, right: 0 }, dtype: 'fp16', numSplits: 1 }));
    expect(m.kv).toEqual([14, 14, 10, 10]);
    expect(m.ops).toEqual(new Set(['local mask']));
  });
});

describe('describe says where the masking steps come from', () => {
  const why = (algo: 'fa3' | 'fa4', s: ProblemShape) =>
    (describeFor(algo, algo === 'fa3' ? 'h100' : 'b200', s).upstream?.why ?? []).find((w) => w.includes('runs the mask')) ?? '';
  it('FA4: the first block with mask_seqlen, then the causal/local edges, with their lines', () => {
    expect(why('fa4', shape({}))).toContain('flash_attn/cute/flash_fwd_sm100.py@0251105a l. 2303-2311');
    expect(why('fa4', shape({})).includes('l. 2313-2328')).toBe(false);
    const local = why('fa4', shape({ nq: 256, nk: 2048, window: { left: 512, right: 0 } }));
    expect(local).toContain('l. 2313-2328 with flash_attn/cute/block_info.py@0251105a l. 117-134');
    expect(local).toContain('l. 2345-2357 with l. 136-152');
  });
  it('FA3: the first block with Seqlenk_mask, then the causal/local edges, with their lines', () => {
    const local = why('fa3', shape({ nq: 256, nk: 2048, window: { left: 512, right: 0 }, dtype: 'fp16' }));
    expect(local).toContain('hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a l. 1150, 1307-1308');
    expect(local).toContain('l. 1228-1235 with block.h l. 120-135');
  });
});
