// Compare mode's own state: which mode the app shows, the panes' configurations, the sync
// axis, the GPU for predictions, and the pair whose outputs are differenced. Kept apart
// from the debugger store so the two can change independently.

import { create } from 'zustand';
import type { CompareData, SyncAxis } from '../../engine/api.ts';
import { DEFAULT_PANES, MAX_PANES, MIN_PANES, COMPARE_VIEWS_DEFAULT, type ComparePaneConfig } from './pane-config.ts';

export type AppMode = 'debugger' | 'compare';

export interface CompareState {
  mode: AppMode;
  axis: SyncAxis;
  gpu: string;
  panes: ComparePaneConfig[];
  diff: [number, number];
  /** Whole-run results per pane (fetched from each pane's worker once its run is loaded), keyed by pane index. */
  results: (CompareData | undefined)[];
  /** Per pane: why its last load failed (it keeps its previous run, which is not this problem's); undefined when it loaded or loads. */
  failures: (string | undefined)[];
  /** Last sync: what was actually used where the chosen axis could not be. */
  syncNotice?: string;
  /** A preset is replacing the shared problem and the panes: panes wait instead of loading twice. */
  applying: boolean;
  setMode(m: AppMode): void;
  setAxis(a: SyncAxis): void;
  setGpu(g: string): void;
  setPane(i: number, patch: Partial<ComparePaneConfig>): void;
  addPane(): void;
  removePane(): void;
  setDiff(d: [number, number]): void;
  setResult(i: number, r: CompareData | undefined): void;
  setFailure(i: number, why: string | undefined): void;
}

export const useCompare = create<CompareState>()((set) => ({
  mode: 'debugger',
  axis: 'kv',
  gpu: 'h100',
  panes: DEFAULT_PANES.map((p) => structuredClone(p)),
  diff: [0, 1],
  results: [],
  failures: [],
  applying: false,
  setMode: (mode) => set({ mode }),
  setAxis: (axis) => set({ axis, syncNotice: undefined }),
  setGpu: (gpu) => set({ gpu, results: [] }),
  setPane: (i, patch) => set((s) => ({ panes: s.panes.map((p, k) => (k === i ? { ...p, ...patch } : p)) })),
  addPane: () =>
    set((s) =>
      s.panes.length >= MAX_PANES
        ? s
        : { panes: [...s.panes, { ...structuredClone(s.panes[s.panes.length - 1]), views: [...COMPARE_VIEWS_DEFAULT] }] },
    ),
  removePane: () =>
    set((s) => {
      if (s.panes.length <= MIN_PANES) return s;
      const n = s.panes.length - 1;
      const diff: [number, number] = s.diff.every((i) => i < n) ? s.diff : [0, 1];
      return { panes: s.panes.slice(0, n), results: s.results.slice(0, n), failures: s.failures.slice(0, n), diff };
    }),
  setDiff: (diff) => set({ diff }),
  setResult: (i, r) => set((s) => ({ results: Object.assign([...s.results], { [i]: r }) })),
  setFailure: (i, why) => set((s) => (s.failures[i] === why ? s : { failures: Object.assign([...s.failures], { [i]: why }) })),
}));
