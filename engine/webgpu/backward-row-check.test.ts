import { describe, expect, it } from 'vitest';
import { referenceBackward } from '../backward/reference-backward.ts';
import { randomInputs } from '../core/inputs.ts';
import { randomDo } from './backward-checks.ts';
import { sampledDqError } from './backward-row-check.ts';
import { sampleSites } from './row-check.ts';
import { KERNEL_VARIANTS } from './variants.ts';

describe('sampled dQ rows in float64', () => {
  for (const { name, problem } of KERNEL_VARIANTS) {
    it(`agree with the whole reference backward: ${name}`, () => {
      const x = randomInputs(problem, { seed: 3 });
      const dO = randomDo(problem, 3);
      const ref = referenceBackward(problem, { ...x, dO });
      const sites = sampleSites(problem, 5);
      // Rounding the reference's dQ to f32 is the only difference.
      expect(sampledDqError(problem, x, dO, Float32Array.from(ref.dq), sites)).toBeLessThan(1e-6);
      // A dQ off by a little in one sampled row is seen.
      const bad = Float32Array.from(ref.dq);
      const { b, h, i } = sites[sites.length - 1];
      bad[((b * problem.hq + h) * problem.nq + i) * problem.d] += 1e-3;
      expect(sampledDqError(problem, x, dO, bad, sites)).toBeGreaterThan(9e-4);
    });
  }
});
