// The block mask a stepper walks, built once before its loops as upstream builds the
// cnt/idx tensors before launching (flash_attn/cute/block_sparsity.py@0251105a l. 17–23):
// the kernel then skips empty tiles without loading them and runs the mask only inside
// partial ones, never on full ones.

import { BLOCK_EMPTY, BLOCK_FULL, BLOCK_PARTIAL, blockMask, MAX_BLOCK_MASK_PAIRS } from '../core/block-mask.ts';
import type { SparsityTally } from '../core/counters.ts';
import { checkMaskSpec } from '../core/mask-spec.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { blockFullyVisible, blockHasVisible, type ScoreModel } from '../core/scores.ts';

export type TileClass = typeof BLOCK_EMPTY | typeof BLOCK_PARTIAL | typeof BLOCK_FULL;

/** Class of tile (Q tile i, K/V tile j) of batch b, query head h. */
export type TileClassOf = (b: number, h: number, i: number, j: number) => TileClass;

/** True when some mask (causal, window, attention chunk or mask_mod) can hide keys: only then is there a block mask to report. */
export function hasBlockMask(p: AttentionProblem): boolean {
  return p.causal || p.window !== undefined || p.attentionChunk !== undefined || p.mask?.maskMod !== undefined;
}

/**
 * The tile classes at the run's tile size. Precomputed when the mask_mod's pairs fit the block
 * mask's budget; past it each tile is classified when the loop reaches it (same classes).
 */
export function tileClasses(p: AttentionProblem, sm: ScoreModel, blockM: number, blockN: number): TileClassOf {
  if (!hasBlockMask(p)) return () => BLOCK_FULL;
  const perHead = p.mask !== undefined && checkMaskSpec(p.mask).maskReadsBatchOrHead;
  const pairs = (perHead ? p.batch * p.hq : 1) * p.nq * p.nk;
  if (sm.maskMod === undefined || pairs <= MAX_BLOCK_MASK_PAIRS) {
    const bm = blockMask(p, blockM, blockN);
    return (b, h, i, j) => {
      const row = ((bm.batch === 1 ? 0 : b) * bm.heads + (bm.heads === 1 ? 0 : h)) * bm.qBlocks + i;
      return bm.state[row * bm.kvBlocks + j] as TileClass;
    };
  }
  return (b, h, i, j) => {
    const r0 = i * blockM;
    const r1 = Math.min(p.nq, r0 + blockM);
    const c0 = j * blockN;
    const c1 = Math.min(p.nk, c0 + blockN);
    if (!blockHasVisible(sm, r0, r1, c0, c1, p.nk, b, h)) return BLOCK_EMPTY;
    return blockFullyVisible(sm, r0, r1, c0, c1, p.nk, b, h) ? BLOCK_FULL : BLOCK_PARTIAL;
  };
}

/** What an empty tile of rows × cols spares: its two matmuls and its K and V loads. */
export function skippedTile(p: AttentionProblem, rows: number, cols: number, eb: number): Partial<SparsityTally> {
  return { tilesSkipped: 1, skippedFlops: 2 * rows * cols * (p.d + p.dv), skippedBytes: cols * (p.d + p.dv) * eb };
}
