// The problem panel's "Load tensors…" button and the line naming the files a pane runs on;
// the dialog itself (and the tensor readers) load on the first click.

import { lazy, Suspense, useState } from 'react';
import { createPortal } from 'react-dom';
import { usePane } from '../store/pane-context.ts';
import { formToRequest } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { useImport } from './import-store.ts';
import './import.css';

const ImportDialog = lazy(() => import('./ImportDialog.tsx'));

/** The problem panel's entry point, and the line saying which files the pane runs on. */
export function ImportButton() {
  const { pane, ctl } = usePane();
  const [open, setOpen] = useState(false);
  const imported = useImport((s) => s.imported[pane]);
  return (
    <div className="import-row">
      <button type="button" onClick={() => setOpen(true)}>
        Load tensors…
      </button>
      {imported && (
        <p className="imported" data-testid="imported-inputs">
          Inputs from files: {imported.label}. Shapes and dtype come from the files.{' '}
          <button
            type="button"
            onClick={() => {
              useImport.getState().set(pane, undefined);
              try {
                void ctl.load(formToRequest(useApp.getState().problem[pane].form));
              } catch (e) {
                useApp.getState().patchPlayback(pane, { error: { place: 'problem', message: (e as Error).message } });
              }
            }}
          >
            Use random inputs
          </button>
        </p>
      )}
      {/* In a portal: outside the problem form (Enter in the dialog must not submit it) and above every panel. */}
      {open &&
        createPortal(
          <Suspense fallback={null}>
            <ImportDialog onClose={() => setOpen(false)} />
          </Suspense>,
          document.body,
        )}
    </div>
  );
}
