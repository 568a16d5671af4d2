// What upstream's host-side dispatch (FA3's mha_fwd / mha_bwd, FA4's _flash_attn_fwd) reads from a
// problem: the problem's dims and fields, with varlen and block sparsity as the flags the host
// code tests. Built from the hardware model's shape in one place for every dispatch.

import { checkMaskSpec } from '../core/mask-spec.ts';
import type { ProblemDims } from '../core/problem.ts';
import { unpackShape, type ProblemShape } from './model.ts';

export interface DispatchInput
  extends ProblemDims,
    Pick<ProblemShape, 'dtype' | 'causal' | 'window' | 'softcap' | 'attentionChunk' | 'pageSize' | 'numSplits' | 'packGqa'> {
  /** cu_seqlens_q or seqused_q given. */
  varlenQ?: boolean;
  /** cu_seqlens_k or seqused_k given. */
  varlenK?: boolean;
  /** The varlen lengths come as seqused_q / seqused_k (the only form paged KV takes), not cu_seqlens. */
  seqused?: boolean;
  /** Block-sparse tensors given (a mask_mod's block mask). */
  blockSparse?: boolean;
  /** Packed rows of a varlen batch (cu_seqlens' last entry), which some launches size their grid by. */
  totalQ?: number;
  totalK?: number;
  /** Those tensors differ per query head (the mask_mod reads h): their head dim is Hq, not a broadcast 1. */
  blockSparsePerHead?: boolean;
}

/** The dispatch's view of a shape: unpacked (nq = seqlen_q), pack_gqa on when the shape is already packed. */
export function dispatchInputOf(shape: ProblemShape): DispatchInput {
  const s = unpackShape(shape);
  return {
    batch: s.batch,
    hq: s.hq,
    hk: s.hk,
    nq: s.nq,
    nk: s.nk,
    d: s.d,
    dv: s.dv,
    dtype: s.dtype,
    causal: s.causal,
    window: s.window,
    softcap: s.softcap,
    attentionChunk: s.attentionChunk,
    pageSize: s.pageSize,
    varlenQ: s.varlen?.seqlensQ !== undefined,
    varlenK: s.varlen?.seqlensK !== undefined,
    seqused: s.varlen?.seqused === true,
    numSplits: s.numSplits,
    packGqa: shape.packRatio !== undefined ? true : s.packGqa,
    blockSparse: s.mask?.maskMod !== undefined,
    ...(s.varlen?.seqlensQ ? { totalQ: s.varlen.seqlensQ.reduce((a, b) => a + b, 0) } : {}),
    ...(s.varlen?.seqlensK ? { totalK: s.varlen.seqlensK.reduce((a, b) => a + b, 0) } : {}),
    blockSparsePerHead: s.mask?.maskMod !== undefined && checkMaskSpec(s.mask).maskReadsHead,
  };
}
