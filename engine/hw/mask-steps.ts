// Which K/V blocks of a CTA run the masking step, as upstream's forward mainloops walk them
// (flash_attn/cute/flash_fwd_sm100.py@0251105a l. 2303-2357; hopper/
// mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a l. 1150, 1209-1235, 1307-1335): the first block
// visited (n_block_max − 1) always runs the mask with the seqlen_k bound, whatever the mask;
// causal and local kernels then mask down to n_block_min_causal_local_mask, run unmasked down to
// n_block_min_before_local_mask, and local kernels with a left window mask the rest
// (flash_attn/cute/block_info.py@0251105a l. 117-152; hopper/block.h@0251105a l. 103-135, whose
// attention_chunk clips both bounds to the query's chunk, l. 114-116, 131-133).

import { chunkDown, chunkUp, type CtaWork, type ProblemShape } from './model.ts';

/** The mask the kernel was compiled with, after the dispatch resolved it; null: no bound on that side. */
export interface KernelMask {
  causal: boolean;
  local: boolean;
  left: number | null;
  right: number | null;
  /** FA3's attention_chunk (0 or absent: none), which clips both bounds of a local kernel to the query's chunk. */
  chunk?: number;
}

/**
 * The masked blocks of [nMin, nMax) for the CTA at m block `mBlock` of `tileM` (packed) rows:
 * `seq` is the sequence as the kernel tiles it (nq in packed rows, packRatio the heads per KV head).
 */
export function maskedKvSteps(
  seq: Pick<ProblemShape, 'nq' | 'nk' | 'packRatio'>,
  mBlock: number,
  tileM: number,
  tileN: number,
  nMin: number,
  nMax: number,
  mask: KernelMask,
): Set<number> {
  const out = new Set<number>();
  if (nMax <= nMin) return out;
  const r = seq.packRatio ?? 1;
  const offset = seq.nk - seq.nq / r;
  const chunk = mask.chunk ?? 0;
  out.add(nMax - 1);
  let hi = nMax - 1;
  if (mask.causal || mask.local) {
    const nIdx = Math.floor((mBlock * tileM) / r) + offset;
    const windowRight = mask.local && mask.right !== null ? nIdx + mask.right : nIdx;
    const right = mask.local && chunk > 0 ? Math.min(windowRight, chunkUp(nIdx, chunk)) : windowRight;
    const causalLocalMin = Math.max(nMin, Math.floor(right / tileN));
    for (let n = causalLocalMin; n < hi; n++) out.add(n);
    hi = Math.min(hi, causalLocalMin);
  }
  if (mask.local && mask.left !== null) {
    const nIdx = Math.ceil(((mBlock + 1) * tileM) / r) + offset;
    const left = chunk > 0 ? Math.max(nIdx - mask.left, chunkDown(nIdx, chunk)) : nIdx - mask.left;
    const beforeLocalMin = Math.max(nMin, Math.ceil(left / tileN));
    for (let n = nMin; n < Math.min(hi, beforeLocalMin); n++) out.add(n);
  }
  return out;
}

/** What the masking step does on a block, for the op's label. */
export function maskLabel(mask: KernelMask): string {
  return mask.causal ? 'causal mask' : mask.local ? 'local mask' : 'seqlen mask';
}

/**
 * The blocks a block-sparse FA4 CTA runs mask_fn on (flash_attn/cute/block_sparse_utils.py@0251105a
 * l. 951-1037 over the two lists of l. 1096-1134): every block of the partial list, the first
 * block visited of the full list (mask_seqlen), and the full list's other blocks only under
 * check_m_boundary (flash_fwd_sm100.py@0251105a l. 2256-2260: aux tensors and a Q tile past seqlen_q).
 */
export function sparseMaskedSteps(work: Pick<CtaWork, 'kvList' | 'kvFull'>, checkMBoundary: boolean): Set<number> {
  const full = work.kvFull ?? [];
  const fullSet = new Set(full);
  const out = new Set((work.kvList ?? []).filter((j) => !fullSet.has(j)));
  if (full.length > 0) out.add(Math.max(...full));
  if (checkMBoundary) for (const j of full) out.add(j);
  return out;
}
