import { describe, expect, it } from 'vitest';
import { formatLessonRoute, parseLessonRoute } from './route.ts';

describe('lesson route', () => {
  it('reads chapter and 1-based step, the contents page, and the absence of lessons', () => {
    expect(parseLessonRoute('?lesson=4&step=37')).toEqual({ lesson: 4, step: 37 });
    expect(parseLessonRoute('?lesson')).toEqual({ lesson: 0, step: null });
    expect(parseLessonRoute('?lesson=')).toEqual({ lesson: 0, step: null });
    expect(parseLessonRoute('')).toEqual({ lesson: null, step: null });
  });
  it('treats malformed numbers as absent instead of failing', () => {
    expect(parseLessonRoute('?lesson=x&step=-2')).toEqual({ lesson: 0, step: null });
    expect(parseLessonRoute('?lesson=3&step=0')).toEqual({ lesson: 3, step: null });
  });
  it('writes the parameters and keeps the others', () => {
    expect(formatLessonRoute('?theme=light', { lesson: 2, step: 5 })).toBe('?theme=light&lesson=2&step=5');
    expect(formatLessonRoute('?lesson=2&step=5', { lesson: 0, step: 9 })).toBe('?lesson');
    expect(formatLessonRoute('?lesson=2&step=5&x=1', { lesson: null, step: null })).toBe('?x=1');
    expect(parseLessonRoute(formatLessonRoute('', { lesson: 7, step: null }))).toEqual({ lesson: 7, step: null });
  });
});
