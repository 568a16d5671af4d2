// The engine's front door: everything app/ and content/ use of the engine, and nothing else.
// biome.json lets app/** and content/** import this module only; the worker entries
// (*.worker.ts) may also import engine/api-worker.ts, what only workers run.

// Algorithms: the registry, their descriptors, switches and tile choices.
export {
  ALGORITHMS,
  BUILT_IN_ALGORITHMS,
  DEFAULT_ALGORITHM,
  DEFAULT_COMPARISON,
  DESCRIPTORS,
  algorithmById,
  descriptorOf,
  findDescriptor,
} from './algorithms/registry.ts';
export type { AlgorithmId } from './algorithms/registry.ts';
export type { FeatureSpec, FeatureSpecs, SwitchValues } from './algorithms/features.ts';
export type { AlgorithmResult } from './algorithms/types.ts';
export { blocksFromSram } from './algorithms/blocks.ts';
export { fa3, fa3DefaultTile } from './algorithms/fa3/forward.ts';
export { SAGE_TILE, sage } from './algorithms/sage/forward.ts';
export { prepareSage } from './algorithms/sage/quant.ts';
export {
  CONFIG_FIELDS,
  defaultsFor,
  dtypeForPass,
  fixPhrase,
  hasKernel,
  misfits,
  scheduleFix,
  tilesFor,
} from './defaults/algorithm-defaults.ts';
export type { ConfigField, ProblemMasks, Replaced, WorkingConfig } from './defaults/algorithm-defaults.ts';

// The problem, its inputs, the float64 reference and the counters.
export { DEFAULT_PROBLEM, DTYPES, ProblemError, dtypeBytes, isFp8, softmaxScale, validateProblem } from './core/problem.ts';
export type { AttentionProblem, DType } from './core/problem.ts';
// The size model every entry point checks a problem against before allocating.
export { capBlocks, checkSize, formatBytes, MAX_KERNEL_TILE, problemSize, RUN_BUDGET_BYTES, SizeError } from './core/size-model.ts';
export type { ProblemSize, SizeDim, SizeLimit, SizeQuery } from './core/size-model.ts';
export { INPUT_DISTRIBUTIONS, SINK_KEYS, randomInputs } from './core/inputs.ts';
export type { AttentionInputs, InputDistribution } from './core/inputs.ts';
export { mulberry32 } from './core/random.ts';
export { referenceAttention } from './core/reference.ts';
export { MAX_AUX_TEXT, auxToText, parseAuxText } from './core/mask-aux-text.ts';
export { MASK_PRESETS, buildPreset, maskPreset, maskSpecFrom, parsePresetRef } from './core/mask-presets.ts';
export type { MaskPreset, MaskPresetParam } from './core/mask-presets.ts';
export { MaskSpecError, checkMaskSpec } from './core/mask-spec.ts';
export type { MaskSpec } from './core/mask-spec.ts';
export {
  BLOCK_EMPTY,
  BLOCK_FULL,
  BLOCK_PARTIAL,
  MAX_BLOCK_MASK_PAIRS,
  blockMask,
  elementDensity,
  tileVisibleCount,
  type ElementDensity,
} from './core/block-mask.ts';
export type { BlockMask } from './core/block-mask.ts';
export { tensorName, totalBytes } from './core/counters.ts';
export type { Counters, HbmTensor } from './core/counters.ts';

// A request, the pass it runs and running one to the end; the one conversion between a problem and the fields it is typed in.
export { FieldError, fieldsToProblem, maskFromFields, problemToFields, tileSide, wholeNumber } from './problem-fields.ts';
export type { ProblemFields } from './problem-fields.ts';
export { passBlocks, startPass } from './request.ts';
export type { LoadRequest } from './request.ts';
export { PASSES, hasBackward } from './pass.ts';
export type { Pass } from './pass.ts';
export { runToEnd } from './run.ts';
export type { BackwardEvent, BackwardPhaseKind, ForwardPhaseKind, PhaseKind, Range, SkipPhaseKind, TraceEvent } from './trace/events.ts';

// The debugger worker's protocol and what the views derive from its frames.
export type {
  Breakpoint,
  BreakpointHit,
  BreakpointSpec,
  CompareData,
  CountersRun,
  DebuggerApi,
  Frame,
  FrameUpdate,
  Granularity,
  HeadInputs,
  LoadSummary,
  Progress,
  RowHistory,
  RowHistoryEntry,
} from './debugger/protocol.ts';
export { applyUpdate } from './debugger/frames.ts';
export { describeBreakpoint } from './debugger/breakpoints.ts';
export { dqAccumulationAt } from './debugger/dq-accumulation.ts';
export type { PrecisionHead, PrecisionMarks, PrecisionResponse, PrecisionRun, TilePrecision } from './debugger/precision.ts';
export { countersCsv, diffTable, diffTableCsv, outputDifference, ratioNotes } from './compare/diff.ts';
export { SYNC_AXES } from './compare/sync.ts';
export type { SyncAxis } from './compare/sync.ts';

// The hardware model's queries.
export type { HwExportFormat } from './hw/api.ts';
export { GPUS, gpuById } from './hw/gpus/index.ts';
export type { GpuId } from './hw/gpus/index.ts';
export type { HwFeatures, ProblemShape } from './hw/model.ts';
export {
  describeFor,
  hasHardwareModel,
  hasSchedule,
  hwAlgorithmById,
  hwAlgorithmFor,
  shapeOf,
  simulateFor,
} from './algorithms/schedule-registry.ts';
export type { HwPass } from './algorithms/schedule-registry.ts';
export { liveAt, stepForClick } from './hw/sm-view.ts';
export type { HwView, MemInterval } from './hw/sm-view.ts';

// Low precision: FP8 formats, quantizers, error metrics, which algorithm takes which dtype.
export { FP8, decodeFp8, encodeFp8, roundFp8 } from './lowprec/fp8.ts';
export type { Fp8Format, Fp8Spec } from './lowprec/fp8.ts';
export { quantizeFp8Rows } from './lowprec/quantize.ts';
export { randomSigns, rotateRows } from './lowprec/incoherent.ts';
export { outputError } from './lowprec/error-metrics.ts';
export type { OutputError } from './lowprec/error-metrics.ts';
export { refusalOf } from './refusal.ts';
export type { Refusal } from './refusal.ts';

// Serving layouts (varlen, paged KV cache) and their runs.
export { DEFAULT_SERVING_FORM, SERVING_LIMITS } from './layouts/serving-form.ts';
export type { ServingForm } from './layouts/serving-form.ts';
export { generateServing } from './layouts/serving-run.ts';
export type { ServingRun, ServingStep } from './layouts/serving-run.ts';
export type { ServingHardware, ServingKernel } from './layouts/serving-hardware.ts';
export { runVarlen } from './layouts/varlen.ts';
export { runPaged } from './layouts/paged.ts';
export { runLayoutToEnd } from './layouts/sequence-runner.ts';
export { kvStagesOf, smemAt } from './layouts/smem-pages.ts';
export type { SmemBuffer } from './layouts/smem-pages.ts';

// The WebGPU runs: paths, defaults, timings.
export { PATH_LABELS } from './webgpu/device.ts';
export type { WebGpuPath } from './webgpu/device.ts';
export type { BackwardPath } from './webgpu/backward-run.ts';
export type { KernelTime } from './webgpu/timer.ts';
export type { CheckMessage, CheckRequest, KernelChoice } from './webgpu/kernel-checks.ts';
export { H200_MEASURED } from './webgpu/ceilings.ts';
export { RESOURCE_LABEL, rooflineOfRun } from './webgpu/roofline.ts';
export type { Roofline } from './webgpu/roofline.ts';
export { webgpuDefaultsFor, webgpuPathFix } from './defaults/webgpu-defaults.ts';
export type { WebGpuChange, WebGpuField, WebGpuShape } from './defaults/webgpu-defaults.ts';

// The person's tensors: files and their layouts.
export { detectLayout, guessRole } from './import/tensor-import.ts';
export type { FileListing, ImportedShape, Layout, TensorChoice, TensorImport, TensorRef } from './import/tensor-import.ts';
export type { TensorInfo } from './io/tensor-info.ts';
export { isIntegerStorage } from './io/float-codec.ts';
