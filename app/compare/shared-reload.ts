// Changing the shared problem from compare mode (the input distribution, a fix for a
// modifier an FP8 pane cannot run): the Debugger tab's form takes the change so the two tabs
// agree, and the shared problem reloads; every pane then reloads with it. A failed load
// keeps the previous run and shows the engine's message where the shared problem's errors go.

import type { LoadRequest } from '../../engine/api.ts';
import { messageOf } from '../store/pane-controller.ts';
import type { ProblemForm } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { controllers } from '../store/controllers.ts';
import { SHARED_PANE } from './shared-request.ts';

export function reloadShared(form: Partial<ProblemForm>, request: (applied: LoadRequest) => LoadRequest): void {
  const main = controllers.get(SHARED_PANE);
  const applied = useApp.getState().problem[SHARED_PANE]?.applied;
  if (!main || !applied) return;
  useApp.getState().setForm(SHARED_PANE, form);
  main
    .load(request(applied))
    .catch((err: unknown) => useApp.getState().patchPlayback(SHARED_PANE, { error: { place: 'problem', message: messageOf(err) } }));
}
