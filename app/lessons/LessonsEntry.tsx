// How the lessons plug into the app shell: a wrapper that shows the lessons instead of its
// children while the URL names a lesson (?lesson…).

import { lazy, Suspense, type ReactNode } from 'react';
import { useLessonRoute } from './route.ts';
import './entry.css';

// The lessons (text, KaTeX, widgets) load only when opened.
const LessonsPage = lazy(() => import('./LessonsPage.tsx'));

export function WithLessons({ children }: { children: ReactNode }) {
  const route = useLessonRoute();
  if (route.lesson === null) return <>{children}</>;
  return (
    <Suspense fallback={<p className="dim lessons">Loading the lessons…</p>}>
      <LessonsPage route={route} />
    </Suspense>
  );
}
