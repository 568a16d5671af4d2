// TRACE.md's backward line-id table is exactly what the backward algorithms emit, on a
// causal problem with Nq > Nk and several blocks (every line, the masks included).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { randomGradOutput } from '../backward/grad-output.ts';
import { BACKWARD_ALGORITHMS } from '../algorithms/backward-registry.ts';
import type { BackwardInputs } from '../backward/types.ts';
import { randomInputs } from '../core/inputs.ts';
import { runToEnd } from '../run.ts';

const doc = readFileSync(new URL('../TRACE.md', import.meta.url), 'utf8');

describe('TRACE.md backward line ids', () => {
  it.each(BACKWARD_ALGORITHMS.map((a) => [a.linePrefix, a] as const))(
    '%s: the documented ids are exactly those emitted',
    (prefix, algo) => {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${prefix}\` | \`${prefix}.`));
      expect(row).toBeDefined();
      const documented = [...row!.matchAll(/`([a-z0-9]+\.[A-Za-z]+)`/g)].map((m) => m[1]);
      const p = { batch: 1, hq: 1, hk: 1, nq: 9, nk: 6, d: 2, dv: 2, causal: true, dtype: 'fp32' as const };
      const x: BackwardInputs = { ...randomInputs(p, { seed: 2 }), dO: randomGradOutput(p, 2) };
      const seen: string[] = [];
      runToEnd(algo, p, x, { blockM: 3, blockN: 3, trace: true, onEvent: (e) => void (seen.includes(e.line) || seen.push(e.line)) });
      expect([...seen].sort()).toEqual([...documented].sort());
      // And in the documented order of first appearance, except the warp-specialized kernels' producer, which runs ahead.
      if (prefix !== 'fa3bwd' && prefix !== 'fa4bwd') expect(seen).toEqual(documented);
    },
  );
});
