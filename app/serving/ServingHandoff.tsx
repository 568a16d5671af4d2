// Inside the debugger's Load tensors dialog: integer tensors mean a serving layout, which the
// dense debugger cannot run; this note offers to run the files on the Serving tab.

import { useState } from 'react';
import { useApp } from '../store/store.ts';
import { servingFilesByName } from './serving-handoff.ts';
import { useServing } from './serving-store.ts';

export function ServingHandoff({ files, onDone }: { files: readonly File[]; onDone: () => void }) {
  const [error, setError] = useState<string>();
  const open = () => {
    const r = servingFilesByName(files);
    if ('error' in r) return setError(r.error);
    const s = useServing.getState();
    s.setForm({ layout: r.layout });
    s.setOpen(true);
    useApp.setState((st) => ({ layout: { ...st.layout, activePane: 'serving' } }));
    const { causal, algorithm, splits } = useServing.getState().form;
    void s.loadFiles({ layout: r.layout, files: r.files, qLayout: 'bnhd', causal, algorithm, splits });
    onDone();
  };
  return (
    <div
      className="serving-handoff"
      data-testid="serving-handoff"
      style={{ borderTop: '1px solid var(--border)', marginTop: 8, paddingTop: 4 }}
    >
      <p>
        Integer tensors are offsets, a block table or cache lengths: a serving layout (a packed varlen batch or a paged K/V cache). The
        Serving tab runs it, one sequence at a time.{' '}
        <button type="button" onClick={open}>
          Run them on the Serving tab
        </button>
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
