// A chapter's serving-layout example: the lesson pane cannot hold a paged cache of several
// sequences, so the button opens the Serving tab on exactly that example and runs it.

import type { ServingForm } from '../../engine/api.ts';
import { useServing } from '../serving/serving-store.ts';
import { useApp } from '../store/store.ts';
import { goToLesson } from './route.ts';

export function ServingExampleButton({ label, form }: { label: string; form: ServingForm }) {
  const open = () => {
    const s = useServing.getState();
    s.setForm(structuredClone(form));
    s.setOpen(true);
    useApp.setState((st) => ({ layout: { ...st.layout, activePane: 'serving' } }));
    goToLesson({ lesson: null, step: null });
    void s.load();
  };
  return (
    <p className="serving-example">
      <button type="button" onClick={open}>
        {label}
      </button>
    </p>
  );
}
