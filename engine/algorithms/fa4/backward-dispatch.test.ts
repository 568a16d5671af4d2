// FA4's backward dispatch against flash-attention 0251105a, values read by hand off
// flash_attn/cute/interface.py (_flash_attn_bwd, l. 1807-2643) and flash_bwd_sm100.py
// (FlashAttentionBackwardSm100.__init__ and _setup_attributes, l. 51-262; the scheduler, l. 704-715).

import { describe, expect, it } from 'vitest';
import { conformanceShape } from '../../hw/conformance.ts';
import type { DispatchInput } from '../../hw/dispatch-input.ts';
import { fa4BwdDispatch } from './backward-dispatch.ts';

const p = (o: Partial<DispatchInput> = {}): DispatchInput => ({ ...conformanceShape({}), ...o });

describe('FA4 backward dispatch (interface.py _flash_attn_bwd, SM100 branch)', () => {
  it('d ≥ 128 runs 2-CTA pairs (l. 1948-1952): one Q stage, dQ reduce-adds of 8 columns through 4 slots, dQ over S in TMEM', () => {
    const dp = fa4BwdDispatch(p(), false);
    expect(dp.refused).toBeUndefined();
    expect([dp.tileM, dp.tileN, dp.ctaGroup, dp.qStage, dp.dOStage]).toEqual([128, 128, 2, 1, 1]);
    expect([dp.dQReduceNcol, dp.sdQaccumStage]).toEqual([8, 4]);
    // flash_bwd_sm100.py l. 191-202: S 0, dV tile_n, dP tile_n + dv, dQ at S + d/2 in a pair, dK after dP.
    expect(dp.tmem).toEqual({ S: 0, P: 0, dV: 128, dP: 256, dS: 256, dQ: 64, dK: 384 });
    expect(dp.registers).toEqual({ reduce: 136, compute: 136, load: 104, mma: 104, empty: 24 });
    expect(dp.scheduler).toBe('SingleTileScheduler');
  });

  it('d < 128 runs one CTA: two Q stages, 32-column dQ chunks through 2 slots, dQ over dP; registers by mask and determinism', () => {
    const dp = fa4BwdDispatch(p({ d: 64, dv: 64 }), false);
    expect([dp.ctaGroup, dp.qStage, dp.dQReduceNcol, dp.sdQaccumStage]).toEqual([1, 2, 32, 2]);
    expect(dp.tmem).toEqual({ S: 0, P: 0, dV: 128, dP: 192, dS: 192, dQ: 192, dK: 320 });
    // l. 204-213: 152/136/88 without a mask or when deterministic, 136/144/88 masked.
    expect(dp.registers).toMatchObject({ reduce: 152, compute: 136, load: 88, mma: 88 });
    expect(fa4BwdDispatch(p({ d: 64, dv: 64, causal: true }), false).registers).toMatchObject({ reduce: 136, compute: 144 });
    expect(fa4BwdDispatch(p({ d: 64, dv: 64, causal: true }), true).registers).toMatchObject({ reduce: 152, compute: 136 });
  });

  it('d 192 / dv 128 (DeepSeek) has its own TMEM map and dQ chunks, 32 × 1 when causal (l. 181-190, 241-245)', () => {
    const dp = fa4BwdDispatch(p({ d: 192, dv: 128 }), false);
    expect(dp.ctaGroup).toBe(2);
    expect(dp.tmem).toEqual({ dV: 0, dK: 128, S: 320, P: 320, dP: 384, dS: 384, dQ: 416 });
    expect([dp.dQReduceNcol, dp.sdQaccumStage]).toEqual([24, 2]);
    const causal = fa4BwdDispatch(p({ d: 192, dv: 128, causal: true }), false);
    expect([causal.dQReduceNcol, causal.sdQaccumStage]).toEqual([32, 1]);
  });

  it('deterministic: 16-column dQ chunks through 2 slots in a pair, the LPT scheduler, shortest first only when masked', () => {
    const dp = fa4BwdDispatch(p(), true);
    expect([dp.dQReduceNcol, dp.sdQaccumStage, dp.scheduler, dp.spt]).toEqual([16, 2, 'SingleTileLPTBwdScheduler', false]);
    expect(fa4BwdDispatch(p({ causal: true }), true).spt).toBe(true);
    expect(fa4BwdDispatch(p({ window: { left: 256, right: 0 } }), true).spt).toBe(true);
    expect(fa4BwdDispatch(p({ causal: true }), false).spt).toBe(false);
    expect(fa4BwdDispatch(p({ varlenK: true, varlenQ: true }), true).scheduler).toBe('SingleTileVarlenScheduler');
  });

  it('causal and windows resolve as _resolve_causal_local_window does (l. 388-408)', () => {
    expect(fa4BwdDispatch(p({ causal: true }), false)).toMatchObject({ isCausal: true, isLocal: false });
    expect(fa4BwdDispatch(p({ window: { left: -1, right: 0 } }), false)).toMatchObject({ isCausal: true, isLocal: false });
    expect(fa4BwdDispatch(p({ window: { left: 256, right: 0 } }), false)).toMatchObject({
      isCausal: false,
      isLocal: true,
      windowLeft: 256,
      windowRight: 0,
    });
  });

  it('pack_gqa is forced off; GQA accumulates dK/dV in fp32 except in the d = 256 kernel (l. 2088-2092, 2161)', () => {
    const gqa = fa4BwdDispatch(p({ hq: 32, hk: 8, packGqa: true }), false);
    expect([gqa.packGqa, gqa.qheadPerKvhead, gqa.dkvPostprocess]).toEqual([false, 4, true]);
    expect(fa4BwdDispatch(p({ hq: 32, hk: 8, d: 256, dv: 256 }), false)).toMatchObject({ dedicatedHd256: true, dkvPostprocess: false });
    expect(fa4BwdDispatch(p(), false).dkvPostprocess).toBe(false);
  });

  it('a pair needs an even number of column blocks: seqlen_k is rounded up one more tile (l. 2021-2025)', () => {
    expect(fa4BwdDispatch(p({ nk: 600 }), false)).toMatchObject({ seqlenKRounded: 768, numNBlocks: 6 });
    expect(fa4BwdDispatch(p({ nk: 600, d: 64, dv: 64 }), false)).toMatchObject({ seqlenKRounded: 640, numNBlocks: 5 });
  });

  it('refuses what upstream refuses, with its message', () => {
    const refused = (o: Partial<DispatchInput>) => fa4BwdDispatch(p(o), false).refused;
    expect(refused({ dtype: 'fp32' })).toBe('inputs must be float16 or bfloat16');
    expect(refused({ dtype: 'fp8e4m3' })).toMatch(/^inputs must be float16 or bfloat16/);
    expect(refused({ hq: 6, hk: 4 })).toBe('num_head must be divisible by num_head_kv');
    expect(refused({ d: 160, dv: 160 })).toBe(
      '(head_dim, head_dim_v)=(160, 160) is not supported on SM100/SM110. head_dim and head_dim_v must be between 8 and 128 and divisible by 8, or (192, 128) for DeepSeek, or (256, 256) for hd256.',
    );
    expect(refused({ d: 64, dv: 512 })).toMatch(/^FlashAttentionBackwardSm100 asserts tile_hdimv <= 128/);
    expect(refused({ d: 256, dv: 256, softcap: 30 })).toBe('SM100 backward with head_dim=256 does not support softcap');
    expect(refused({ d: 256, dv: 256, seqused: true, varlenK: true })).toBe(
      'SM100 backward with head_dim=256 does not support seqused_q/seqused_k',
    );
    expect(refused({ blockSparse: true, varlenQ: true })).toBe('Varlen backward with block sparsity is not yet supported');
    // l. 257: one CTA reduces dQ in 32-column chunks, so tile_hdim 80 (d 72) fails the kernel's assert; 96 passes.
    expect(refused({ d: 72, dv: 72 })).toBe(
      'FlashAttentionBackwardSm100 asserts (tile_hdim // cta_group_size) % dQ_reduce_ncol == 0: tile_hdim 80 / 1 is not a multiple of 32',
    );
    // l. 764: a pair stages GQA's fp32 dV (128 × 64 fp32) over sV, which at dv 64 holds 128 × 64 bf16.
    expect(refused({ d: 128, dv: 64, hq: 32, hk: 8 })).toBe("sdV doesn't fit in sV storage allocation (2-CTA)");
    expect(refused({ d: 128, dv: 64 })).toBeUndefined();
    expect(refused({ hq: 32, hk: 8 })).toBeUndefined();
    expect(refused({ softcap: 30 })).toBeUndefined();
    expect(refused({ d: 96, dv: 96 })).toBeUndefined();
    expect(refused({ d: 128, dv: 64 })).toBeUndefined();
  });

  it('every decision carries an upstream file:line', () => {
    for (const o of [{}, { causal: true, hq: 32, hk: 8 }, { d: 192, dv: 128 }, { d: 256, dv: 256 }])
      for (const w of fa4BwdDispatch(p(o), true).why) expect(w).toMatch(/@0251105a l\. \d/);
  });

  it('d = dv = 256: two dedicated kernels, dQ (128 × 128, grid over Q tiles of every head) then dK/dV (128 × 64, grid over KV heads)', () => {
    const dp = fa4BwdDispatch(p({ d: 256, dv: 256, hq: 32, hk: 8, nq: 1000, nk: 1000, causal: true }), false);
    expect(dp.refused).toBeUndefined();
    const [dq, dkdv] = dp.hd256!;
    // dqkernel.py l. 67-68, 94, 304-307: 128 × 128 per CTA, ceil(1000 / 128) = 8 Q tiles (even for the pair) × 32 heads.
    expect([dq.name, dq.tileM, dq.tileN, ...dq.grid]).toEqual(['dQ', 128, 128, 8, 32, 1]);
    // dqkernel.py l. 100-104, 129-135.
    expect(dq.roles.map((r) => `${r.name} ${r.warps.join(',')} ${r.registers}`)).toEqual([
      'compute 0,1,2,3 256',
      'epilogue 4,5,6,7 160',
      'mma 8 32',
      'load 9 32',
      'empty 10,11 32',
    ]);
    expect(dq.tmem.map((t) => t.column)).toEqual([0, 128, 256]);
    // dkdvkernel.py l. 3168-3176: ceil(1000 / 64) = 16 key blocks × 8 KV heads; l. 173-182.
    expect([dkdv.name, dkdv.tileM, dkdv.tileN, ...dkdv.grid]).toEqual(['dKdV', 128, 64, 16, 8, 1]);
    expect(dkdv.tmem.map((t) => t.column)).toEqual([0, 128, 256, 320]);
    expect(dkdv.stages.dKdV).toBe(2);
    // An odd count of 64-key blocks is rounded up for the cluster of 2.
    expect(fa4BwdDispatch(p({ d: 256, dv: 256, nk: 192 }), false).hd256![1].grid[0]).toBe(4);
    // Varlen: both grids span the packed rows (dqkernel.py l. 296-307, dkdvkernel.py l. 232-237), the batch from cu_seqlens.
    const varlen = fa4BwdDispatch(
      p({ d: 256, dv: 256, batch: 3, nq: 1000, nk: 1000, varlenQ: true, varlenK: true, totalQ: 1700, totalK: 1700 }),
      false,
    );
    expect(varlen.hd256!.map((k) => k.grid)).toEqual([
      [14, 16, 3],
      [28, 16, 3],
    ]);
    expect(dp.why.join('\n')).toMatch(/dkdvkernel\.py@0251105a l\. 1998-2001 .*4 query heads .*no semaphores/);
  });

  it('d = dv = 256 refuses local windows and deterministic mode as the kernel’s constructor does (l. 60, 70-72)', () => {
    expect(fa4BwdDispatch(p({ d: 256, dv: 256, window: { left: 128, right: 128 } }), false).refused).toBe(
      'SM100 backward with head_dim=256 does not support local attention',
    );
    expect(fa4BwdDispatch(p({ d: 256, dv: 256 }), true).refused).toBe(
      'SM100 backward with head_dim=256 does not support deterministic mode',
    );
    // A left window with right 0 is causal to upstream (interface.py l. 388-408) only without a left edge.
    expect(fa4BwdDispatch(p({ d: 256, dv: 256, window: { left: -1, right: 0 } }), false).refused).toBeUndefined();
    expect(fa4BwdDispatch(p({ d: 128, dv: 128, window: { left: 128, right: 128 } }), true).refused).toBeUndefined();
  });

  it('deterministic GQA says its dK/dV semaphores and how they are charged (flash_bwd_sm100.py l. 4088-4092, 4160-4165)', () => {
    const why = fa4BwdDispatch(p({ hq: 32, hk: 8 }), true).why.join('\n');
    expect(why).toMatch(/l\. 4054-4057, 4088-4092, 4160-4165: the 4 query heads of a KV head add their dK and dV in head order/);
    expect(fa4BwdDispatch(p({ hq: 32, hk: 8 }), false).why.join('\n')).not.toMatch(/4088-4092/);
  });
});
