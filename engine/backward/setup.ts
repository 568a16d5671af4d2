// What every backward algorithm does before its first event: validate the problem, the
// inputs and dO (a bad one is rejected before anything runs), run the matching forward
// untraced for O and the LSE, and allocate the gradients in "HBM".

import { runToEnd } from '../run.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm } from '../algorithms/types.ts';
import { sixteenBitRounder } from '../core/dtype.ts';
import { checkInputs, type AttentionInputs } from '../core/inputs.ts';
import { noAttentionChunk } from '../algorithms/capabilities.ts';
import { checkMaskSpec } from '../core/mask-spec.ts';
import { dtypeBytes, ProblemError, requireNoFp8, validateProblem, type AttentionProblem } from '../core/problem.ts';
import { scoreModel, type ScoreModel } from '../core/scores.ts';
import { Tracer } from '../trace/tracer.ts';
import { checkGradOutput } from './grad-output.ts';
import type { BackwardInputs } from './types.ts';

export interface BackwardSetup {
  x: BackwardInputs;
  forward: AlgorithmResult;
  sm: ScoreModel;
  tr: Tracer;
  /** Bytes per element of the input dtype. */
  eb: number;
  /** 16-bit rounding of values fed to matmuls and of the outputs; undefined for fp32. */
  rounder: ((x: number) => number) | undefined;
  /** Gradients in HBM, fp32: dQ [B, Hq, Nq, d], dK [B, Hk, Nk, d], dV [B, Hk, Nk, dv]. */
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
}

/** Narrows inputs to BackwardInputs, with the ProblemError naming dO when it is missing or mis-sized. */
export function asBackwardInputs(p: AttentionProblem, x: AttentionInputs): BackwardInputs {
  const dO = (x as Partial<BackwardInputs>).dO;
  checkGradOutput(p, dO);
  return x as BackwardInputs;
}

/** The backward differentiates built-in score modifiers only and shares one tile schedule across heads. */
export function requireBackwardMask(p: AttentionProblem): void {
  if (p.attentionChunk !== undefined) {
    const { field, message } = noAttentionChunk('backward');
    throw new ProblemError(field, message);
  }
  if (p.mask === undefined) return;
  if (p.mask.scoreMod !== undefined) {
    throw new ProblemError(
      'mask.scoreMod',
      'the backward pass needs the derivative of score_mod, which FlashScope does not form; run the forward, or use the built-in ALiBi/softcap',
    );
  }
  if (checkMaskSpec(p.mask).maskReadsBatchOrHead) {
    throw new ProblemError('mask.maskMod', 'the backward pass takes a mask_mod that reads only q_idx and kv_idx (not b or h)');
  }
}

export function setUpBackward(
  p: AttentionProblem,
  xIn: AttentionInputs,
  forwardAlgo: StepAlgorithm,
  forwardOptions: Omit<RunOptions, 'trace'>,
  trace: boolean,
): BackwardSetup {
  validateProblem(p);
  requireNoFp8(p, `the ${forwardAlgo.id} backward`);
  requireBackwardMask(p);
  checkInputs(p, xIn);
  const x = asBackwardInputs(p, xIn);
  const forward = runToEnd(forwardAlgo, p, x, { ...forwardOptions, trace: false });
  return {
    x,
    forward,
    sm: scoreModel(p),
    tr: new Tracer(trace),
    eb: dtypeBytes(p.dtype),
    rounder: sixteenBitRounder(p.dtype),
    dq: new Float32Array(p.batch * p.hq * p.nq * p.d),
    dk: new Float32Array(p.batch * p.hk * p.nk * p.d),
    dv: new Float32Array(p.batch * p.hk * p.nk * p.dv),
  };
}

/** The gradients as returned: rounded to the input dtype, as the kernels write them. */
export function finishGradients(s: BackwardSetup): { dq: Float32Array; dk: Float32Array; dv: Float32Array } {
  const r = s.rounder;
  if (r) for (const a of [s.dq, s.dk, s.dv]) for (let i = 0; i < a.length; i++) a[i] = r(a[i]);
  return { dq: s.dq, dk: s.dk, dv: s.dv };
}
