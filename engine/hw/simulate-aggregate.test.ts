// Grids past MAX_GRID_CTAS are simulated from CTA counts instead of CTA objects: the
// result must continue the exact model (twice the batch, twice the time once there are
// many waves) and count every CTA, while memory stays bounded.

import { describe, expect, it } from 'vitest';
import type { ProblemShape } from './model.ts';
import { simulateFor } from '../algorithms/schedule-registry.ts';
import { MAX_GRID_CTAS } from './simulate.ts';

const shape = (batch: number, causal: boolean): ProblemShape => ({
  batch,
  hq: 64,
  hk: 64,
  nq: 2048,
  nk: 2048,
  d: 64,
  dv: 64,
  dtype: 'fp16',
  causal,
});

describe('simulate on grids past MAX_GRID_CTAS', () => {
  for (const [algo, gpu, causal] of [['fa3', 'h100', true]] as const) {
    it(`${algo} ${causal ? 'causal' : 'full'}: counts every CTA and doubles the time with the batch`, () => {
      const perBatch = simulateFor(algo, gpu, shape(1, causal)).ctas;
      // The largest batch listed CTA by CTA, and twice it, which is counted instead.
      const listed = Math.floor(MAX_GRID_CTAS / perBatch);
      const small = simulateFor(algo, gpu, shape(listed, causal));
      const large = simulateFor(algo, gpu, shape(2 * listed, causal));
      expect(small.ctas).toBe(listed * perBatch);
      expect(large.ctas).toBe(2 * listed * perBatch);
      expect(large.time_us / small.time_us).toBeGreaterThan(1.98);
      expect(large.time_us / small.time_us).toBeLessThan(2.02);
      expect(large.utilization.sm).toBeCloseTo(small.utilization.sm, 2);
    });
  }
});
