// Starts a debugger worker and hands back its typed Comlink proxy. A crash (an uncaught
// error inside the worker, or the worker failing to load) is reported once through
// onCrash; the caller decides how to restart (see pane/useDebuggerSession.ts).

import * as Comlink from 'comlink';
import type { DebuggerApi, Progress } from '../../engine/api.ts';

export interface DebuggerClient {
  api: Comlink.Remote<DebuggerApi>;
  /** Wraps a progress callback so it can be passed to the worker. */
  progress(fn: Progress): Progress;
  dispose(): void;
}

export function startDebuggerWorker(onCrash: (message: string) => void): DebuggerClient {
  const worker = new Worker(new URL('./debugger.worker.ts', import.meta.url), { type: 'module', name: 'flashscope-debugger' });
  let crashed = false;
  const crash = (message: string) => {
    if (crashed) return;
    crashed = true;
    onCrash(message);
  };
  worker.addEventListener('error', (e) => {
    // Handled here and shown in the pane; keep it out of the console as an unhandled error.
    e.preventDefault();
    crash(e.message || 'the debugger worker stopped with an error');
  });
  worker.addEventListener('messageerror', () => crash('the debugger worker sent a message that could not be read'));
  const api = Comlink.wrap<DebuggerApi>(worker);
  return {
    api,
    progress: (fn) => Comlink.proxy(fn),
    dispose: () => {
      crashed = true;
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
