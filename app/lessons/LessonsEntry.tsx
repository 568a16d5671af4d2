// How the lessons plug into the app shell: the top-bar entry, and a wrapper that shows the
// lessons instead of its children while the URL names a lesson (?lesson…).

import { lazy, Suspense, type ReactNode } from 'react';
import { goToLesson, useLessonRoute } from './route.ts';
import { useCompare } from '../compare/compare-store.ts';
import { useServing } from '../serving/serving-store.ts';
import { openMode } from '../compare/ModeSwitch.tsx';
import './entry.css';

// The lessons (text, KaTeX, widgets) load only when opened.
const LessonsPage = lazy(() => import('./LessonsPage.tsx'));

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

export function WithLessons({ children }: { children: ReactNode }) {
  const route = useLessonRoute();
  if (route.lesson === null) return <>{children}</>;
  return (
    <Suspense fallback={<p className="dim lessons">Loading the lessons…</p>}>
      <LessonsPage route={route} />
    </Suspense>
  );
}
