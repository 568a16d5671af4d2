// State of the hardware views, per pane: the GPU and feature switches the person chose,
// and the SM schedule the worker built for them. Kept apart from the shared app store so
// the hardware views can change without touching the other panes' slices.

import { create } from 'zustand';
import type { HwFeatures, HwView } from '../../engine/api.ts';

export interface HwPaneState {
  /** GPU id chosen per algorithm (each kernel exists for its own architectures). */
  gpu: Record<string, string>;
  /** Feature switches per algorithm; absent keys take the kernel's defaults. */
  features: Record<string, Partial<HwFeatures>>;
  view?: HwView;
  /** The request key `view` answers (algorithm, GPU, features, problem). */
  viewKey?: string;
  loading: boolean;
  error?: string;
  /** Time axis window the timeline shows, in cycles; undefined = the whole kernel. */
  window?: [number, number];
  /** Views folded to their title bar: they do no work while stepping. */
  collapsed: Record<string, boolean>;
}

const EMPTY: HwPaneState = { gpu: {}, features: {}, loading: false, collapsed: {} };

interface HwStore {
  panes: Record<string, HwPaneState>;
  patch(pane: string, p: Partial<HwPaneState>): void;
}

export const useHw = create<HwStore>()((set) => ({
  panes: {},
  patch: (pane, p) => set((s) => ({ panes: { ...s.panes, [pane]: { ...(s.panes[pane] ?? EMPTY), ...p } } })),
}));

export function hwState(pane: string): HwPaneState {
  return useHw.getState().panes[pane] ?? EMPTY;
}

export function useHwPane<T>(pane: string, pick: (s: HwPaneState) => T): T {
  return useHw((s) => pick(s.panes[pane] ?? EMPTY));
}
