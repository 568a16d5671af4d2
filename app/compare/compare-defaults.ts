// A compare pane's algorithm choice: the pane's tile is the algorithm's own (unless the person
// typed one), and a shared dtype the kernel's tensor cores
// cannot take becomes the kernel's, for every pane at once (they compare the same inputs),
// unless the person chose that dtype themselves in the Debugger tab or the pane has a dtype
// of its own.

import { defaultsFor, hasKernel } from '../../engine/api.ts';
import { useCompare } from './compare-store.ts';
import { controllers } from '../store/controllers.ts';
import { comparePaneId } from './pane-config.ts';
import { SHARED_PANE } from './shared-request.ts';
import { useApp } from '../store/store.ts';
import { useDefaults } from '../defaults/form-defaults.ts';
import { startTile } from '../store/problem-form.ts';

export function chooseCompareAlgorithm(index: number, algorithm: string): void {
  const pane = comparePaneId(index);
  const cmp = useCompare.getState();
  const cfg = cmp.panes[index];
  const applied = useApp.getState().problem[SHARED_PANE]?.applied;
  const touched = useDefaults.getState().touched;
  const mine = touched[pane] ?? [];
  const sharedMine = touched[SHARED_PANE] ?? [];
  // An untyped tile is the algorithm's own, resolved by each load and shown from its summary.
  const tiles = mine.includes('blockM') || mine.includes('blockN') ? {} : startTile(algorithm);
  cmp.setPane(index, { algorithm, features: {}, ...tiles });
  if (!applied || !hasKernel(algorithm)) return;
  const p = applied.problem;
  // Everything of the shared problem counts as the person's except an untouched dtype.
  const { config } = defaultsFor(algorithm, p, [
    'batch',
    'hq',
    'hk',
    'nq',
    'nk',
    'd',
    'dv',
    ...(sharedMine.includes('dtype') ? (['dtype'] as const) : []),
  ]);
  const main = controllers.get(SHARED_PANE);
  // A pane with a dtype of its own does not run the shared one: nothing to repair for everyone.
  // (One its new algorithm cannot run is refused in the pane, with the fixes, by pane-dtype.ts.)
  if (config.dtype !== p.dtype && main && cfg.dtype === undefined) {
    useApp.getState().setForm(SHARED_PANE, { dtype: config.dtype });
    useCompare.setState({
      syncNotice: `The shared problem now runs in ${config.dtype}: ${algorithm}'s tensor cores take no ${p.dtype} (every pane compares the same inputs).`,
    });
    void main.load({ ...applied, problem: { ...p, dtype: config.dtype } });
  }
}
