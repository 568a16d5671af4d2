// "Debugger | Lessons" in the top bar: the way into the lessons and back to the one-pane debugger.
import '../lessons/entry.css';

import { goToLesson, useLessonRoute } from '../lessons/route.ts';
import { useCompare } from '../compare/compare-store.ts';
import { useServing } from '../serving/serving-store.ts';
import { openMode } from './ModeSwitch.tsx';

export function LessonsNav() {
  const inLessons = useLessonRoute().lesson !== null;
  const single = useCompare((s) => s.mode === 'debugger');
  const serving = useServing((s) => s.open);
  // "Debugger" is the one-pane debugger only; Compare and Serving have their own tabs.
  const onDebugger = !inLessons && single && !serving;
  return (
    <nav className="topnav" aria-label="Sections">
      <button type="button" aria-current={onDebugger ? 'page' : undefined} onClick={() => openMode('debugger', inLessons)}>
        Debugger
      </button>
      <button type="button" aria-current={inLessons ? 'page' : undefined} onClick={() => goToLesson({ lesson: 0, step: null })}>
        Lessons
      </button>
    </nav>
  );
}
