// The masking steps the FA3 and FA4 forward schedules charge, against counts worked out by hand
// from flash-attention 0251105a: flash_attn/cute/flash_fwd_sm100.py l. 2303-2357 (the first block
// with mask_seqlen=True, then the causal/local blocks, the unmasked ones, the left-window ones),
// flash_attn/cute/block_info.py l. 27-68 and 117-152 (the bounds), flash_attn/cute/mask.py
// l. 659-672 (the seqlen-only mask runs its R2P selects on every column, whatever seqlen_k), and
// hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp l. 1150, 1209-1235 with hopper/block.h l. 14-59, 103-135.

import { describe, expect, it } from 'vitest';
import { maskSpecFrom } from '../core/mask-presets.ts';
import { kvBlocksOf, type CtaWork, type ProblemShape } from './model.ts';
import { gpuById } from './gpus/index.ts';
import { runSm } from './simulate.ts';
import { maskedKvSteps } from './mask-steps.ts';
import { describeFor, hwAlgorithmById, resolveFeatures, scheduleFor } from '../algorithms/schedule-registry.ts';

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

  it('block-sparse (document mask 700, 300), rows 0-255: partial block 5, then the first full block visited, 4, in both Q stages; not 3-0', () => {
    // Rows 0-255 see keys 0-699: blocks 0-4 full, 5 partial. The partial list runs mask_fn on
    // every block (l. 1096-1114: allow_unmasked_inner_blocks False), the full list on its first
    // (l. 971-997 with mask_fn_none), then none (l. 1016-1033, check_m_boundary False).
    const n = 2048;
    const mask = maskSpecFrom({ maskMod: 'document:700,300' }, { hq: 1, nq: n, nk: n });
    const m = masks('fa4', shape({ nq: n, nk: n, mask }));
    expect(m.kv).toEqual([5, 5, 4, 4]);
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

/** One CTA of the grid and its masking ops' K/V blocks by sub-unit (FA4: Q stage). */
function ctaMasks(algoId: 'fa3' | 'fa4', s: ProblemShape, pick: (w: CtaWork) => boolean) {
  const algo = hwAlgorithmById(algoId);
  const gpu = gpuById(algoId === 'fa3' ? 'h100' : 'b200');
  const f = resolveFeatures(algo, {});
  const work = algo.grid(gpu, s, f).find(pick);
  if (!work) throw new Error('no such CTA');
  const ops = runSm(algo, gpu, s, f, [work], 64, true).timeline.filter((e) => e.op.endsWith(' mask'));
  return { work, bySub: [0, 1].map((sub) => ops.filter((e) => e.phase?.sub === sub).map((e) => e.phase?.kv ?? -1)), all: ops };
}
const fa4CtaMasks = (s: ProblemShape, pick: (w: CtaWork) => boolean) => ctaMasks('fa4', s, pick).bySub;

describe('block-sparse FA4 masks every partial block and the first full one (block_sparse_utils.py@0251105a l. 951-1037, 1096-1134)', () => {
  const docs = (n: number) => shape({ nq: n, nk: n, mask: maskSpecFrom({ maskMod: 'document:700,300' }, { hq: 1, nq: n, nk: n }) });

  it('rows 512-767 straddle documents 0 and 1: all 8 blocks are partial, every one masked, from the last down', () => {
    const m = fa4CtaMasks(docs(2048), (w) => w.qBlock === 2);
    expect(m).toEqual([
      [7, 6, 5, 4, 3, 2, 1, 0],
      [7, 6, 5, 4, 3, 2, 1, 0],
    ]);
  });

  it('seqlen 2000, rows 1792-1999: partial block 7 and full 15 in stage 0; stage 1 ends at 2048 > 2000 (check_m_boundary with aux tensors), so its full blocks 15-8 all mask', () => {
    // Document 2 is keys 1000-1999: block 7 (896-1023) partial, 8-15 full (block 15's keys past 2000 are out of bounds).
    // flash_fwd_sm100.py l. 2256-2260: m_tile_end = (q_stage·m_block + stage + 1)·tile_m = 1920 for stage 0, 2048 for stage 1.
    const m = fa4CtaMasks(docs(2000), (w) => w.qBlock === 7);
    expect(m[0]).toEqual([7, 15]);
    expect(m[1]).toEqual([7, 15, 14, 13, 12, 11, 10, 9, 8]);
  });

  it('split KV splits the partial list and the full list each (split_block_range, l. 619-625, 1079-1088)', () => {
    const s = { ...docs(2048), numSplits: 2 };
    const algo = hwAlgorithmById('fa4');
    const works = algo.grid(gpuById('b200'), s, resolveFeatures(algo, {})).filter((w) => w.qBlock === 0);
    // Partial [5] → split 0 takes it; full [0-4] → ceil(5 / 2) = 3: split 0 takes 0-2, split 1 takes 3-4.
    expect(works.map((w) => kvBlocksOf(w))).toEqual([
      [5, 2, 1, 0],
      [4, 3],
    ]);
  });
});

describe("FA3's attention_chunk clips the K/V range and the mask bounds to the query's chunk (hopper/block.h@0251105a l. 14-45, 103-135)", () => {
  // Causal, chunk 1024, seqlen 4096, 128×128 tiles: the kernel is local (1023, 0). For m block i = 8q + k,
  // n_block_max = ceil(min(128(i + 1), round_up(1024, 128(i + 1))) / 128) = i + 1 and
  // n_block_min = max(128i − 1023, round_down(1024, 128i)) / 128 = 8q (l. 25-44).
  const chunked = shape({ nq: 4096, nk: 4096, causal: true, attentionChunk: 1024, dtype: 'fp16', numSplits: 1 });

  it('maskedKvSteps: the causal edge stays the diagonal; the last m block of a chunk masks every block (round_down of its end is the next chunk)', () => {
    const mask = { causal: false, local: true, left: 1023, right: 0, chunk: 1024 };
    const steps = (i: number) =>
      [...maskedKvSteps({ nq: 4096, nk: 4096 }, i, 128, 128, 8 * Math.floor(i / 8), i + 1, mask)].sort((a, b) => a - b);
    // m block 10: first block 10; causal/local edge floor(min(1280, round_up(1280)) / 128) = 10; left edge
    // ceil(max(1408 − 1023, round_down(1024, 1408)) / 128) = 8 = n_block_min: nothing more (l. 111-117, 128-134).
    expect(steps(10)).toEqual([10]);
    // m block 15: left edge ceil(max(2048 − 1023, round_down(1024, 2048)) / 128) = 16: blocks 8-14 mask too.
    expect(steps(15)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
  });

  it('the FA3 schedule: m block 10 loads blocks 10, 9, 8 and masks 10; m block 15 loads 15 down to 8 and masks all of them, in both warpgroups', () => {
    const ten = ctaMasks('fa3', chunked, (w) => w.qBlock === 10);
    expect(kvBlocksOf(ten.work)).toEqual([10, 9, 8]);
    expect(ten.all.map((e) => e.phase?.kv)).toEqual([10, 10]);
    const fifteen = ctaMasks('fa3', chunked, (w) => w.qBlock === 15);
    expect(kvBlocksOf(fifteen.work)).toEqual([15, 14, 13, 12, 11, 10, 9, 8]);
    expect(fifteen.all.map((e) => e.phase?.kv).sort((a, b) => (b ?? 0) - (a ?? 0))).toEqual([
      15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8,
    ]);
  });

  it('describe says so with the lines', () => {
    const lines = describeFor('fa3', 'h100', chunked).upstream?.why ?? [];
    expect(lines.find((w) => w.includes('runs the mask'))).toContain('attention_chunk 1024 clips the K/V range and both mask bounds');
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
  it('FA4 block-sparse: the two lists of block_sparse_utils.py with their lines', () => {
    const n = 2048;
    const mask = maskSpecFrom({ maskMod: 'document:700,300' }, { hq: 1, nq: n, nk: n });
    expect(why('fa4', shape({ nq: n, nk: n, mask }))).toContain('flash_attn/cute/block_sparse_utils.py@0251105a l. 951-1037, 1096-1134');
  });
  it('FA3: the first block with Seqlenk_mask, then the causal/local edges, with their lines', () => {
    const local = why('fa3', shape({ nq: 256, nk: 2048, window: { left: 512, right: 0 }, dtype: 'fp16' }));
    expect(local).toContain('hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a l. 1150, 1307-1308');
    expect(local).toContain('l. 1228-1235 with block.h l. 120-135');
  });
});
