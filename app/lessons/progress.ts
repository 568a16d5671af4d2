// What the student has done, remembered in the browser: the last chapter open, the chapters
// visited and the questions answered right. Storage can be unavailable (private windows,
// quotas); then progress lives for the page's lifetime only and nothing fails.

import { create } from 'zustand';

const KEY = 'flashscope.lessons.v1';

export interface LessonProgress {
  last: number | null;
  visited: number[];
  /** "chapter:questionId" of questions answered right. */
  solved: string[];
}

function read(): LessonProgress {
  try {
    const raw = window.localStorage.getItem(KEY);
    if (raw) {
      const v = JSON.parse(raw) as Partial<LessonProgress>;
      return {
        last: typeof v.last === 'number' ? v.last : null,
        visited: Array.isArray(v.visited) ? v.visited.filter((x) => typeof x === 'number') : [],
        solved: Array.isArray(v.solved) ? v.solved.filter((x) => typeof x === 'string') : [],
      };
    }
  } catch {
    // Unreadable or unavailable storage: start fresh.
  }
  return { last: null, visited: [], solved: [] };
}

function write(p: LessonProgress): void {
  try {
    window.localStorage.setItem(KEY, JSON.stringify(p));
  } catch {
    // Not persisted; the in-memory copy still works.
  }
}

interface ProgressStore extends LessonProgress {
  visit(chapter: number): void;
  solve(chapter: number, qid: string): void;
  reset(): void;
}

export const useProgress = create<ProgressStore>()((set, get) => {
  const save = () => {
    const { last, visited, solved } = get();
    write({ last, visited, solved });
  };
  return {
    ...read(),
    visit: (chapter) => {
      set((s) => ({ last: chapter, visited: s.visited.includes(chapter) ? s.visited : [...s.visited, chapter] }));
      save();
    },
    solve: (chapter, qid) => {
      const k = `${chapter}:${qid}`;
      set((s) => (s.solved.includes(k) ? s : { solved: [...s.solved, k] }));
      save();
    },
    reset: () => {
      set({ last: null, visited: [], solved: [] });
      save();
    },
  };
});
