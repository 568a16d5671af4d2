// The Precision view's worker data per pane: the float64 comparison (asked for only while
// the view is open: the reference costs O(N²d) in the worker) and the cheap per-head marks
// (flushed P values, tile scales) the P heatmap and the tile numbers also use. One request
// per pane and kind at a time; a request that became stale while in flight is followed by
// a fresh one, as the hardware views do (app/hardware/useHardware.ts).

import { useEffect } from 'react';
import { create } from 'zustand';
import type { PrecisionMarks, PrecisionResponse } from '../../engine/api.ts';
import { messageOf, type PaneController } from '../store/pane-controller.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';

interface PanePrecision {
  /** Whether the person opened (true) or folded (false) the view; undefined: the default for the run. */
  open?: boolean;
  key?: string;
  data?: PrecisionResponse;
  loading?: boolean;
  error?: string;
  marksKey?: string;
  marks?: PrecisionMarks;
}

interface PrecisionStore {
  panes: Record<string, PanePrecision>;
  patch(pane: string, p: Partial<PanePrecision>): void;
}

export const usePrecisionStore = create<PrecisionStore>()((set) => ({
  panes: {},
  patch: (pane, p) => set((s) => ({ panes: { ...s.panes, [pane]: { ...s.panes[pane], ...p } } })),
}));

const EMPTY: PanePrecision = {};
export function usePanePrecision<T>(pane: string, pick: (p: PanePrecision) => T): T {
  return usePrecisionStore((s) => pick(s.panes[pane] ?? EMPTY));
}

/** The run and head a request is for: a new load (or head) makes the data stale. */
export function keyOf(pane: string): string | undefined {
  const pb = useApp.getState().playback[pane];
  if (!pb?.summary || !pb.frame || pb.summary.pass === 'backward') return undefined;
  return JSON.stringify([pb.summary.algorithm, pb.summary.total, pb.summary.loadMs, pb.frame.b, pb.frame.h]);
}

const busy = new Set<string>();

function syncData(pane: string, ctl: PaneController): void {
  const id = `${pane}:data`;
  const key = keyOf(pane);
  const st = usePrecisionStore.getState();
  if (!key || busy.has(id) || st.panes[pane]?.key === key) return;
  const frame = useApp.getState().playback[pane].frame!;
  busy.add(id);
  st.patch(pane, { loading: true });
  ctl.worker
    .precision(frame.b, frame.h)
    .then((data) => usePrecisionStore.getState().patch(pane, { data, key, loading: false, error: undefined }))
    .catch((e) => usePrecisionStore.getState().patch(pane, { data: undefined, key, loading: false, error: messageOf(e) }))
    .finally(() => {
      busy.delete(id);
      // The person may have moved to another head, or loaded another run, meanwhile.
      syncData(pane, ctl);
    });
}

function syncMarks(pane: string, ctl: PaneController): void {
  const id = `${pane}:marks`;
  const key = keyOf(pane);
  const st = usePrecisionStore.getState();
  const low = useApp.getState().playback[pane]?.summary?.lowPrecision;
  if (!key || !low || busy.has(id) || st.panes[pane]?.marksKey === key) return;
  const frame = useApp.getState().playback[pane].frame!;
  busy.add(id);
  ctl.worker
    .precisionMarks(frame.b, frame.h)
    .then((marks) => usePrecisionStore.getState().patch(pane, { marks, marksKey: key }))
    .catch(() => usePrecisionStore.getState().patch(pane, { marks: undefined, marksKey: key }))
    .finally(() => {
      busy.delete(id);
      syncMarks(pane, ctl);
    });
}

/** The float64 comparison for the pane's current run and head, fetched while `enabled`. */
export function usePrecisionData(enabled: boolean): void {
  const { pane, ctl } = usePane();
  const summary = useApp((s) => s.playback[pane].summary);
  const b = useApp((s) => s.playback[pane].frame?.b);
  const h = useApp((s) => s.playback[pane].frame?.h);
  // biome-ignore lint/correctness/useExhaustiveDependencies: syncData reads the stores itself; a new run or head asks for new data
  useEffect(() => {
    if (enabled) syncData(pane, ctl);
  }, [enabled, pane, ctl, summary, b, h]);
}

/**
 * The flushed-P marks of the current head, when the run has low-precision fields, else
 * undefined; a mark belongs to the current head only (never stale data of another run).
 */
export function usePrecisionMarks(): PrecisionMarks | undefined {
  const { pane, ctl } = usePane();
  const summary = useApp((s) => s.playback[pane].summary);
  const b = useApp((s) => s.playback[pane].frame?.b);
  const h = useApp((s) => s.playback[pane].frame?.h);
  // biome-ignore lint/correctness/useExhaustiveDependencies: syncMarks reads the stores itself; a new run or head asks for new marks
  useEffect(() => syncMarks(pane, ctl), [pane, ctl, summary, b, h]);
  const marks = usePanePrecision(pane, (p) => p.marks);
  const marksKey = usePanePrecision(pane, (p) => p.marksKey);
  if (!summary?.lowPrecision || !marks || marksKey !== keyOf(pane)) return undefined;
  return marks;
}

/** Flat indices (r·nk + c) of the P values flushed at or before `step`. */
export function flushedUpTo(flushedAt: Int32Array, step: number): Int32Array {
  const out: number[] = [];
  for (let i = 0; i < flushedAt.length; i++) if (flushedAt[i] >= 0 && flushedAt[i] <= step) out.push(i);
  return Int32Array.from(out);
}
