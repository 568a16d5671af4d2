// Keeps a pane's hardware schedule in step with the debugger: asks the worker for the SM
// that runs the current step's CTA whenever the algorithm, problem, GPU or switches change,
// or the debugger moves to a CTA on another SM. One request per pane at a time; a request
// that became stale while in flight is followed by a fresh one.

import { useEffect } from 'react';
import { hasHardwareModel, type HwView, type TraceEvent } from '../../engine/api.ts';
import { messageOf, type PaneController } from '../store/pane-controller.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';
import { choiceKey, defaultGpu } from '../store/gpus.ts';
import { hwState, useHw } from '../store/hw-store.ts';

const inFlight = new Set<string>();

/** True when the view's SM runs the CTA of this event. */
export function viewHoldsEvent(v: HwView, ev: TraceEvent): boolean {
  if (v.pass === 'backward') {
    // Backward CTAs are column blocks; a step with no keys (D, the dQ conversion) runs in another kernel: keep the SM in view.
    if (ev.tile.cols[1] <= ev.tile.cols[0]) return true;
    return v.ctas.some((c) => c.b === ev.b && c.h === ev.h && c.kvBlocks.includes(Math.floor(ev.tile.cols[0] / v.geometry.blockN)));
  }
  const r0 = ev.tile.rows[0];
  return v.ctas.some(
    (c) =>
      c.b === ev.b &&
      c.h === ev.h &&
      r0 >= c.rows[0] &&
      r0 < c.rows[1] &&
      (ev.split === undefined ||
        ev.kind === 'combine' ||
        ev.tile.cols[1] <= ev.tile.cols[0] ||
        c.kvBlocks.includes(Math.floor(ev.tile.cols[0] / v.geometry.blockN))),
  );
}

function sync(pane: string, ctl: PaneController): void {
  if (inFlight.has(pane)) return;
  const app = useApp.getState();
  const pb = app.playback[pane];
  const applied = app.problem[pane]?.applied;
  const frame = pb?.frame;
  const algorithm = pb?.summary?.algorithm;
  const pass = pb?.summary?.pass === 'backward' ? 'backward' : 'forward';
  if (!frame || !applied || !algorithm || !hasHardwareModel(algorithm, pass)) return;
  const hs = hwState(pane);
  const choice = choiceKey(algorithm, pass);
  const gpu = hs.gpu[choice] ?? defaultGpu(algorithm, pass);
  const features = hs.features[choice] ?? {};
  const key = JSON.stringify([algorithm, pass, gpu, features, applied.problem, pb.summary?.total, pb.summary?.loadMs]);
  const stale = hs.viewKey !== key;
  if (!stale && (hs.error || (hs.view && viewHoldsEvent(hs.view, frame.event)))) return;
  inFlight.add(pane);
  useHw.getState().patch(pane, { loading: true });
  ctl.worker
    .hwView({ algorithm, gpu, features, problem: applied.problem, step: frame.step, pass })
    .then((view) =>
      useHw.getState().patch(pane, { view, viewKey: key, loading: false, error: undefined, ...(stale ? { window: undefined } : {}) }),
    )
    .catch((e) => useHw.getState().patch(pane, { view: undefined, viewKey: key, loading: false, error: messageOf(e) }))
    .finally(() => {
      inFlight.delete(pane);
      // The debugger may have moved on (or the switches changed) while this was built.
      sync(pane, ctl);
    });
}

/** Call from every hardware view; requests are shared per pane. */
export function useHardwareSync(): void {
  const { pane, ctl } = usePane();
  const step = useApp((s) => s.playback[pane].frame?.step);
  const summary = useApp((s) => s.playback[pane].summary);
  const applied = useApp((s) => s.problem[pane].applied);
  const choice = useHw((s) => s.panes[pane]?.gpu);
  const features = useHw((s) => s.panes[pane]?.features);
  // biome-ignore lint/correctness/useExhaustiveDependencies: sync reads the stores itself; these are the values whose change asks for a new view
  useEffect(() => sync(pane, ctl), [pane, ctl, step, summary, applied, choice, features]);
}
