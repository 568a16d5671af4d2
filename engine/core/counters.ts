// Work and traffic counters. Every algorithm reports the same set, so algorithms can be
// compared line by line, and the totals must equal each algorithm's closed-form counts.

/**
 * Tensors that move between HBM and the chip. S and P appear only for standard attention;
 * the serving layouts (engine/layouts/) add their int32 metadata: the sequence offsets of a
 * packed batch, and the block table and cache lengths of a paged K/V cache.
 */
export type HbmTensor =
  | 'Q'
  | 'K'
  | 'V'
  | 'O'
  | 'S'
  | 'P'
  | 'l'
  | 'm'
  | 'LSE'
  | 'Opartial'
  | 'LSEpartial'
  // The backward pass: the incoming gradient, D = rowsum(dO ∘ O), the gradients, the fp32
  // dQ accumulator, and standard attention's materialized dP and dS.
  | 'dO'
  | 'D'
  | 'dQ'
  | 'dK'
  | 'dV'
  | 'dQaccum'
  | 'dP'
  | 'dS'
  | 'cu_seqlens_q'
  | 'cu_seqlens_k'
  | 'block_table'
  | 'cache_seqlens';

/** A tensor's name as a person reads it: the running sum's key is 'l', its symbol ℓ. */
export function tensorName(t: string): string {
  return t === 'l' ? 'ℓ' : t;
}

/**
 * What the block mask spared a run: empty K/V tiles skipped unloaded, full ones computed with
 * no mask work, and the mask evaluations the partial tiles needed. Present only on runs that
 * step through a block mask.
 */
export interface SparsityTally {
  tilesSkipped: number;
  tilesFull: number;
  tilesPartial: number;
  /** Matmul FLOPs (Q·Kᵀ and P·V) the skipped tiles would have cost. */
  skippedFlops: number;
  /** K and V bytes the skipped tiles would have loaded. */
  skippedBytes: number;
  /** mask_mod / causal / window checks made inside tiles (rows × cols of every partial tile). */
  maskEvals: number;
}

export function emptySparsity(): SparsityTally {
  return { tilesSkipped: 0, tilesFull: 0, tilesPartial: 0, skippedFlops: 0, skippedBytes: 0, maskEvals: 0 };
}

export interface Counters {
  hbmRead: Partial<Record<HbmTensor, number>>;
  hbmWritten: Partial<Record<HbmTensor, number>>;
  /** 2·M·N·K per matmul. */
  matmulFlops: number;
  /** max, subtract, exp, add, rescale multiplies, divisions: one per element operation. */
  nonMatmulFlops: number;
  /** Number of exponentials evaluated. */
  expCount: number;
  /** Row rescales of the running output (one per row whose accumulator is multiplied by a factor). */
  rescaleCount: number;
  /** Backward pass: fp32 elements added atomically into HBM (the dQ accumulator). */
  atomicAdds: number;
  /** Trace steps (events) the algorithm produced, counted whether tracing is on or off. */
  steps: number;
  sparsity?: SparsityTally;
}

export function emptyCounters(): Counters {
  return { hbmRead: {}, hbmWritten: {}, matmulFlops: 0, nonMatmulFlops: 0, expCount: 0, rescaleCount: 0, atomicAdds: 0, steps: 0 };
}

/** A change to the counters carried by one trace event. Fields absent mean zero. */
export interface CounterDelta {
  hbmRead?: Partial<Record<HbmTensor, number>>;
  hbmWritten?: Partial<Record<HbmTensor, number>>;
  matmulFlops?: number;
  nonMatmulFlops?: number;
  expCount?: number;
  rescaleCount?: number;
  atomicAdds?: number;
  sparsity?: Partial<SparsityTally>;
}

export function addDelta(c: Counters, d: CounterDelta): void {
  if (d.hbmRead) for (const [t, n] of Object.entries(d.hbmRead)) c.hbmRead[t as HbmTensor] = (c.hbmRead[t as HbmTensor] ?? 0) + n;
  if (d.hbmWritten)
    for (const [t, n] of Object.entries(d.hbmWritten)) c.hbmWritten[t as HbmTensor] = (c.hbmWritten[t as HbmTensor] ?? 0) + n;
  c.matmulFlops += d.matmulFlops ?? 0;
  c.nonMatmulFlops += d.nonMatmulFlops ?? 0;
  c.expCount += d.expCount ?? 0;
  c.rescaleCount += d.rescaleCount ?? 0;
  c.atomicAdds += d.atomicAdds ?? 0;
  if (d.sparsity) {
    const t = (c.sparsity ??= emptySparsity());
    for (const [k, n] of Object.entries(d.sparsity)) t[k as keyof SparsityTally] += n ?? 0;
  }
}

export function totalBytes(m: Partial<Record<HbmTensor, number>>): number {
  let s = 0;
  for (const n of Object.values(m)) s += n ?? 0;
  return s;
}

/** The snake_case form the CLI writes to stats.json. */
export function countersToStats(c: Counters): Record<string, unknown> {
  return {
    hbm_bytes_read: totalBytes(c.hbmRead),
    hbm_bytes_written: totalBytes(c.hbmWritten),
    hbm_bytes_read_by_tensor: c.hbmRead,
    hbm_bytes_written_by_tensor: c.hbmWritten,
    matmul_flops: c.matmulFlops,
    non_matmul_flops: c.nonMatmulFlops,
    exp_count: c.expCount,
    rescale_count: c.rescaleCount,
    atomic_adds: c.atomicAdds,
    steps: c.steps,
    ...(c.sparsity && {
      tiles_skipped: c.sparsity.tilesSkipped,
      tiles_full: c.sparsity.tilesFull,
      tiles_partial: c.sparsity.tilesPartial,
      skipped_flops: c.sparsity.skippedFlops,
      skipped_bytes: c.sparsity.skippedBytes,
      mask_evals: c.sparsity.maskEvals,
    }),
  };
}
