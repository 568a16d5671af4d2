// Which panes run on tensors from files. The LoadRequest carries the File handles (they
// are cloned by reference into the worker, never read here); the form keeps the shapes so
// the problem panel shows what is being stepped through.

import { create } from 'zustand';
import type { LoadRequest, ImportedShape, TensorImport } from '../../engine/api.ts';
import type { PaneId } from '../store/store.ts';

export interface ImportedInputs {
  spec: TensorImport;
  full: ImportedShape;
  /** e.g. "q.npy · k.npy · v.npy, batch 0, head 3 (BNHD)". */
  label: string;
}

interface ImportState {
  imported: Record<PaneId, ImportedInputs | undefined>;
  set(pane: PaneId, v: ImportedInputs | undefined): void;
}

export const useImport = create<ImportState>()((set) => ({
  imported: {},
  set: (pane, v) => set((s) => ({ imported: { ...s.imported, [pane]: v } })),
}));

/** The request with the pane's imported tensors attached, when it has some. */
export function withImported(pane: PaneId, req: LoadRequest): LoadRequest {
  const imp = useImport.getState().imported[pane];
  return imp ? { ...req, tensors: imp.spec } : req;
}
