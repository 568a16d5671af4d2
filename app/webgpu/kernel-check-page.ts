// webgpu-test.html: runs WebGPU kernel paths on the small variant problems
// (engine/webgpu/variants.ts) in a dedicated worker and compares each result with the
// float64 reference (engine/core/reference.ts). Query: ?path=flash-f32 (one path; default all
// paths the adapter offers) &kernel=tiled|tiled-small|row-wide (which flash kernel the
// f32/subgroup paths run, see engine/webgpu/kernel-checks.ts; `default` or absent: the backend's
// choice) or windows (the batch-window problems, one batch per binding); several,
// comma-separated, run in turn on one device, so kernels they share compile once; &probe: only which paths the adapter offers. Results land in
// window.__kernelChecks and in #out, for e2e/webgpu-kernels.spec.ts.

import type { CheckMessage, CheckRequest, KernelChoice } from '../../engine/api.ts';

declare global {
  interface Window {
    __kernelChecks?: CheckMessage;
  }
}

const params = new URLSearchParams(location.search);
const w = new Worker(new URL('./kernel-check.worker.ts', import.meta.url), { type: 'module' });
w.onmessage = (ev: MessageEvent<CheckMessage>) => {
  window.__kernelChecks = ev.data;
  document.getElementById('out')!.textContent = JSON.stringify(ev.data, null, 1);
};
const kernel = params.get('kernel');
const kernels = params.has('probe') ? [] : (kernel ?? 'default').split(',').map((k) => (k === 'default' ? null : (k as KernelChoice)));
w.postMessage({ path: params.get('path'), kernels } satisfies CheckRequest);
