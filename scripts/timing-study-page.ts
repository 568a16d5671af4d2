// The timing study (engine/bench/timing-study.ts) in a browser page, for
// `scripts/browser-gpu-bench.mjs --study`: the page's WebGPU adapter, then one JSON row per
// shape, collected in `window.timingStudy` (done: true at the end). `?quick` runs small shapes.
// A diagnostic page, not part of the app: it works on the page's own thread.

import { studyShapes, timingStudy, type StudyRow } from '../engine/bench/timing-study.ts';
import { openWebGpu, WebGpuUnavailable } from '../engine/webgpu/device.ts';

const state: { rows: (StudyRow | string)[]; done: boolean } = { rows: [], done: false };
(window as unknown as { timingStudy: typeof state }).timingStudy = state;

// A page that asks on load can find Chromium's GPU process still starting (requestAdapter null): ask again.
async function openWithRetry(): Promise<Awaited<ReturnType<typeof openWebGpu>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await openWebGpu(navigator.gpu);
    } catch (e) {
      if (!(e instanceof WebGpuUnavailable) || attempt >= 10) throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

async function main(): Promise<void> {
  try {
    const ctx = await openWithRetry();
    state.rows.push(`adapter ${ctx.adapterName}; features ${ctx.features.join(', ')}; paths ${ctx.paths.join(', ')}`);
    await timingStudy(ctx, studyShapes(ctx.paths, new URLSearchParams(location.search).has('quick')), (r) => state.rows.push(r));
  } catch (e) {
    state.rows.push(`FAILED ${e instanceof Error ? e.message : String(e)}`);
  }
  state.done = true;
}

void main();
