// "Single | Compare" in the top bar: one debugger pane, or 2 to 4 side by side. Switching
// leaves the lessons if they are open and hands the keyboard to the mode shown.
import './compare.css';

import { goToLesson, useLessonRoute } from '../lessons/route.ts';
import { useApp } from '../store/store.ts';
import { useCompare, type AppMode } from './compare-store.ts';
import { comparePaneId } from './pane-config.ts';

export function ModeSwitch() {
  const mode = useCompare((s) => s.mode);
  const inLessons = useLessonRoute().lesson !== null;
  const set = (m: AppMode) => {
    if (inLessons) goToLesson({ lesson: null, step: null });
    useCompare.getState().setMode(m);
    useApp.setState((s) => ({ layout: { ...s.layout, activePane: m === 'compare' ? comparePaneId(0) : 'main' } }));
  };
  return (
    <div className="mode-switch" role="tablist" aria-label="Debugger mode">
      {(['debugger', 'compare'] as const).map((m) => (
        <button key={m} type="button" role="tab" aria-selected={!inLessons && mode === m} className={!inLessons && mode === m ? 'on' : undefined} onClick={() => set(m)}>
          {m === 'debugger' ? 'Single' : 'Compare'}
        </button>
      ))}
    </div>
  );
}
