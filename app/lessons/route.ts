// Where the lessons are in the URL: ?lesson=4&step=37 opens chapter 4 with its first
// debugger at step 37 (1-based, as the step counter shows it); ?lesson (no number) opens
// the table of contents. Other query parameters are left as they are, so this can sit
// beside the rest of the app's URL state.

import { useSyncExternalStore } from 'react';

export interface LessonRoute {
  /** null: not in the lessons; 0: the table of contents; 1..10: a chapter. */
  lesson: number | null;
  /** 1-based step from the link, if any. */
  step: number | null;
}

function positiveInt(v: string | null): number | null {
  if (v === null || !/^\d+$/.test(v.trim())) return null;
  const n = Number(v);
  return n >= 1 ? n : null;
}

export function parseLessonRoute(search: string): LessonRoute {
  const q = new URLSearchParams(search);
  if (!q.has('lesson')) return { lesson: null, step: null };
  return { lesson: positiveInt(q.get('lesson')) ?? 0, step: positiveInt(q.get('step')) };
}

/** `search` with the lesson parameters set (or removed for lesson = null). */
export function formatLessonRoute(search: string, r: LessonRoute): string {
  const q = new URLSearchParams(search);
  q.delete('lesson');
  q.delete('step');
  if (r.lesson !== null) {
    q.set('lesson', r.lesson > 0 ? String(r.lesson) : '');
    if (r.lesson > 0 && r.step !== null) q.set('step', String(r.step));
  }
  const s = q
    .toString()
    .replace(/^lesson=$/, 'lesson')
    .replace(/lesson=(&|$)/, 'lesson$1');
  return s ? `?${s}` : '';
}

const listeners = new Set<() => void>();
function notify() {
  for (const l of listeners) l();
}
if (typeof window !== 'undefined') window.addEventListener('popstate', notify);

function subscribe(l: () => void) {
  listeners.add(l);
  return () => listeners.delete(l);
}

let cachedSearch = '';
let cached: LessonRoute = { lesson: null, step: null };
function snapshot(): LessonRoute {
  const s = window.location.search;
  if (s !== cachedSearch) {
    cachedSearch = s;
    cached = parseLessonRoute(s);
  }
  return cached;
}

export function useLessonRoute(): LessonRoute {
  return useSyncExternalStore(subscribe, snapshot, snapshot);
}

/** Navigates (a history entry, so Back works); `replace` for step updates while stepping. */
export function goToLesson(r: LessonRoute, replace = false): void {
  const url = `${window.location.pathname}${formatLessonRoute(window.location.search, r)}${window.location.hash}`;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  notify();
}
