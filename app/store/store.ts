// App state in zustand, split into slices. Everything that belongs to one debugger pane is
// keyed by pane id, so several panes (compare mode) can live side by side; components
// select only the fields they render.

import { create } from 'zustand';
import {
  type AttentionProblem,
  type Breakpoint,
  type BreakpointHit,
  type CountersRun,
  type Frame,
  type Granularity,
  type HeadInputs,
  type LoadSummary,
  type LoadRequest,
  problemToFields,
} from '../../engine/api.ts';
import { DEFAULT_FORM, type ProblemForm } from './problem-form.ts';

export type PaneId = string;

export const TEXT_VIEW_HZ = 8;

/** Where an error happened, so the pane shows it next to the control that caused it. */
export type ErrorPlace = 'problem' | 'transport' | 'breakpoints' | 'worker';

export interface PaneError {
  place: ErrorPlace;
  message: string;
}

export interface ProblemState {
  form: ProblemForm;
  /** The request of the run now loaded in the worker. */
  applied?: LoadRequest;
}

export interface PlaybackState {
  status: 'empty' | 'loading' | 'ready' | 'busy';
  summary?: LoadSummary;
  frame?: Frame;
  /**
   * The frame the text views (statistics, formula, pseudo-code, counters) show: the same as
   * `frame` when paused, refreshed at most TEXT_VIEW_HZ times a second during playback, so
   * fast playback spends its time on the heatmaps.
   */
  textFrame?: Frame;
  inputs?: HeadInputs;
  playing: boolean;
  /** Steps per second; 0 = as fast as frames can be drawn. */
  speed: number;
  granularity: Granularity;
  progress?: { fraction: number; label: string };
  error?: PaneError;
  /** Informational line (e.g. "worker restarted, position restored"). */
  notice?: string;
  hit?: BreakpointHit;
  /** Problem too large to step: the explanation and the counters-only result, if run. */
  tooLarge?: string;
  countersRun?: CountersRun;
}

export type MatrixId = 'Q' | 'K' | 'V' | 'S' | 'P' | 'O';

export interface SelectionState {
  /** Query row selected for the formula panel; null follows the first row of the current tile. */
  row: number | null;
  zoom: { matrix: MatrixId; qBlock: number; kvBlock: number } | null;
}

export interface LayoutState {
  theme: 'dark' | 'light';
  activePane: PaneId;
  /** View ids shown in each pane (views/registry.ts). */
  views: Record<PaneId, string[]>;
}

const EMPTY_PLAYBACK: PlaybackState = { status: 'empty', playing: false, speed: 10, granularity: 'phase' };
const EMPTY_SELECTION: SelectionState = { row: null, zoom: null };

export interface AppState {
  problem: Record<PaneId, ProblemState>;
  playback: Record<PaneId, PlaybackState>;
  selection: Record<PaneId, SelectionState>;
  breakpoints: Record<PaneId, Breakpoint[]>;
  layout: LayoutState;

  addPane(id: PaneId, views: string[]): void;
  setForm(id: PaneId, patch: Partial<ProblemForm>): void;
  /** Shows this problem and seed in the pane's form (its algorithm, pass, tiles and switches stay). */
  showProblem(id: PaneId, problem: AttentionProblem, seed: number): void;
  setApplied(id: PaneId, req: LoadRequest): void;
  patchPlayback(id: PaneId, patch: Partial<PlaybackState>): void;
  patchSelection(id: PaneId, patch: Partial<SelectionState>): void;
  setBreakpointList(id: PaneId, list: Breakpoint[]): void;
  setTheme(t: LayoutState['theme']): void;
  setViews(id: PaneId, views: string[]): void;
}

export const useApp = create<AppState>()((set) => ({
  problem: {},
  playback: {},
  selection: {},
  breakpoints: {},
  layout: { theme: 'dark', activePane: 'main', views: {} },

  addPane: (id, views) =>
    set((s) =>
      s.problem[id]
        ? s
        : {
            problem: { ...s.problem, [id]: { form: { ...DEFAULT_FORM } } },
            playback: { ...s.playback, [id]: { ...EMPTY_PLAYBACK } },
            selection: { ...s.selection, [id]: { ...EMPTY_SELECTION } },
            breakpoints: { ...s.breakpoints, [id]: [] },
            layout: { ...s.layout, views: { ...s.layout.views, [id]: views } },
          },
    ),
  setForm: (id, patch) =>
    set((s) => ({ problem: { ...s.problem, [id]: { ...s.problem[id], form: { ...s.problem[id].form, ...patch } } } })),
  showProblem: (id, problem, seed) =>
    set((s) => ({
      problem: {
        ...s.problem,
        [id]: { ...s.problem[id], form: { ...s.problem[id].form, ...problemToFields(problem), seed: String(seed) } },
      },
    })),
  setApplied: (id, req) => set((s) => ({ problem: { ...s.problem, [id]: { ...s.problem[id], applied: req } } })),
  patchPlayback: (id, patch) => set((s) => ({ playback: { ...s.playback, [id]: { ...s.playback[id], ...patch } } })),
  patchSelection: (id, patch) => set((s) => ({ selection: { ...s.selection, [id]: { ...s.selection[id], ...patch } } })),
  setBreakpointList: (id, list) => set((s) => ({ breakpoints: { ...s.breakpoints, [id]: list } })),
  setTheme: (theme) => set((s) => ({ layout: { ...s.layout, theme } })),
  setViews: (id, views) => set((s) => ({ layout: { ...s.layout, views: { ...s.layout.views, [id]: views } } })),
}));
