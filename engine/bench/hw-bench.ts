// npm run bench:hw — how long the hardware models take, measured in this run:
// building ~50 000 schedule events for the UI, and `simulate` on large problems (which
// model one SM and extend the loop, so they must not grow with the sequence length).

import { BUILT_IN_ALGORITHMS } from '../algorithms/registry.ts';
import { scheduleFor, simulateFor } from '../algorithms/schedule-registry.ts';
import type { ProblemShape } from '../hw/model.ts';

const { fa3, fa4 } = BUILT_IN_ALGORITHMS;
const shape = (o: Partial<ProblemShape>): ProblemShape => ({
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 128,
  nk: 128,
  d: 128,
  dv: 128,
  dtype: 'fp16',
  causal: false,
  ...o,
});

function time(f: () => void, reps = 3): number {
  f();
  let best = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

let events = 0;
const evMs = time(() => {
  const s = scheduleFor(fa3.id, 'h100', shape({ nk: 128 * 2000 }));
  events = s.timeline.length + s.memory.length;
});
console.log(
  `scheduleFor fa3/h100, one CTA over 2000 K/V blocks: ${events} events in ${evMs.toFixed(0)} ms (${((evMs / 1000) * (50_000 / events)).toFixed(2)} of the 1 s budget per 50 000 events)`,
);

const small = time(() => simulateFor(fa3.id, 'h100', shape({ batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096 })), 1);
const large = time(() => simulateFor(fa3.id, 'h100', shape({ batch: 1, hq: 16, hk: 16, nq: 131072, nk: 131072 })), 1);
console.log(
  `simulate fa3/h100: N = 4K ${small.toFixed(0)} ms, N = 128K ${large.toFixed(0)} ms (ratio ${(large / small).toFixed(2)} for 32× the sequence)`,
);
const causal = time(
  () => simulateFor(fa4.id, 'b200', shape({ batch: 1, hq: 16, hk: 16, nq: 65536, nk: 65536, dtype: 'bf16', causal: true })),
  1,
);
console.log(`simulate fa4/b200 causal N = 64K (one T(n) per distinct CTA length): ${causal.toFixed(0)} ms`);
