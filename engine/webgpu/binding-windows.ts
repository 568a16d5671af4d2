// Windows: how a problem whose tensors outgrow one storage binding still runs.
//
// WebGPU caps one binding (maxStorageBufferBindingSize: 2 GiB − 4 bytes on Dawn's Vulkan
// backend, 128 MiB by default in browsers) below what one buffer may hold
// (maxBufferSize). B = 4, H = 16, N = 65536, d = 128 in f32 is 2 GiB per tensor: one
// buffer, but not one binding. Every tensor is laid out as rows of (batch, head) — Q, O and
// LSE by query head, K and V by key head — and a query head only reads its own key head
// (GQA maps query head h of batch b to key head h / (Hq / Hk) of the same batch). So a
// problem splits into windows of consecutive query heads that cover whole key-head groups:
// each dispatch binds the window's slices of Q, K, V, O and LSE and sees them as heads
// 0 … n − 1; only the score modifiers (ALiBi slope, sink) need the head's place in the
// batch, which params.head0 — the window's first (batch, query head) row — gives back.
//
// Windows are runs of whole batches where one batch fits a binding (fewest dispatches), and
// runs of heads inside each batch otherwise (B = 1, H = 128, N = 65536, d = 64 in f32).
//
// A binding's offset must be a multiple of minStorageBufferOffsetAlignment (256 bytes), so
// a window starts where Q's, K's, V's and O's rows are aligned. LSE is exempt: with one
// query row (decoding) a head of it is 4 bytes, so its binding starts at the aligned offset
// below the window and the kernels add the difference (params.lse0, in floats).

import type { AttentionProblem } from '../core/problem.ts';

/** Query heads [b0·hq + h0, b0·hq + h0 + nb·nh) of the (batch, head) rows: nh = hq for whole batches, nb = 1 otherwise. */
export interface BindingWindow {
  b0: number;
  nb: number;
  h0: number;
  nh: number;
}

export type TensorName = 'Q' | 'K' | 'V' | 'O' | 'LSE';
const ALIGNED: TensorName[] = ['Q', 'K', 'V', 'O'];

/** Bytes of one batch of each tensor; inputs take `elemBytes` per element, O and LSE are f32. */
export function bytesPerBatch(p: AttentionProblem, elemBytes: number): Record<TensorName, number> {
  const h = bytesPerHead(p, elemBytes);
  return { Q: p.hq * h.Q, K: p.hk * h.K, V: p.hk * h.V, O: p.hq * h.O, LSE: p.hq * h.LSE };
}

/** Bytes of one head's row of each tensor (a key head for K and V). */
export function bytesPerHead(p: AttentionProblem, elemBytes: number): Record<TensorName, number> {
  return { Q: p.nq * p.d * elemBytes, K: p.nk * p.d * elemBytes, V: p.nk * p.dv * elemBytes, O: p.nq * p.dv * 4, LSE: p.nq * 4 };
}

/** Window w's byte range of tensor t. */
export function windowRange(p: AttentionProblem, elemBytes: number, w: BindingWindow, t: TensorName): { start: number; bytes: number } {
  const row = bytesPerHead(p, elemBytes)[t];
  const kv = t === 'K' || t === 'V';
  const g = p.hq / p.hk;
  const first = kv ? w.b0 * p.hk + w.h0 / g : w.b0 * p.hq + w.h0;
  const count = kv ? (w.nb * w.nh) / g : w.nb * w.nh;
  return { start: first * row, bytes: count * row };
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
 * The windows a problem runs in: one covering everything when each tensor fits one binding;
 * else the fewest runs of whole batches whose slices fit and start aligned; else runs of
 * whole key-head groups inside each batch. Returns a message where no split exists.
 */
export function planWindows(
  p: AttentionProblem,
  elemBytes: number,
  maxBinding: number,
  offsetAlign: number,
): BindingWindow[] | { error: string } {
  const per = bytesPerBatch(p, elemBytes);
  const all: TensorName[] = [...ALIGNED, 'LSE'];
  if (all.every((t) => per[t] * p.batch <= maxBinding)) return [{ b0: 0, nb: p.batch, h0: 0, nh: p.hq }];
  const fit = Math.floor(maxBinding / Math.max(...all.map((t) => per[t])));
  // Every window must start on an aligned byte offset of Q, K, V and O (see the header).
  const step = ALIGNED.reduce((acc, t) => lcm(acc, offsetAlign / gcd(per[t], offsetAlign)), 1);
  const nb = Math.floor(fit / step) * step;
  if (nb >= 1) {
    const windows: BindingWindow[] = [];
    for (let b0 = 0; b0 < p.batch; b0 += nb) windows.push({ b0, nb: Math.min(nb, p.batch - b0), h0: 0, nh: p.hq });
    return windows;
  }
  return planHeadWindows(p, elemBytes, maxBinding, offsetAlign);
}

function planHeadWindows(
  p: AttentionProblem,
  elemBytes: number,
  maxBinding: number,
  offsetAlign: number,
): BindingWindow[] | { error: string } {
  const g = p.hq / p.hk;
  const head = bytesPerHead(p, elemBytes);
  const fits = (nh: number) => nh * Math.max(head.Q, head.O, head.LSE) <= maxBinding && (nh / g) * Math.max(head.K, head.V) <= maxBinding;
  if (!fits(g)) {
    // What one key head's group needs of each tensor; the message names the largest.
    const need: [TensorName, number][] = [
      ['Q', g * head.Q],
      ['O', g * head.O],
      ['K', head.K],
      ['V', head.V],
    ];
    const [t, bytes] = need.reduce((a, b) => (b[1] > a[1] ? b : a));
    return {
      error: `one key head's share of ${t} (${g} query head${g > 1 ? 's' : ''} × ${t === 'K' || t === 'V' ? p.nk : p.nq} rows) needs ${formatBytes(bytes)} in one binding; this adapter binds at most ${formatBytes(maxBinding)}. Use a shorter sequence or a smaller head dimension.`,
    };
  }
  for (let nh = Math.floor(p.hq / g) * g; nh >= g; nh -= g) {
    if (!fits(nh)) continue;
    const windows: BindingWindow[] = [];
    for (let b0 = 0; b0 < p.batch; b0++) for (let h0 = 0; h0 < p.hq; h0 += nh) windows.push({ b0, nb: 1, h0, nh: Math.min(nh, p.hq - h0) });
    if (windows.every((w) => ALIGNED.every((t) => windowRange(p, elemBytes, w, t).start % offsetAlign === 0))) return windows;
  }
  return {
    error: `the tensors need bindings of fewer heads than a batch, but no split of the heads starts every binding on a ${offsetAlign}-byte step (bytes per head: ${ALIGNED.map((t) => `${t} ${head[t]}`).join(', ')}). Use sequence lengths that are multiples of 64.`,
  };
}

/** The binding of window w's LSE: from the aligned offset at or below its start; `lse0` = floats skipped. */
export function lseBinding(p: AttentionProblem, w: BindingWindow, offsetAlign: number): { offset: number; size: number; lse0: number } {
  const { start, bytes } = windowRange(p, 4, w, 'LSE');
  const offset = Math.floor(start / offsetAlign) * offsetAlign;
  return { offset, size: start + bytes - offset, lse0: (start - offset) / 4 };
}
