// Block (tile) sizes. The FlashAttention paper derives them from the on-chip memory M:
// Bc = ceil(M / 4d), Br = min(ceil(M / 4d), d), with M counted in fp32 words, so that
// Q_i, K_j, V_j and O_i of one step fit on chip together.

import { ProblemError, type AttentionProblem } from '../core/problem.ts';
import { capBlocks } from '../core/size-model.ts';
import type { BlockOptions } from './types.ts';

/** 16 KiB: small enough that problems sized for stepping have several tiles each way. */
export const DEFAULT_SRAM_BYTES = 16 * 1024;

export function blocksFromSram(sramBytes: number, d: number): { blockM: number; blockN: number } {
  const words = Math.floor(sramBytes / 4);
  const bc = Math.ceil(words / (4 * d));
  return { blockM: Math.max(1, Math.min(bc, d)), blockN: Math.max(1, bc) };
}

export interface Tile {
  blockM: number;
  blockN: number;
}

/** The run's tile: the one given, else the kernel's own (`kernel`), else sized from the on-chip memory. */
export function resolveBlocks(p: AttentionProblem, o: BlockOptions, kernel?: Tile): Tile {
  for (const f of ['blockM', 'blockN', 'sramBytes'] as const) {
    const v = o[f];
    if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw new ProblemError(f, `must be a positive integer, got ${v}`);
  }
  const fromSram = kernel ?? blocksFromSram(o.sramBytes ?? DEFAULT_SRAM_BYTES, p.d);
  return capBlocks(p, o.blockM ?? fromSram.blockM, o.blockN ?? fromSram.blockN);
}

export function blockCount(n: number, b: number): number {
  return Math.ceil(n / b);
}
