// The hardware models' public surface, for the UI and the CLI.
export type { MemoryEvent, ResourceSheet, RoleInfo, TimelineEvent, MemorySpace, MemoryAction } from './events.ts';
export { GPUS, gpuById, type GpuId, type GpuSpec } from './gpus/index.ts';
export { DEFAULT_FEATURES, type HwFeatures, type ProblemShape } from './model.ts';
export {
  HW_ALGORITHMS,
  describeFor,
  hwAlgorithmById,
  resolveFeatures,
  scheduleFor,
  shapeOf,
  simulateFor,
  type HwSchedule,
} from './registry.ts';
export { FitError, type SimulateResult } from './simulate.ts';
export { DeadlockError, PhaseOverrunError } from './scheduler.ts';
export { memoryViolations } from './memory-check.ts';
export { isHardwareAlgorithm } from './trace-lines.ts';
export { fa4LoadOrder } from '../algorithms/fa4/schedule.ts';
