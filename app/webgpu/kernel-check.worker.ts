// Worker side of webgpu-test.html: engine/webgpu/kernel-checks.ts on the browser's adapter.

/// <reference lib="webworker" />
import type { CheckMessage, CheckRequest } from '../../engine/api.ts';
import { openWebGpu, runKernelChecks } from '../../engine/api-worker.ts';

declare const self: DedicatedWorkerGlobalScope;

self.onmessage = async (ev: MessageEvent<CheckRequest>) => {
  try {
    const ctx = await openWebGpu((self.navigator as Navigator & { gpu?: GPU }).gpu);
    self.postMessage((await runKernelChecks(ctx, ev.data)) satisfies CheckMessage);
  } catch (e) {
    self.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CheckMessage);
  }
};
