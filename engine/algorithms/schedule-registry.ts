// The hardware schedules by algorithm id: each descriptor declares its forward and backward
// schedule (engine/algorithms/<id>/descriptor.ts), and this is where an id finds its own. The
// hardware model (engine/hw/) is given the schedule and never looks algorithms up; the UI, the
// CLI, compare and the defaults ask here.

import type { TraceEvent } from '../trace/events.ts';
import type { ResourceSheet } from '../hw/events.ts';
import type { HwAlgorithm, HwFeatures, ProblemShape } from '../hw/model.ts';
import { gpuById } from '../hw/gpus/index.ts';
import { checkArch, describeWith, scheduleWith, simulateWith, type HwPass, type HwSchedule } from '../hw/registry.ts';
import type { SimulateResult } from '../hw/simulate.ts';
import type { HwViewRequest, SmSchedule } from '../hw/sm-view.ts';
import { forwardSmSchedule } from '../hw/step-map.ts';
import { backwardSmSchedule } from '../hw/step-map-bwd.ts';
import { hardwareTraceLines } from '../hw/trace-lines.ts';
import { DESCRIPTORS, findDescriptor } from './registry.ts';

export { resolveFeatures, shapeOf, type HwPass, type HwSchedule } from '../hw/registry.ts';

/** The schedule `id` declares for one pass, if any; a backward schedule may be another id's. */
export function scheduleOf(id: string, pass: HwPass): HwAlgorithm | undefined {
  const d = findDescriptor(id);
  return pass === 'forward' ? d?.schedule : d?.backwardSchedule;
}

const unique = (xs: (HwAlgorithm | undefined)[]) => [...new Set(xs.filter((x): x is HwAlgorithm => x !== undefined))];

/** The forward schedules of the built-in algorithms, in menu order. */
export const HW_ALGORITHMS: readonly HwAlgorithm[] = unique(DESCRIPTORS.map((d) => d.schedule));

/** The backward schedules, each under the id of the numeric algorithm whose backward it runs. */
export const HW_BACKWARD_ALGORITHMS: readonly HwAlgorithm[] = unique(DESCRIPTORS.map((d) => d.backwardSchedule));

/** The schedule of `id` for one pass; throws naming the ids that have one. */
export function hwAlgorithmFor(id: string, pass: HwPass = 'forward'): HwAlgorithm {
  if (pass === 'forward') return hwAlgorithmById(id);
  const a = scheduleOf(id, 'backward');
  if (a) return a;
  const aliases = DESCRIPTORS.filter((d) => d.backwardSchedule && d.backwardSchedule.id !== d.id).map(
    (d) => `${d.id} runs the ${d.backwardSchedule!.id} one`,
  );
  throw new Error(
    `no backward hardware schedule for '${id}'; backward schedules: ${HW_BACKWARD_ALGORITHMS.map((x) => x.id).join(', ')}${aliases.length ? ` (${aliases.join('; ')})` : ''}`,
  );
}

/** True when `id` has a schedule for that pass. */
export function hasSchedule(id: string, pass: HwPass): boolean {
  return scheduleOf(id, pass) !== undefined;
}

/** Hardware algorithm ids equal the numeric ones for the kernels that have a schedule (backward: fa4, fa3, fa2). */
export function hasHardwareModel(algorithm: string, pass: HwPass = 'forward'): boolean {
  return hasSchedule(algorithm, pass);
}

/** True for algorithm ids that have a forward hardware schedule (trace can route them to it). */
export function isHardwareAlgorithm(id: string): boolean {
  return HW_ALGORITHMS.some((a) => a.id === id);
}

export function hwAlgorithmById(id: string): HwAlgorithm {
  const a = scheduleOf(id, 'forward');
  if (!a) {
    // A step algorithm without a kernel schedule (standard, fa1, fa2, sage) is named as such rather than as unknown.
    const numericOnly = findDescriptor(id)
      ? ` (${id} has no hardware schedule: FlashScope models its numbers in run and trace, not its timing)`
      : '';
    const known = DESCRIPTORS.filter((d) => d.schedule).map((d) => d.id);
    throw new Error(`unknown hardware algorithm '${id}'${numericOnly}; known: ${known.join(', ')}`);
  }
  return a;
}

export function describeFor(
  algoId: string,
  gpuId: string,
  shape: ProblemShape,
  given: Partial<HwFeatures> = {},
  pass: HwPass = 'forward',
): ResourceSheet {
  return describeWith(hwAlgorithmFor(algoId, pass), gpuId, shape, given);
}

export function simulateFor(
  algoId: string,
  gpuId: string,
  shape: ProblemShape,
  given: Partial<HwFeatures> = {},
  pass: HwPass = 'forward',
): SimulateResult {
  return simulateWith(hwAlgorithmFor(algoId, pass), gpuId, shape, given);
}

/** The tile the numeric stepper steps to match the kernel on this shape: none where the algorithm's own tile already does. */
export function kernelStepTile(
  algoId: string,
  gpuId: string,
  shape: ProblemShape,
  pass: HwPass = 'forward',
): { blockN: number } | undefined {
  const algo = hwAlgorithmFor(algoId, pass);
  checkArch(algo, gpuById(gpuId));
  return algo.kvTile?.(shape);
}

/** One SM's schedule with every timeline and memory event: what the hardware views draw. */
export function scheduleFor(
  algoId: string,
  gpuId: string,
  shape: ProblemShape,
  given: Partial<HwFeatures> = {},
  pass: HwPass = 'forward',
): HwSchedule {
  return scheduleWith(hwAlgorithmFor(algoId, pass), gpuId, shape, given, pass);
}

/** The schedule of the SM that runs `events[req.step]`'s CTA (or column block, backward), and the step ↔ cycle map. */
export function smScheduleFor(req: HwViewRequest, events: readonly TraceEvent[]): SmSchedule {
  if (req.pass === 'backward') return backwardSmSchedule(hwAlgorithmFor(req.algorithm, 'backward'), req, events);
  return forwardSmSchedule(hwAlgorithmById(req.algorithm), req, events);
}

/** JSONL lines of one SM's schedule (the hardware part of `trace`), every line tagged with the algorithm id. */
export function hardwareTraceLinesFor(
  algo: string,
  gpu: string,
  shape: ProblemShape,
  features: Partial<HwFeatures>,
  pass: HwPass = 'forward',
): string[] {
  return hardwareTraceLines(scheduleFor(algo, gpu, shape, features, pass));
}
