// The pane a component belongs to, and that pane's controller.
import { createContext, useContext } from 'react';
import type { PaneId } from './store.ts';
import type { PaneController } from './pane-controller.ts';

export interface PaneContextValue {
  pane: PaneId;
  ctl: PaneController;
}

export const PaneContext = createContext<PaneContextValue | null>(null);

export function usePane(): PaneContextValue {
  const v = useContext(PaneContext);
  if (!v) throw new Error('usePane outside a DebuggerPane');
  return v;
}
