// "Single | Compare" in the top bar: one debugger pane, or 2 to 4 side by side. Switching
// leaves the lessons if they are open and hands the keyboard to the mode shown.
import '../compare/compare.css';

import { goToLesson, useLessonRoute } from '../lessons/route.ts';
import { useApp } from '../store/store.ts';
import { useCompare, type AppMode } from '../compare/compare-store.ts';
import { comparePaneId } from '../compare/pane-config.ts';
import { useServing } from '../serving/serving-store.ts';

/** Shows one mode (leaving the lessons if they are open) and hands it the keyboard. */
export function openMode(m: AppMode | 'serving', inLessons: boolean): void {
  if (inLessons) goToLesson({ lesson: null, step: null });
  // Serving layouts is a page of its own over the debugger; it takes the keyboard while open.
  useServing.getState().setOpen(m === 'serving');
  if (m !== 'serving') useCompare.getState().setMode(m);
  useApp.setState((s) => ({
    layout: { ...s.layout, activePane: m === 'serving' ? 'serving' : m === 'compare' ? comparePaneId(0) : 'main' },
  }));
}

export function ModeSwitch() {
  const mode = useCompare((s) => s.mode);
  const serving = useServing((s) => s.open);
  const inLessons = useLessonRoute().lesson !== null;
  const set = (m: AppMode | 'serving') => openMode(m, inLessons);
  const on = (m: AppMode | 'serving') => !inLessons && (m === 'serving' ? serving : !serving && mode === m);
  return (
    <div className="mode-switch" role="tablist" aria-label="Debugger mode">
      {(['debugger', 'compare', 'serving'] as const).map((m) => (
        <button key={m} type="button" role="tab" aria-selected={on(m)} className={on(m) ? 'on' : undefined} onClick={() => set(m)}>
          {m === 'debugger' ? 'Single' : m === 'compare' ? 'Compare' : 'Serving'}
        </button>
      ))}
    </div>
  );
}
