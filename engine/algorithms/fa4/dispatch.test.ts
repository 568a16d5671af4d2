// FA4's dispatch at seqlen_q = 1 with causal, against flash-attention 0251105a: interface.py has no
// rule that drops causal there (hopper/flash_api.cpp l. 798-803 has one for FA3), and block_info.py's
// K/V range at one query row (packed or not) is every block of seqlen_k.

import { describe, expect, it } from 'vitest';
import { maskSpecFrom } from '../../core/mask-presets.ts';
import { gpuById } from '../../hw/gpus/index.ts';
import { DEFAULT_FEATURES, type ProblemShape } from '../../hw/model.ts';
import { describeFor, hwAlgorithmFor } from '../schedule-registry.ts';

const shape = (o: Partial<ProblemShape>): ProblemShape => ({
  batch: 2,
  hq: 16,
  hk: 16,
  nq: 1,
  nk: 1000,
  d: 128,
  dv: 128,
  dtype: 'bf16',
  causal: true,
  ...o,
});

const why = (algo: string, gpu: string, s: ProblemShape) => describeFor(algo, gpu, s).upstream!.why;
const KEEPS = 'flash_attn/cute/interface.py@0251105a l. 768-770, 388-408: seqlen_q = 1 keeps causal';
const BLOCKS = 'flash_attn/cute/block_info.py@0251105a l. 36-42, 125-134 with flash_attn/cute/flash_fwd_sm100.py@0251105a l. 2303-2328';

describe('FA4 at seqlen_q = 1 with causal (flash_attn/cute@0251105a)', () => {
  it('keeps the causal kernel where FA3 drops it, and says why with the upstream lines', () => {
    for (const hk of [16, 2]) {
      const s = shape({ hk });
      expect(describeFor('fa4', 'b200', s).upstream!.config.mask).toBe('causal');
      const w = why('fa4', 'b200', s);
      expect(w.some((l) => l.startsWith(KEEPS))).toBe(true);
      expect(w.some((l) => l.startsWith(BLOCKS))).toBe(true);
      // hopper/flash_api.cpp@0251105a l. 798-803: d 128 without paged KV drops causal at seqlen_q = 1.
      expect(describeFor('fa3', 'h100', s).upstream!.config.mask).toBe('none');
      expect(why('fa3', 'h100', s).some((l) => l.startsWith('hopper/flash_api.cpp@0251105a l. 799-803'))).toBe(true);
    }
    // With pack_gqa the rows of the one M block are the query heads of query 0 (block_info.py l. 38-39).
    expect(why('fa4', 'b200', shape({ hk: 2 })).find((l) => l.startsWith(BLOCKS))).toContain('the 8 packed rows are all query 0');
  });

  it('the line belongs to seqlen_q = 1 with causal only', () => {
    for (const s of [shape({ causal: false }), shape({ nq: 2 }), shape({ nq: 2, hk: 2 })]) {
      expect(why('fa4', 'b200', s).some((l) => l.startsWith(KEEPS) || l.startsWith(BLOCKS))).toBe(false);
    }
  });

  it('every CTA loads all ceil(seqlen_k / tile_n) K/V blocks, packed or not, as without causal', () => {
    const algo = hwAlgorithmFor('fa4');
    const b200 = gpuById('b200');
    for (const hk of [16, 2]) {
      // block_info.py l. 35: n_block_max = ceil(1000 / 128) = 8; l. 37-42: the causal edge
      // ceil((m_idx_max + 1000 − 1) / 128) ≥ 8 with m_idx_max = 128, or ceil(128 / 8) = 16 packed.
      const causal = algo.grid(b200, shape({ hk }), DEFAULT_FEATURES);
      expect(causal.length).toBe(2 * hk);
      expect(causal.every((w) => w.kvFrom === 0 && w.kvTo === 8 && w.kvList === undefined)).toBe(true);
      const dense = algo.grid(b200, shape({ hk, causal: false }), DEFAULT_FEATURES);
      expect(causal.map((w) => [w.kvFrom, w.kvTo])).toEqual(dense.map((w) => [w.kvFrom, w.kvTo]));
    }
  });
});

describe('FA4 refuses what flash_attn/cute/interface.py@0251105a refuses', () => {
  const fits = (s: ProblemShape) => describeFor('fa4', 'b200', s).does_not_fit.join('; ');
  it("attention_chunk: flash_attn_func (l. 3371-3393) has no such argument, so Python's TypeError", () => {
    expect(fits(shape({ nq: 4096, nk: 4096, attentionChunk: 1024 }))).toContain(
      "upstream refuses: flash_attn_func() got an unexpected keyword argument 'attention_chunk'",
    );
    expect(fits(shape({ nq: 4096, nk: 4096 }))).toBe('');
  });
  it('d = dv = 256 with a block mask: the dedicated kernel asserts against block sparsity (l. 1310-1311)', () => {
    const mask = maskSpecFrom({ maskMod: 'document:700,300' }, { hq: 16, nq: 2048, nk: 2048 });
    const s = shape({ nq: 2048, nk: 2048, d: 256, dv: 256, causal: false });
    expect(fits({ ...s, mask })).toContain('SM100 forward with head_dim=256 does not support block sparsity');
    expect(fits(s)).toBe('');
  });
});

describe('FA4 turns pack_gqa off for a block mask that differs per head, after q_stage is chosen (interface.py@0251105a l. 867-871)', () => {
  const config = (s: ProblemShape) => describeFor('fa4', 'b200', s).upstream!.config;
  const dims = { hq: 16, nq: 100, nk: 2048 };
  const gqa = shape({ hq: 16, hk: 2, nq: 100, nk: 2048 });
  it('a mask_mod that reads h: unpacked grid (Hq heads), with the packed rows deciding q_stage and the scheduler', () => {
    const s = { ...gqa, mask: maskSpecFrom({ maskMod: 'h % 2 == 0 || kv_idx >= 1000' }, dims) };
    const c = config(s);
    expect(c.pack_gqa).toBe(false);
    expect(c.packed_rows).toBe(100);
    // l. 342-344: seqlen_q_packgqa 100 × 8 = 800 > tile_m 128 → q_stage 2, kept when packing is turned off.
    expect(c.q_stage).toBe(2);
    // l. 815, 1075-1085: max_m_blocks_leq_one = 800 ≤ 2·128 is false → not static persistent, causal → LPT.
    expect(c.scheduler).toBe('SingleTileLPTScheduler');
    // One M block of 2 × 128 rows over 100 rows, 16 query heads, batch 2.
    expect(c.tiles).toBe(1 * 16 * 2);
    expect(
      why('fa4', 'b200', s).some((l) =>
        l.startsWith('flash_attn/cute/interface.py@0251105a l. 867-871: the block mask differs per query head'),
      ),
    ).toBe(true);
  });
  it('a mask_mod that reads only b, or neither, broadcasts over heads and stays packed', () => {
    for (const maskMod of ['b == 0 || kv_idx >= 1000', 'kv_idx >= 1000']) {
      const c = config({ ...gqa, mask: maskSpecFrom({ maskMod }, dims) });
      expect(c.pack_gqa, maskMod).toBe(true);
      expect(c.packed_rows).toBe(800);
      expect(c.tiles).toBe(Math.ceil(800 / 256) * 2 * 2);
    }
  });
});
