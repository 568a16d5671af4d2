// The worker-side half of compare mode: error against the float64 reference, the hardware
// model's prediction and the per-step simulated times, for one loaded run. Runs in the
// debugger worker (never on the main thread): the reference and the scheduler are the
// expensive parts.

import { gpuById } from '../hw/gpus/index.ts';
import { featureKeysOf } from '../hw/model.ts';
import { hasSchedule, hwAlgorithmFor, scheduleFor, shapeOf, simulateFor } from '../algorithms/schedule-registry.ts';
import type { HwFeatures } from '../hw/model.ts';
import { randomInputs, type AttentionInputs } from '../core/inputs.ts';
import { storageDtype, type AttentionProblem } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import type { TraceEvent } from '../trace/events.ts';
import type { CompareData } from '../debugger/protocol.ts';
import type { LoadRequest } from '../request.ts';
import type { HwViewRequest } from '../hw/sm-view.ts';
import { errorStats, type Prediction } from './diff.ts';
import { stepTimes } from './sync.ts';
import { addDelta, emptyCounters } from '../core/counters.ts';
import { referenceBackward } from '../backward/reference-backward.ts';

/** A backward run's gradients and the dO they came from. */
export interface RunGradients {
  dO: Float32Array;
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
}

function concat(...parts: ArrayLike<number>[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p as ArrayLike<number>, at);
    at += p.length;
  }
  return out;
}

/**
 * The hardware model's switches that the run's features name (FA3 ping-pong, FA4 lazy rescale,
 * flash-decoding's split count, …) for the run's pass; undefined when that pass has no schedule.
 */
export function runHardwareSwitches(req: Pick<LoadRequest, 'algorithm' | 'features' | 'pass'>): Partial<HwFeatures> | undefined {
  const pass = req.pass === 'backward' ? 'backward' : 'forward';
  if (!hasSchedule(req.algorithm, pass)) return undefined;
  const out: Partial<HwFeatures> = {};
  for (const key of featureKeysOf(hwAlgorithmFor(req.algorithm, pass))) {
    const v = req.features?.[key];
    if (v !== undefined) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

/**
 * A hardware view of a loaded run: the run's own problem (Hq/Hk, window, softcap, mask, dtype as
 * stepped) and its kernel switches, under the switches the view itself sets.
 */
export function runHwViewRequest(req: LoadRequest, problem: AttentionProblem, view: HwViewRequest): HwViewRequest {
  return { ...view, problem, features: { ...runHardwareSwitches({ ...req, pass: view.pass }), ...view.features } };
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export function predictionFor(req: LoadRequest, problem: AttentionProblem, gpu: string): Prediction {
  if (req.pass === 'backward') return backwardPrediction(req, problem, gpu);
  const f = runHardwareSwitches(req);
  if (!f) return { gpu, reason: `no hardware model for ${req.algorithm}` };
  try {
    const r = simulateFor(req.algorithm, gpu, shapeOf(problem), f);
    return { gpu, timeUs: r.time_us, tflops: r.tflops, bound: r.bound };
  } catch (e) {
    return { gpu, reason: message(e) };
  }
}

/** The backward kernel's predicted time (FA3 on SM90, FA2's SM80 kernel), TFLOP/s as 2.5 × the forward's FLOPs. */
function backwardPrediction(req: LoadRequest, problem: AttentionProblem, gpu: string): Prediction {
  const f = runHardwareSwitches(req);
  if (!f) return { gpu, reason: `no hardware model of the ${req.algorithm} backward` };
  try {
    const r = simulateFor(req.algorithm, gpu, shapeOf(problem), f, 'backward');
    return { gpu, timeUs: r.time_us, tflops: r.tflops, bound: r.bound };
  } catch (e) {
    return { gpu, reason: message(e) };
  }
}

export function timesFor(
  req: LoadRequest,
  problem: AttentionProblem,
  events: readonly TraceEvent[],
  gpu: string,
): { times: Float64Array | null; reason?: string } {
  if (req.pass === 'backward') return { times: null, reason: `the ${req.algorithm} backward has no step-by-step hardware schedule` };
  const f = runHardwareSwitches(req);
  if (!f) return { times: null, reason: `${req.algorithm} has no hardware schedule` };
  try {
    const g = gpuById(gpu);
    const sched = scheduleFor(req.algorithm, gpu, shapeOf(problem), f);
    return { times: stepTimes(events, sched, g.smCount, g.clockGHz, problem.hq) };
  } catch (e) {
    return { times: null, reason: message(e) };
  }
}

/**
 * The inputs the float64 reference is computed on: random inputs as drawn, before the run's
 * dtype rounded them. Compare panes may run different dtypes (fp16 next to FP8) on the same
 * draws; measuring each against attention of its own rounded inputs would leave the input
 * rounding out of the fp16 figure and give every pane a different reference. The draws do
 * not depend on the dtype (randomInputs rounds last), so regenerating them in fp32 gives the
 * unrounded values. Inputs from files are used as read.
 */
export function referenceInputs(req: LoadRequest, problem: AttentionProblem, inputs: AttentionInputs): AttentionInputs {
  if (req.tensors || storageDtype(problem.dtype) === 'fp32') return inputs;
  return randomInputs({ ...problem, dtype: 'fp32' }, { seed: req.seed, distribution: req.distribution, outlierRow: req.outlierRow });
}

export function runComparison(
  req: LoadRequest,
  problem: AttentionProblem,
  inputs: AttentionInputs,
  output: Float32Array,
  events: readonly TraceEvent[],
  gpu: string,
  grads?: RunGradients,
): CompareData {
  // A backward run is judged by its gradients: dQ, dK and dV against the float64 ones.
  const error = grads
    ? (() => {
        const ref = referenceBackward(problem, { ...inputs, dO: grads.dO });
        return errorStats(concat(grads.dq, grads.dk, grads.dv), concat(ref.dq, ref.dk, ref.dv));
      })()
    : errorStats(output, referenceAttention(problem, referenceInputs(req, problem, inputs)).o);
  const counters = emptyCounters();
  for (const e of events) addDelta(counters, e.delta);
  counters.steps = events.length;
  const t = timesFor(req, problem, events, gpu);
  return {
    counters,
    output: output.slice(),
    outputName: grads ? 'dQ' : 'O',
    error,
    prediction: predictionFor(req, problem, gpu),
    hasTimeline: t.times !== null,
    timelineReason: t.reason,
  };
}
