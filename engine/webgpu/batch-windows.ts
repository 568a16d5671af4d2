// Batch windows: how a problem whose tensors outgrow one storage binding still runs.
//
// WebGPU caps one binding (maxStorageBufferBindingSize: 2 GiB − 4 bytes on Dawn's Vulkan
// backend, 128 MiB by default in browsers) below what one buffer may hold
// (maxBufferSize). B = 4, H = 16, N = 65536, d = 128 in f32 is 2 GiB per tensor: one
// buffer, but not one binding. The flash kernels index Q, K, V, O and LSE from the
// (batch, head) of their workgroup, and a (batch, head) only ever reads its own batch's
// K/V heads (GQA maps query head h to key head h / (Hq / Hk) of the same batch), so the
// problem splits cleanly into runs of whole batches: each dispatch binds the batches
// [b0, b0 + nb) of every tensor and sees them as batches 0 … nb − 1, with no change to
// the kernels (a head's ALiBi slope and sink depend on h, which is the same in the window).
//
// A binding's offset must be a multiple of minStorageBufferOffsetAlignment (256 bytes), so
// a window starts where Q's, K's, V's and O's batch boundaries are aligned; the windows are as
// large as the binding limit allows. LSE is exempt: with one query row (decoding) a batch of
// it is a few bytes, so its binding starts at the aligned offset below the window and the
// kernels add the difference (params.lse0, in floats) to their LSE index.

import type { AttentionProblem } from '../problem.ts';

export interface BatchWindow {
  /** First batch of the window. */
  b0: number;
  /** Batches in the window. */
  nb: number;
}

export type TensorName = 'Q' | 'K' | 'V' | 'O' | 'LSE';

/** Bytes of one batch of each tensor; inputs take `elemBytes` per element, O and LSE are f32. */
export function bytesPerBatch(p: AttentionProblem, elemBytes: number): Record<TensorName, number> {
  return {
    Q: p.hq * p.nq * p.d * elemBytes,
    K: p.hk * p.nk * p.d * elemBytes,
    V: p.hk * p.nk * p.dv * elemBytes,
    O: p.hq * p.nq * p.dv * 4,
    LSE: p.hq * p.nq * 4,
  };
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/** Bytes for messages: GiB, MiB or KiB. */
export function formatBytes(b: number): string {
  if (b >= 1024 ** 3) return `${(b / 1024 ** 3).toFixed(2)} GiB`;
  if (b >= 1024 ** 2) return `${(b / 1024 ** 2).toFixed(1)} MiB`;
  return `${(b / 1024).toFixed(1)} KiB`;
}

/**
 * The windows a problem runs in: one covering every batch when each tensor fits one
 * binding; otherwise the fewest runs of whole batches whose slices fit and start aligned.
 * Returns a message instead where no such split exists.
 */
export function planBatchWindows(
  p: AttentionProblem,
  elemBytes: number,
  maxBinding: number,
  offsetAlign: number,
): BatchWindow[] | { error: string } {
  const per = bytesPerBatch(p, elemBytes);
  const names = Object.keys(per) as TensorName[];
  if (names.every((t) => per[t] * p.batch <= maxBinding)) return [{ b0: 0, nb: p.batch }];
  const widest = names.reduce((a, t) => (per[t] > per[a] ? t : a));
  const fit = Math.floor(maxBinding / per[widest]);
  if (fit < 1) {
    return {
      error: `one batch of ${widest} (${p.hq} query heads × ${widest === 'K' || widest === 'V' ? p.nk : p.nq} rows) needs ${formatBytes(per[widest])} in one binding; this adapter binds at most ${formatBytes(maxBinding)}. Use fewer heads or a shorter sequence.`,
    };
  }
  // Every window must start on an aligned byte offset of every tensor but LSE (see the header).
  const step = names.filter((t) => t !== 'LSE').reduce((acc, t) => lcm(acc, offsetAlign / gcd(per[t], offsetAlign)), 1);
  const nb = Math.floor(fit / step) * step;
  if (nb < 1) {
    return {
      error: `the tensors need ${Math.ceil(p.batch / fit)} bindings of whole batches, but their batch boundaries are not ${offsetAlign}-byte aligned (bytes per batch: ${names.filter((t) => t !== 'LSE').map((t) => `${t} ${per[t]}`).join(', ')}). Use sequence lengths that are multiples of 64.`,
    };
  }
  const windows: BatchWindow[] = [];
  for (let b0 = 0; b0 < p.batch; b0 += nb) windows.push({ b0, nb: Math.min(nb, p.batch - b0) });
  return windows;
}

/** The binding of window w's LSE: from the aligned offset at or below its start; `lse0` = floats skipped. */
export function lseBinding(p: AttentionProblem, w: BatchWindow, offsetAlign: number): { offset: number; size: number; lse0: number } {
  const per = p.hq * p.nq * 4;
  const start = w.b0 * per;
  const offset = Math.floor(start / offsetAlign) * offsetAlign;
  return { offset, size: start + w.nb * per - offset, lse0: (start - offset) / 4 };
}
