// The lessons: a table of contents with progress, or one chapter. Loaded lazily from the
// app shell, so KaTeX and the lesson text cost nothing until a lesson is opened.

import { useEffect } from 'react';
import { CHAPTERS, chapterByNumber } from '../../content/lessons/chapters/index.ts';
import { ChapterView } from './ChapterView.tsx';
import { useProgress } from './progress.ts';
import { goToLesson, type LessonRoute } from './route.ts';
import './lessons.css';

function Contents() {
  const { visited, solved, last } = useProgress();
  const reset = useProgress((s) => s.reset);
  const resume = last !== null ? chapterByNumber(last) : undefined;
  return (
    <article className="lesson-contents" aria-labelledby="contents-title">
      <h2 id="contents-title">Lessons: from standard attention to FA4</h2>
      <p className="lesson-intro">
        {CHAPTERS.length} chapters, each with a short text, a live debugger opened at the step the text talks about, changes to try, and
        questions the engine checks. Start at chapter 1 if you have not read the papers; every chapter also stands on its own for a lecture.
      </p>
      <div className="contents-actions">
        <button type="button" className="primary" onClick={() => goToLesson({ lesson: resume?.number ?? 1, step: null })}>
          {resume ? `Continue with chapter ${resume.number}: ${resume.title}` : 'Start with chapter 1'}
        </button>
        {(visited.length > 0 || solved.length > 0) && (
          <button type="button" onClick={reset}>
            Forget my progress
          </button>
        )}
      </div>
      <ol className="toc">
        {CHAPTERS.map((c) => {
          const done = c.questions.filter((q) => solved.includes(`${c.number}:${q.id}`)).length;
          return (
            <li key={c.number} data-testid={`toc-${c.number}`}>
              <a
                href={`?lesson=${c.number}`}
                onClick={(e) => {
                  e.preventDefault();
                  goToLesson({ lesson: c.number, step: null });
                }}
              >
                <span className="toc-num">{c.number}</span> <span className="toc-title">{c.title}</span>
              </a>
              <span className="toc-summary">{c.summary}</span>
              <span className={`toc-progress ${done === c.questions.length ? 'done' : ''}`} data-testid={`toc-progress-${c.number}`}>
                {visited.includes(c.number) ? `${done} of ${c.questions.length} answered` : 'not opened yet'}
              </span>
            </li>
          );
        })}
      </ol>
    </article>
  );
}

export default function LessonsPage({ route }: { route: LessonRoute }) {
  const chapter = route.lesson ? chapterByNumber(route.lesson) : undefined;
  const visit = useProgress((s) => s.visit);
  useEffect(() => {
    if (chapter) visit(chapter.number);
  }, [chapter, visit]);
  useEffect(() => {
    document.title = chapter ? `${chapter.number}. ${chapter.title} · FlashScope lessons` : 'Lessons · FlashScope';
    return () => {
      document.title = 'FlashScope';
    };
  }, [chapter]);
  if (route.lesson && !chapter) {
    return (
      <div className="lessons">
        <p className="error" role="alert">
          There is no chapter {route.lesson}; the lessons have chapters 1 to {CHAPTERS.length}.
        </p>
        <Contents />
      </div>
    );
  }
  return (
    <div className="lessons">
      {/* A chapter's initial step is read once, when the chapter opens; stepping rewrites the URL afterwards. */}
      {chapter ? (
        <ChapterView key={chapter.number} chapter={chapter} initialStep={route.step !== null ? route.step - 1 : null} />
      ) : (
        <Contents />
      )}
    </div>
  );
}
