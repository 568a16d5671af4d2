// Compare mode's "Forward | Backward": one pass for the shared problem every pane runs.

import type { Pass } from '../../engine/api.ts';
import { loadPass, PassRadios } from '../backward/PassSwitch.tsx';
import type { PaneController } from '../store/pane-controller.ts';
import { useApp, type PaneId } from '../store/store.ts';
import { useCompare } from './compare-store.ts';

/**
 * Compare mode: the pass of the shared problem (the debugger pane's), for every pane. The
 * panes' kernel switches belong to one pass (FA3's forward has no 'deterministic'), so a
 * change of pass clears them.
 */
export function ComparePassSwitch({ shared, ctl }: { shared: PaneId; ctl: PaneController | undefined }) {
  const pass = useApp((s) => s.problem[shared]?.applied?.pass ?? 'forward');
  const status = useApp((s) => s.playback[shared]?.status);
  if (!ctl) return null;
  const choose = (p: Pass) => {
    if (p === pass) return;
    const cmp = useCompare.getState();
    cmp.panes.forEach((c, i) => Object.keys(c.features).length && cmp.setPane(i, { features: {} }));
    loadPass(shared, ctl, p);
  };
  return <PassRadios value={pass} disabled={status !== 'ready'} onChoose={choose} label="Pass of every pane" />;
}
