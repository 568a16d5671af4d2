// The CUDA anchor of `bench:webgpu`: PyTorch's scaled_dot_product_attention with only the
// FLASH backend allowed (FlashAttention-2's CUDA kernels), fp16, on the same GPU and shapes
// as the WebGPU timings, in the same run. It runs where `python3 -c 'import torch'` works
// and CUDA is there (the GPU machines); elsewhere the bench says why and prints no ratios.
//
// The Python program is bench/sdpa-forward-anchor.py (shapes in an environment variable). It
// times each shape with CUDA events (warm-up, then the median of `reps`), checks three
// sampled rows of each output against a float64 recomputation from the same fp16 inputs,
// and prints one JSON line per shape.

import { runPythonAnchor } from './python-anchor.ts';

export interface AnchorShape {
  /** The bench's key for the shape, echoed back. */
  key: string;
  b: number;
  hq: number;
  hk: number;
  nq: number;
  nk: number;
  d: number;
  causal: boolean;
}

export interface AnchorResult {
  ms: number;
  /** Worst |SDPA − float64| over the sampled rows. */
  err: number;
}

export interface AnchorRun {
  /** PyTorch, GPU and backend, as the anchor reported them; or why there is no anchor. */
  note: string;
  results: Map<string, AnchorResult | string>;
}

/** Runs the anchor over `shapes`; never throws (a missing PyTorch or GPU comes back as the note). */
export function runSdpaAnchor(shapes: AnchorShape[], reps: number): AnchorRun {
  const { note, lines } = runPythonAnchor('sdpa-forward-anchor.py', { reps, shapes }, 900_000);
  return { note, results: new Map(lines.map((x) => [x.key, x.error !== undefined ? x.error : { ms: x.ms!, err: x.err! }])) };
}
