// Worker side of webgpu-test.html: engine/webgpu/kernel-checks.ts on the browser's adapter.

/// <reference lib="webworker" />
import { openWebGpu } from '../../engine/webgpu/device.ts';
import { type CheckMessage, type CheckRequest, runKernelChecks } from '../../engine/webgpu/kernel-checks.ts';

declare const self: DedicatedWorkerGlobalScope;

self.onmessage = async (ev: MessageEvent<CheckRequest>) => {
  try {
    const ctx = await openWebGpu((self.navigator as Navigator & { gpu?: GPU }).gpu);
    self.postMessage((await runKernelChecks(ctx, ev.data)) satisfies CheckMessage);
  } catch (e) {
    self.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CheckMessage);
  }
};
