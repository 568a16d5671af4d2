// simulate times one CTA per cost class: two CTAs of the same K/V block count that mask
// different numbers of blocks must not share one CTA's time.

import { describe, expect, it } from 'vitest';
import { gpuById } from './gpus/index.ts';
import { DEFAULT_FEATURES, emptySheet, type CtaWork, type HwAlgorithm, type ProblemShape } from './model.ts';
import { simulateProblem } from './simulate.ts';

const BLOCK = 100;
const MASK = 1000;
const masked = (w: CtaWork) => (w.kvList ?? []).filter((j) => !(w.kvFull ?? []).includes(j)).length;

// Two CTAs of two blocks each: the first has both blocks full, the second both partial (masked).
const algo: HwAlgorithm = {
  id: 'toy',
  name: 'toy',
  arch: [90],
  switches: {},
  resources: (gpu) => ({ ...emptySheet('toy', gpu, 64, 64), ctas_per_sm: 1 }),
  grid: () => [
    { b: 0, h: 0, qBlock: 0, kvFrom: 0, kvTo: 2, kvList: [0, 1], kvFull: [0, 1], reverse: false, split: 0 },
    { b: 0, h: 1, qBlock: 0, kvFrom: 0, kvTo: 2, kvList: [0, 1], kvFull: [], reverse: false, split: 0 },
  ],
  build: (k, _ctx, work) => {
    const r = k.role({ name: `cta${work.h}`, warps: [0], registers: 32, job: 'blocks' });
    r.exec('fma', 2 * BLOCK + masked(work) * MASK, 'blocks and their masks');
  },
  maskedSteps: (_gpu, _shape, _f, work) => masked(work),
  hbmBytes: () => 0,
};

const shape: ProblemShape = { batch: 1, hq: 2, hk: 2, nq: 64, nk: 128, d: 64, dv: 64, dtype: 'fp16', causal: false };

describe('simulate cost classes', () => {
  it('times a CTA of n blocks by its own masked count, not by the first CTA of n blocks', () => {
    const r = simulateProblem(algo, gpuById('h100'), shape, DEFAULT_FEATURES);
    // The kernel ends with the masked CTA: two blocks and two masks.
    expect(r.cycles).toBe(2 * BLOCK + 2 * MASK);
  });
});
