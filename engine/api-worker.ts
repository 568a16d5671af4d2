// The engine's side of the worker boundary: what the worker entries (app/**/*.worker.ts) run
// beside engine/api.ts — the debugger session, the WebGPU runs and their row checks, serving
// layouts and tensors read from files. Kept apart from api.ts so the page never loads it.

// The debugger worker: the session, the hardware views' schedules and exports.
export { DebuggerSession } from './debugger/session.ts';
export { backwardBuffers } from './debugger/backward-state.ts';
export { smScheduleFor } from './algorithms/schedule-registry.ts';
export { chromeTrace, scheduleJsonl } from './hw/export.ts';
export type { HwViewRequest, SmSchedule } from './hw/sm-view.ts';

// The WebGPU workers: full-size runs, their timing, and row checks against the float64 reference.
export { nominalFlops } from './core/problem.ts';
export { AttentionRun, pathElem } from './webgpu/backend.ts';
export type { RunOptions } from './webgpu/backend.ts';
export { openWebGpu } from './webgpu/device.ts';
export type { WebGpuContext } from './webgpu/device.ts';
export { checkSampledRows, hostRowErrors, sampleSites } from './webgpu/row-check.ts';
export { randomDo, runGpuBackward } from './webgpu/backward-checks.ts';
export { backwardFlops } from './webgpu/backward-run.ts';
export { sampledDqError } from './webgpu/backward-row-check.ts';
export { describeSteady, STEADY_DEFAULTS, timeSteady } from './webgpu/steady-timing.ts';
export { runKernelChecks } from './webgpu/kernel-checks.ts';

// The serving and import workers: tensors read from files, serving layouts built from them.
export { BlobSource, TensorFileError } from './io/byte-source.ts';
export { readNpy } from './io/npy.ts';
export { readSafetensor } from './io/safetensors.ts';
export type { Tensor } from './io/tensor-info.ts';
export { pagedFromTensors, pagedShape, varlenFromTensors, varlenShape } from './layouts/from-tensors.ts';
export { runServing } from './layouts/serving-run.ts';
export { importRun, listTensors } from './import/tensor-import.ts';
