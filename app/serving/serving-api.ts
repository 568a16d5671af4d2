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
