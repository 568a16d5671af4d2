import { lazy, Suspense, useEffect } from 'react';
import { DebuggerPane } from './pane/DebuggerPane.tsx';
import { useApp } from './store/store.ts';
import { goToLesson, useLessonRoute } from './lessons/route.ts';

// The lessons (text, KaTeX, widgets) load only when opened.
const LessonsPage = lazy(() => import('./lessons/LessonsPage.tsx'));

export function App() {
  const theme = useApp((s) => s.layout.theme);
  const setTheme = useApp((s) => s.setTheme);
  const route = useLessonRoute();
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const other = theme === 'dark' ? 'light' : 'dark';
  const inLessons = route.lesson !== null;
  return (
    <div className="app">
      <header className="topbar">
        <h1>
          Flash<span>Scope</span>
        </h1>
        <span className="tagline">step through tiled attention, one phase at a time</span>
        <nav className="topnav" aria-label="Sections">
          <button type="button" aria-current={!inLessons ? 'page' : undefined} onClick={() => goToLesson({ lesson: null, step: null })}>
            Debugger
          </button>
          <button type="button" aria-current={inLessons ? 'page' : undefined} onClick={() => goToLesson({ lesson: 0, step: null })}>
            Lessons
          </button>
        </nav>
        <button className="theme" onClick={() => setTheme(other)} aria-label={`Switch to ${other} theme`}>
          {theme === 'dark' ? '☀' : '☾'}
        </button>
      </header>
      {inLessons ? (
        <Suspense fallback={<p className="dim lessons">Loading the lessons…</p>}>
          <LessonsPage route={route} />
        </Suspense>
      ) : (
        <DebuggerPane pane="main" />
      )}
    </div>
  );
}
