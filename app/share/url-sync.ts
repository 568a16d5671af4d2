// The app's state <-> the URL. On start the fragment is decoded and put into the stores
// (positions are restored once each pane's run is loaded); afterwards every change is
// written back with history.replaceState, so the address bar is always a working link.

import type { StoreApi } from 'zustand';
import { useCompare } from '../compare/compare-store.ts';
import { controllers } from '../store/controllers.ts';
import { comparePaneId } from '../compare/pane-config.ts';
import { withSyncPaused } from '../compare/sync-driver.ts';
import { useImport } from '../import/import-store.ts';
import { formToRequest, type ProblemForm } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { DEFAULT_VIEWS } from '../views/registry.ts';
import { useShare } from './share-store.ts';
import { useServing } from '../serving/serving-store.ts';
import { decodeState, defaultSharedState, encodeState, type SharedState } from './url-state.ts';

const MAIN = 'main';

export function restoreFromUrl(hash: string): void {
  const { state, notices } = decodeState(hash, DEFAULT_VIEWS);
  const app = useApp.getState();
  app.addPane(MAIN, state.views);
  app.setForm(MAIN, state.form);
  app.setViews(MAIN, state.views);
  useCompare.setState({
    mode: state.mode,
    axis: state.compare.axis,
    gpu: state.compare.gpu,
    panes: state.compare.panes.map((p) => p.config),
    diff: state.compare.diff,
  });
  const pendingSteps: Record<string, number> = {};
  if (state.step > 0) pendingSteps[MAIN] = state.step;
  state.compare.panes.forEach((p, i) => {
    if (p.step > 0 && state.mode === 'compare') pendingSteps[comparePaneId(i)] = p.step;
  });
  useShare.setState({ notices, pendingSteps });
  if (state.serving) {
    useServing.setState({ open: true, form: state.serving.form, pendingStep: state.serving.step });
    useApp.setState((s) => ({ layout: { ...s.layout, activePane: 'serving' } }));
  }
}

/**
 * After a failure (a link that could not be opened, or a render that threw): every store the
 * link fills goes back to its first state, the fragment is cleared so a reload starts clean,
 * and one notice says what happened.
 */
export function restoreDefaults(why: string, fromLink: boolean): void {
  history.replaceState(history.state, '', `${location.pathname}${location.search}`);
  const reset = <T>(store: StoreApi<T>) => store.setState(store.getInitialState(), true);
  reset(useApp);
  reset(useCompare);
  reset(useServing);
  reset(useImport);
  reset(useShare);
  restoreFromUrl('');
  useShare.setState({
    notices: [`${fromLink ? 'this link could not be opened' : 'the page hit an error'} (${why}); the defaults are shown`],
  });
}

/** Seeks each pane to its restored step once its first run is ready. */
function restorePendingSteps(): () => void {
  return useApp.subscribe((s) => {
    const pending = useShare.getState().pendingSteps;
    for (const [pane, step] of Object.entries(pending)) {
      const pb = s.playback[pane];
      const c = controllers.get(pane);
      if (!c || pb?.status !== 'ready' || !pb.frame || !pb.summary) continue;
      const rest = { ...useShare.getState().pendingSteps };
      delete rest[pane];
      useShare.setState({ pendingSteps: rest });
      if (step >= pb.summary.total) {
        useShare.setState((x) => ({
          notices: [
            ...x.notices,
            `step ${step + 1} is past the end of ${pane === MAIN ? 'the run' : `compare pane ${Number(pane.slice(3)) + 1}`} (${pb.summary!.total} steps); showing the last step`,
          ],
        }));
      }
      void withSyncPaused(() => c.seek(Math.min(step, pb.summary!.total - 1)));
    }
  });
}

let lastGoodForm: ProblemForm | undefined;

export function currentState(): SharedState {
  const app = useApp.getState();
  const cmp = useCompare.getState();
  const form = app.problem[MAIN]?.form;
  if (form) {
    try {
      formToRequest(form);
      lastGoodForm = form;
    } catch {
      // Half-typed values stay out of the link; the last loadable form is kept.
    }
  }
  return {
    mode: cmp.mode,
    form: { ...(lastGoodForm ?? app.problem[MAIN]?.form) } as ProblemForm,
    step: app.playback[MAIN]?.frame?.step ?? useShare.getState().pendingSteps[MAIN] ?? 0,
    views: app.layout.views[MAIN] ?? [...DEFAULT_VIEWS],
    compare: {
      axis: cmp.axis,
      gpu: cmp.gpu,
      panes: cmp.panes.map((config, i) => ({
        config,
        step: app.playback[comparePaneId(i)]?.frame?.step ?? useShare.getState().pendingSteps[comparePaneId(i)] ?? 0,
      })),
      diff: cmp.diff,
    },
    imported: !!useImport.getState().imported[MAIN],
    ...servingPart(),
  };
}

function servingPart(): { serving?: SharedState['serving'] } {
  const sv = useServing.getState();
  if (!sv.open) return {};
  return { serving: { form: sv.form, step: sv.run ? sv.step : (sv.pendingStep ?? 0), files: sv.source === 'files' && !!sv.run } };
}

export function currentLink(): string {
  return `${location.origin}${location.pathname}${location.search}${encodeState(currentState())}`;
}

/** Starts restoring positions and mirroring the state into the URL. */
export function startUrlSync(): () => void {
  const stopPending = restorePendingSteps();
  const defaults = encodeState(defaultSharedState(DEFAULT_VIEWS));
  let timer = 0;
  // Writes wait for 200 ms of quiet, but never more than a second: stores that change all
  // the time (playback) must not keep the link from catching up.
  let pendingSince = 0;
  const flush = () => {
    pendingSince = 0;
    // The defaults need no fragment: a fresh page keeps a clean address.
    const frag = encodeState(currentState());
    const target = frag === defaults ? '' : frag;
    if (location.hash !== target) history.replaceState(history.state, '', `${location.pathname}${location.search}${target}`);
  };
  const write = () => {
    clearTimeout(timer);
    const now = performance.now();
    if (pendingSince === 0) pendingSince = now;
    timer = window.setTimeout(flush, Math.max(0, Math.min(200, pendingSince + 1000 - now)));
  };
  const subs = [useApp.subscribe(write), useCompare.subscribe(write), useImport.subscribe(write), useServing.subscribe(write)];
  return () => {
    stopPending();
    subs.forEach((u) => u());
    clearTimeout(timer);
  };
}
