// The import worker's contract, and a main-thread client that starts the worker on first
// use. Errors thrown in the worker (ImportError, TensorFileError) arrive as rejections
// whose message names the file, the tensor and what is wrong.

import * as Comlink from 'comlink';
import type { FileListing, ImportedShape, TensorChoice, AttentionProblem } from '../../engine/api.ts';

export type InspectedFile = { ok: true; listing: FileListing } | { ok: false; name: string; size: number; message: string };

export interface ImportApi {
  inspect(files: File[]): Promise<InspectedFile[]>;
  /** Validates a choice on the real bytes (shapes, ranges, finite values) without touching any session. */
  check(files: File[], choice: TensorChoice, base: AttentionProblem): Promise<{ problem: AttentionProblem; full: ImportedShape }>;
}

let remote: Comlink.Remote<ImportApi> | undefined;

export function importWorker(): Comlink.Remote<ImportApi> {
  if (!remote) {
    const w = new Worker(new URL('./import.worker.ts', import.meta.url), { type: 'module', name: 'flashscope-import' });
    w.addEventListener('error', (e) => {
      e.preventDefault();
      remote = undefined;
    });
    remote = Comlink.wrap<ImportApi>(w);
  }
  return remote;
}
