// What the share link restored: notices about ignored parts, and the steps still to be
// restored once each pane's run has loaded.

import { create } from 'zustand';
import type { PaneId } from '../store/store.ts';

interface ShareState {
  notices: string[];
  pendingSteps: Record<PaneId, number>;
  dismiss(): void;
}

export const useShare = create<ShareState>()((set) => ({
  notices: [],
  pendingSteps: {},
  dismiss: () => set({ notices: [] }),
}));
