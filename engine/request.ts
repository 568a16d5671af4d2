// The request that determines a trace (LoadRequest) and the generator it runs: the algorithm's forward, or — for pass 'backward' — its
// backward (engine/backward/), which runs the forward itself first, untraced, for O and
// the LSE. dO is drawn from the request's seed on its own stream, so the same request
// always steps through the same gradients. Shared by the debugger session and the lessons.

import { algorithmById } from './algorithms/registry.ts';
import type { BlockOptions, RunOptions, StepGenerator } from './algorithms/types.ts';
import { backwardById } from './algorithms/backward-registry.ts';
import type { Tile } from './algorithms/blocks.ts';
import { noBackwardPass } from './algorithms/capabilities.ts';
import { randomGradOutput } from './backward/grad-output.ts';
import type { BackwardInputs } from './backward/types.ts';
import type { AttentionInputs, InputDistribution } from './core/inputs.ts';
import { ProblemError, type AttentionProblem } from './core/problem.ts';
import type { TensorImport } from './import/tensor-import.ts';
import { hasBackward, type Pass } from './pass.ts';

/** Everything that determines a trace: same request, same trace, always. */
export interface LoadRequest {
  algorithm: string;
  problem: AttentionProblem;
  seed: number;
  distribution: InputDistribution;
  /** Only for distribution 'outlier-row'. */
  outlierRow?: number;
  blocks: BlockOptions;
  /** Switchable kernel features (RunOptions.features), e.g. FA3 pingpong, FA4 lazyRescale. */
  features?: Record<string, boolean | number>;
  /** Inputs from the person's files instead of random ones; shapes and dtype then come from the files. */
  tensors?: TensorImport;
  /** 'backward': step through the gradients (pass.ts); absent or 'forward': the forward pass. */
  pass?: Pass;
}

export interface PassRun {
  /** A backward's generator returns a BackwardResult (engine/backward/types.ts): the gradients as well. */
  gen: StepGenerator;
  /** The backward's incoming gradient [batch, hq, nq, dv]; absent for a forward run. */
  dO?: Float32Array;
}

/** The tile the request's pass runs on `problem`: resolved once per load, then given to the pass and its views. */
export function passBlocks(req: Pick<LoadRequest, 'algorithm' | 'pass' | 'blocks'>, problem: AttentionProblem): Tile {
  const algo = req.pass === 'backward' && hasBackward(req.algorithm) ? backwardById(req.algorithm) : algorithmById(req.algorithm);
  return algo.blocks(problem, req.blocks);
}

export function startPass(req: LoadRequest, problem: AttentionProblem, inputs: AttentionInputs, opts: RunOptions): PassRun {
  if (req.pass !== 'backward') return { gen: algorithmById(req.algorithm).run(problem, inputs, opts) };
  if (!hasBackward(req.algorithm)) {
    const { field, message } = noBackwardPass(req.algorithm);
    throw new ProblemError(field, message);
  }
  const algo = backwardById(req.algorithm);
  const dO = randomGradOutput(problem, req.seed);
  const withGrad: BackwardInputs = { ...inputs, dO };
  return { gen: algo.run(problem, withGrad, opts), dO };
}
