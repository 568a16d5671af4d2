// The live controller of each mounted pane, so code outside a pane (the share link's
// restore, compare mode's synchronised stepping) can move it.

import type { PaneController } from './pane-controller.ts';
import type { PaneId } from './store.ts';

export const controllers = new Map<PaneId, PaneController>();

export function registerController(pane: PaneId, c: PaneController): () => void {
  controllers.set(pane, c);
  return () => {
    if (controllers.get(pane) === c) controllers.delete(pane);
  };
}
