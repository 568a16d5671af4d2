// Starts the WebGPU worker and hands back its typed Comlink proxy, as app/worker/client.ts
// does for the debugger's. Cancelling a run = disposing of the worker (the GPU work goes
// with it) and starting a new one.

import * as Comlink from 'comlink';
import type { RunProgress, WebGpuApi } from './protocol.ts';

export interface WebGpuClient {
  api: Comlink.Remote<WebGpuApi>;
  /** Wraps a progress callback so it can be passed to the worker. */
  progress(fn: RunProgress): RunProgress;
  dispose(): void;
}

export function startWebGpuWorker(onCrash: (message: string) => void): WebGpuClient {
  const worker = new Worker(new URL('./webgpu.worker.ts', import.meta.url), { type: 'module' });
  worker.onerror = (e) => onCrash(e.message || 'unknown error');
  const api = Comlink.wrap<WebGpuApi>(worker);
  return {
    api,
    progress: (fn) => Comlink.proxy(fn),
    dispose: () => {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
