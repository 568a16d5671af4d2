// The serving page's problem reaches the hardware model whole: the dispatch reads the page size,
// the sequences' lengths and Hq/Hk of the numeric run, and picks what upstream 0251105a picks.

import { describe, expect, it } from 'vitest';
import { dispatchInputOf } from '../hw/dispatch-input.ts';
import { sequencesOf } from '../hw/model.ts';
import { DEFAULT_SERVING_FORM, generateServing, runServing, type ServingForm } from './serving-run.ts';

const paged = (patch: Partial<ServingForm>): ServingForm => ({
  ...DEFAULT_SERVING_FORM,
  layout: 'paged',
  algorithm: 'flash-decoding',
  seqlensK: [70, 5, 33],
  hq: 4,
  hk: 2,
  ...patch,
});

const configOf = (r: ReturnType<typeof runServing>, algo: string) => {
  const k = r.hardware.kernels.find((x) => x.algorithm === algo)!;
  expect(k.refused).toBeUndefined();
  return k.upstream!.config;
};

describe('serving problem → hardware model', () => {
  it('varlen: the dispatch gets cu_seqlens, Hq/Hk and max_seqlen; each sequence keeps its own lengths', () => {
    const r = runServing(generateServing(DEFAULT_SERVING_FORM), 'fa2');
    const shape = r.hardware.shape;
    const input = dispatchInputOf(shape);
    expect([input.hq, input.hk, input.batch, input.nq, input.nk]).toEqual([2, 1, 4, 40, 40]);
    expect([input.varlenQ, input.varlenK, input.seqused, input.pageSize]).toEqual([true, true, false, undefined]);
    expect(sequencesOf(shape).map((s) => [s.nq, s.nk])).toEqual([
      [12, 12],
      [40, 40],
      [0, 9],
      [23, 23],
    ]);
    // Generated inputs are fp32; the kernels take them as bf16.
    expect([input.dtype, r.hardware.runDtype]).toEqual(['bf16', 'fp32']);
    for (const k of r.hardware.kernels) {
      expect(k.refused).toBeUndefined();
      expect(k.time_us).toBeGreaterThan(0);
      expect(k.hbm_bytes).toBeGreaterThan(0);
      expect(k.upstream!.why.length).toBeGreaterThan(0);
    }
  });

  it('paged: page size, seqused_k and the block table width reach the dispatch', () => {
    const r = runServing(generateServing(paged({ pageSize: 16 })), 'flash-decoding', { splits: 3 });
    const input = dispatchInputOf(r.hardware.shape);
    expect([input.hq, input.hk, input.batch, input.nq]).toEqual([4, 2, 3, 1]);
    // seqlen_k is the block table's width in tokens: 5 pages of 16 (flash_attn/cute/interface.py@0251105a l. 606-607).
    expect([input.pageSize, input.nk, input.varlenK, input.seqused, input.numSplits]).toEqual([16, 80, true, true, 3]);
    expect(r.hardware.shape.varlen?.seqlensK).toEqual([70, 5, 33]);
  });

  it("paged at page size 16: both kernels read K/V without TMA and pack the query heads, as upstream's dispatch does", () => {
    const r = runServing(generateServing(paged({ pageSize: 16 })), 'flash-decoding');
    const fa3 = configOf(r, 'fa3');
    const fa4 = configOf(r, 'fa4');
    // hopper/flash_api.cpp@0251105a l. 415-423: TMA only when page_size % kBlockN == 0; l. 377: PackGQA forced with PagedKVNonTMA.
    expect([fa3.paged_kv_non_tma, fa3.pack_gqa]).toEqual([true, true]);
    // flash_attn/cute/interface.py@0251105a l. 1350: non-TMA when page_size is not tile_n; l. 694-695: pack_gqa when Hq > Hk.
    expect([fa4.paged_kv_non_tma, fa4.pack_gqa]).toEqual([true, true]);
  });

  it('paged at page size 128, one query row: FA4 reads pages by TMA, FA3 still does not (seqlen_q · Hq/Hk ≤ kBlockM)', () => {
    const r = runServing(generateServing(paged({ pageSize: 128, seqlensK: [200, 5, 130] })), 'flash-decoding');
    expect(r.hardware.shape.pageSize).toBe(128);
    // flash_attn/cute/interface.py@0251105a l. 1350 (tile_n 128 at d 16).
    expect(configOf(r, 'fa4').paged_kv_non_tma).toBe(false);
    // hopper/flash_api.cpp@0251105a l. 423: seqlen_q · (h / h_k) = 2 is not above kBlockM.
    expect(configOf(r, 'fa3').paged_kv_non_tma).toBe(true);
  });

  it('causal decode: FA3 drops the causal mask at seqlen_q 1, FA4 keeps the causal kernel and says why', () => {
    const r = runServing(generateServing(paged({ pageSize: 16, causal: true, nq: 1 })), 'flash-decoding');
    // hopper/flash_api.cpp@0251105a l. 798-803: d 16 (≤ 64) drops causal even with paged KV.
    expect(configOf(r, 'fa3').mask).toBe('none');
    // flash_attn/cute/interface.py@0251105a l. 768-770, 388-408: no such rule; block_info.py l. 36-42: every block stays.
    expect(configOf(r, 'fa4').mask).toBe('causal');
    const why = r.hardware.kernels.find((k) => k.algorithm === 'fa4')!.upstream!.why;
    expect(why.some((l) => l.includes('seqlen_q = 1 keeps causal'))).toBe(true);
    expect(why.some((l) => l.startsWith('flash_attn/cute/block_info.py@0251105a l. 36-42'))).toBe(true);
  });

  it('a numeric algorithm without a split count leaves num_splits to each kernel', () => {
    const r = runServing(generateServing(paged({ algorithm: 'fa2', splits: 5 })), 'fa2', { splits: 5 });
    expect(r.hardware.shape.numSplits).toBeUndefined();
  });
});
