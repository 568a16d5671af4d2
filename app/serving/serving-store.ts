// The serving-layouts page's state: whether it is shown, the form, the loaded run, the
// current step and the selected sequence. Runs happen in the serving worker.

import { create } from 'zustand';
import { DEFAULT_SERVING_FORM, type ServingForm, type ServingRun } from '../../engine/api.ts';
import { servingWorker, type ServingFiles } from './serving-api.ts';

export interface ServingState {
  open: boolean;
  form: ServingForm;
  run?: ServingRun;
  /** Where the run's inputs came from. */
  source: 'generated' | 'files';
  status: 'idle' | 'running' | 'ready' | 'error';
  error?: string;
  step: number;
  /** The sequence the views emphasise (follows the step unless picked). */
  seq: number;
  /** A step to restore once the next run is ready (share link). */
  pendingStep?: number;
  setOpen(open: boolean): void;
  setForm(patch: Partial<ServingForm>): void;
  load(): Promise<void>;
  loadFiles(req: ServingFiles): Promise<void>;
  seek(step: number): void;
  pickSequence(b: number): void;
}

let token = 0;

export const useServing = create<ServingState>()((set, get) => {
  const finish = async (work: () => Promise<ServingRun>, source: 'generated' | 'files') => {
    const mine = ++token;
    set({ status: 'running', error: undefined });
    try {
      const run = await work();
      if (mine !== token) return;
      const pending = get().pendingStep;
      const step = pending !== undefined ? Math.min(pending, Math.max(0, run.steps.length - 1)) : 0;
      set({ run, source, status: 'ready', step, seq: run.steps[step]?.b ?? 0, pendingStep: undefined });
    } catch (e) {
      if (mine !== token) return;
      // The previous run (if any) stays: a bad input loses nothing already shown.
      set({ status: 'error', error: e instanceof Error ? e.message : String(e), pendingStep: undefined });
    }
  };
  return {
    open: false,
    form: structuredClone(DEFAULT_SERVING_FORM),
    source: 'generated',
    status: 'idle',
    step: 0,
    seq: 0,
    setOpen: (open) => set({ open }),
    setForm: (patch) => set((s) => ({ form: { ...s.form, ...patch } })),
    load: () => finish(() => servingWorker().run(get().form), 'generated'),
    loadFiles: (req) => finish(() => servingWorker().runFiles(req), 'files'),
    seek: (step) => {
      const run = get().run;
      if (!run || run.steps.length === 0) return;
      const s = Math.max(0, Math.min(run.steps.length - 1, step));
      set({ step: s, seq: run.steps[s].b });
    },
    pickSequence: (b) => {
      const run = get().run;
      if (!run) return;
      const first = run.steps.findIndex((s) => s.b === b);
      set(first >= 0 ? { seq: b, step: first } : { seq: b });
    },
  };
});
