// The serving-layouts worker's contract and its main-thread client (started on first use).
// Runs cross as structured clones; errors arrive as rejections whose message names the
// field or tensor (ProblemError, TensorFileError).

import * as Comlink from 'comlink';
import type { ServingForm, ServingRun } from '../../engine/api.ts';

/** Which file holds which tensor, for a run on the person's files. */
export interface ServingFiles {
  layout: 'varlen' | 'paged';
  /** varlen: q, k, v, cu_seqlens_q, cu_seqlens_k; paged: q, k_cache, v_cache, block_table, cache_seqlens. */
  files: Record<string, File>;
  /** paged: memory order of q. */
  qLayout: 'bnhd' | 'bhnd';
  causal: boolean;
  algorithm: string;
  splits: number;
}

export interface ServingApi {
  run(form: ServingForm): Promise<ServingRun>;
  runFiles(req: ServingFiles): Promise<ServingRun>;
}

let remote: Comlink.Remote<ServingApi> | undefined;

export function servingWorker(): Comlink.Remote<ServingApi> {
  if (!remote) {
    const w = new Worker(new URL('./serving.worker.ts', import.meta.url), { type: 'module', name: 'flashscope-serving' });
    w.addEventListener('error', (e) => {
      e.preventDefault();
      remote = undefined;
    });
    remote = Comlink.wrap<ServingApi>(w);
  }
  return remote;
}

export const VARLEN_ROLES = ['q', 'k', 'v', 'cu_seqlens_q', 'cu_seqlens_k'] as const;
export const PAGED_ROLES = ['q', 'k_cache', 'v_cache', 'block_table', 'cache_seqlens'] as const;

/** The largest tensor file the serving page reads: well above a pool at the page's limits in float64. */
export const MAX_SERVING_FILE_BYTES = 64 * 2 ** 20;

/** Why a chosen file is refused before it is read (too large to hold), or undefined. */
export function servingFileRefusal(role: string, f: { name: string; size: number }): string | undefined {
  if (f.size <= MAX_SERVING_FILE_BYTES) return undefined;
  const mb = (x: number) => (x / 2 ** 20).toFixed(1);
  return `${f.name} (${role}): ${mb(f.size)} MB, more than the ${mb(MAX_SERVING_FILE_BYTES)} MB the Serving page reads from one file; use fewer sequences, shorter caches or fewer heads`;
}
