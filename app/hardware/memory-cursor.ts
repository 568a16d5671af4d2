// The moment the memory map draws at a step: the latest cycle any step up to it reaches.
// Warpgroups interleave, so the trace's order is not the hardware's: the cycle of step k + 1
// can be earlier than step k's, and a strip drawn at each step's own cycle would step back in
// time (a tile loaded two steps ago vanishing again). Every step so far has run by this cycle.

import type { HwView } from '../../engine/api.ts';

type StepMap = HwView['map'];

const cache = new WeakMap<StepMap, Float64Array>();

/** Per step, the running maximum of the mapped cycles (steps without a cycle keep the one before; 0 before any). */
export function timeOrderedCycles(map: StepMap): Float64Array {
  let out = cache.get(map);
  if (out) return out;
  const n = map.stepCycle.length;
  out = new Float64Array(n);
  let latest = 0;
  for (let k = 0; k < n; k++) {
    const c = map.stepCycle[k];
    if (!Number.isNaN(c) && c > latest) latest = c;
    out[k] = latest;
  }
  cache.set(map, out);
  return out;
}

export function memoryCursor(view: HwView | undefined, step: number): number | null {
  if (!view) return null;
  const cycles = timeOrderedCycles(view.map);
  return cycles.length === 0 ? 0 : cycles[Math.max(0, Math.min(cycles.length - 1, step))];
}
