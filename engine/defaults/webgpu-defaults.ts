// Where each WebGPU path starts (the WebGPU panel's kernel choice), and what to change when
// the chosen path cannot take the problem. The flash paths start on the benchmark's headline
// shape, flash-decoding on its decoding shape (one query row against a long cache); the
// person's own values are kept where the path takes them.

import type { ProblemDims } from '../core/problem.ts';
import type { WebGpuPath } from '../webgpu/device.ts';

/** The sizes the WebGPU panel's form sets. */
export type WebGpuShape = ProblemDims;

export type WebGpuField = keyof WebGpuShape;

const HEADLINE: WebGpuShape = { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 64, dv: 64 };

export const WEBGPU_PATH_DEFAULTS: Readonly<Record<WebGpuPath, WebGpuShape>> = {
  'flash-f32': HEADLINE,
  'flash-f16': HEADLINE,
  'flash-subgroups': HEADLINE,
  'flash-matrix': HEADLINE,
  // S and P of one head are materialized: 4096² fp32 scores are 64 MiB, within the
  // 128 MiB every adapter binds.
  standard: HEADLINE,
  decode: { batch: 4, hq: 16, hk: 16, nq: 1, nk: 32768, d: 128, dv: 128 },
};

export interface WebGpuLimits {
  /** Bytes one storage binding may hold. */
  maxStorageBinding: number;
}

export interface WebGpuChange {
  field: WebGpuField;
  to: number;
  why: string;
}

/**
 * What keeps `path` from running this shape, as the changes that would let it: standard
 * attention binds one head's Nq × Nk fp32 score matrix whole, so Nq and Nk come down to the
 * largest power of two whose square fits (the flash paths run any size, in windows).
 */
export function webgpuPathFix(path: WebGpuPath, s: WebGpuShape, limits: WebGpuLimits): WebGpuChange[] {
  if (path !== 'standard') return [];
  const bytes = s.nq * s.nk * 4;
  if (bytes <= limits.maxStorageBinding) return [];
  const side = 2 ** Math.floor(Math.log2(Math.sqrt(limits.maxStorageBinding / 4)));
  const why = `standard attention binds one head's ${s.nq}×${s.nk} fp32 score matrix (${bytes} bytes); this adapter binds at most ${limits.maxStorageBinding}`;
  const out: WebGpuChange[] = [];
  if (s.nq > side) out.push({ field: 'nq', to: side, why });
  if (s.nk > side) out.push({ field: 'nk', to: side, why });
  return out;
}

/** The shape a path's choice brings: the person's values (`touched`) where the path takes them, the path's own elsewhere. */
export function webgpuDefaultsFor(
  path: WebGpuPath,
  current: Partial<WebGpuShape>,
  touched: Iterable<WebGpuField>,
  limits: WebGpuLimits,
): WebGpuShape {
  const s: WebGpuShape = { ...WEBGPU_PATH_DEFAULTS[path] };
  for (const f of touched) {
    const v = current[f];
    if (v !== undefined && Number.isInteger(v) && v > 0) s[f] = v;
  }
  if (s.hq % s.hk !== 0) s.hk = s.hq;
  for (const c of webgpuPathFix(path, s, limits)) s[c.field] = c.to;
  return s;
}
