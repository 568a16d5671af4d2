// Placing numeric steps on a schedule's ops, shared by the forward (step-map.ts) and the
// backward (step-map-bwd.ts) maps. A step lands on the latest-ending op of its CTA whose
// phase kind is the step's and which passes the map's own fit test (sub-unit, K/V block,
// tensors); when the kernel has no such op, the kind before it in the phase order stands in
// and the step is marked approximate.

import type { PhaseKind } from '../trace/events.ts';
import type { TimelineEvent } from './events.ts';
import type { OpPhase, StepMap } from './sm-view.ts';

export class StepPlacer {
  readonly map: StepMap;
  /** Ops by "cta|kind". */
  private readonly index = new Map<string, number[]>();

  constructor(
    steps: number,
    private readonly timeline: readonly TimelineEvent[],
    private readonly phases: readonly (OpPhase | null)[],
    private readonly standIn: Partial<Record<PhaseKind, PhaseKind>>,
  ) {
    this.map = {
      stepCycle: new Float64Array(steps).fill(NaN),
      stepOp: new Int32Array(steps).fill(-1),
      stepApprox: new Uint8Array(steps),
      opStep: new Int32Array(timeline.length).fill(-1),
    };
    phases.forEach((p, i) => {
      if (!p) return;
      for (const k of p.kinds) {
        const key = `${p.cta}|${k}`;
        let l = this.index.get(key);
        if (!l) this.index.set(key, (l = []));
        l.push(i);
      }
    });
  }

  /** Places step s of `kind` on CTA c; `fits(phase, kind, own)` filters candidates (own: the step's own kind, not a stand-in). */
  place(s: number, c: number, kind: PhaseKind, fits: (p: OpPhase, kind: PhaseKind, own: boolean) => boolean): void {
    const { stepCycle, stepOp, stepApprox, opStep } = this.map;
    let k: PhaseKind | undefined = kind;
    let approx = 0;
    while (k) {
      let best = -1;
      let bestEnd = -Infinity;
      for (const i of this.index.get(`${c}|${k}`) ?? []) {
        if (!fits(this.phases[i]!, k, k === kind)) continue;
        if (opStep[i] < 0) opStep[i] = s;
        if (this.timeline[i].end > bestEnd) {
          bestEnd = this.timeline[i].end;
          best = i;
        }
      }
      if (best >= 0) {
        stepCycle[s] = bestEnd;
        stepOp[s] = best;
        stepApprox[s] = approx;
        return;
      }
      k = this.standIn[k];
      approx = 1;
    }
  }
}
