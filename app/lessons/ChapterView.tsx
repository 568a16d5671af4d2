// One chapter: text, widgets, the embedded debugger(s) at the chapter's step, live switches,
// "try this" changes, hardware table and questions, with previous/next.

import { useCallback, useEffect, useRef, useState } from 'react';
import type { LoadRequest } from '../../engine/api.ts';
import { CHAPTERS } from '../../content/lessons/chapters/index.ts';
import type { Chapter } from '../../content/lessons/chapters/types.ts';
import { useApp } from '../store/store.ts';
import { HardwareTableView } from './HardwareTableView.tsx';
import { Fp8FormatsWidget } from './Fp8FormatsWidget.tsx';
import { IoSweepView } from './IoSweepView.tsx';
import { KernelReference } from './KernelReference.tsx';
import { LiveBlock } from './LiveBlock.tsx';
import { LessonPane, lessonPaneId, type LessonPaneHandle } from './LessonPane.tsx';
import { OnlineSoftmaxWidget } from './OnlineSoftmaxWidget.tsx';
import { QuestionCard } from './QuestionCard.tsx';
import { Inline, TexDisplay } from './RichText.tsx';
import { ServingExampleButton } from './ServingExampleButton.tsx';
import { StepLink } from './StepLink.tsx';
import { goToLesson } from './route.ts';
import { fillFacts } from '../../content/lessons/chapters/facts.ts';
import { lessonCall } from './lesson-client.ts';

/** The numbers the chapter's text quotes, computed by the lesson worker (null until they arrive). */
function useFacts(chapter: Chapter): Record<string, string> | null {
  const [facts, setFacts] = useState<Record<string, string> | null>(null);
  useEffect(() => {
    let live = true;
    setFacts(null);
    if (!chapter.facts) return;
    lessonCall((api) => api.facts(chapter.number)).then(
      (f) => live && setFacts(f),
      () => live && setFacts({}),
    );
    return () => {
      live = false;
    };
  }, [chapter]);
  return facts;
}

function SourcesFooter({ sources }: { sources: string[] }) {
  return (
    <section className="chapter-sources" aria-label="Sources">
      <h3>Sources</h3>
      <ul>
        {sources.map((s) => (
          <li key={s}>
            <Inline text={s} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function ChapterNav({ chapter, where }: { chapter: Chapter; where: 'top' | 'bottom' }) {
  const prev = CHAPTERS.find((c) => c.number === chapter.number - 1);
  const next = CHAPTERS.find((c) => c.number === chapter.number + 1);
  return (
    <nav className={`chapter-nav ${where}`} aria-label={where === 'top' ? 'Chapter navigation' : 'Chapter navigation (bottom)'}>
      <button
        type="button"
        disabled={!prev}
        onClick={() => prev && goToLesson({ lesson: prev.number, step: null })}
        aria-label={prev ? `Previous chapter: ${prev.number}. ${prev.title}` : 'No previous chapter'}
      >
        ← {prev ? `${prev.number}. ${prev.title}` : 'Previous'}
      </button>
      <button type="button" onClick={() => goToLesson({ lesson: 0, step: null })}>
        Contents
      </button>
      <button
        type="button"
        disabled={!next}
        onClick={() => next && goToLesson({ lesson: next.number, step: null })}
        aria-label={next ? `Next chapter: ${next.number}. ${next.title}` : 'No next chapter'}
      >
        {next ? `${next.number}. ${next.title}` : 'Next'} →
      </button>
    </nav>
  );
}

/** Keeps ?step= in the address bar in step with the first pane, so the link always points here. */
function useStepInUrl(chapter: number) {
  const pane = lessonPaneId(chapter, 0);
  const step = useApp((s) => s.playback[pane]?.frame?.step);
  useEffect(() => {
    if (step === undefined) return;
    goToLesson({ lesson: chapter, step: step + 1 }, true);
  }, [chapter, step]);
}

export function ChapterView({ chapter, initialStep }: { chapter: Chapter; initialStep: number | null }) {
  const handles = useRef<(LessonPaneHandle | null)[]>([]);
  const [status, setStatus] = useState<string | null>(null);
  /** A switch shows its new position at once, while the problem reloads. */
  const [pending, setPending] = useState<Record<string, boolean | number>>({});
  useStepInUrl(chapter.number);
  const facts = useFacts(chapter);
  const fill = (text: string) => fillFacts(text, facts);
  const pane0 = lessonPaneId(chapter.number, 0);
  const applied = useApp((s) => s.problem[pane0]?.applied);
  const paneReady = useApp((s) => s.playback[pane0]?.status === 'ready');

  const setHandle = useCallback(
    (i: number) => (h: LessonPaneHandle | null) => {
      handles.current[i] = h;
    },
    [],
  );
  // Stable per index, so the panes' effects do not restart.
  const handleSetters = useRef(chapter.panes.map((_, i) => setHandle(i)));

  const applyToPanes = async (change: (r: LoadRequest, i: number) => LoadRequest, what: string) => {
    setStatus(`${what}: loading…`);
    try {
      await Promise.all(
        chapter.panes.map((spec, i) => {
          const cur = useApp.getState().problem[lessonPaneId(chapter.number, i)]?.applied ?? spec.preset;
          return handles.current[i]?.load(change(cur, i));
        }),
      );
      const errs = chapter.panes.map((_, i) => useApp.getState().playback[lessonPaneId(chapter.number, i)]?.error?.message).filter(Boolean);
      setStatus(errs.length ? `${what}: ${errs.join('; ')}` : `${what}: loaded. The questions now refer to this problem.`);
    } catch (e) {
      setStatus(`${what} failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      setPending({});
    }
  };

  const textBlocks = chapter.blocks.map((b, i) =>
    b.kind === 'goto' ? (
      <StepLink key={i} chapter={chapter.number} block={i} pane={b.pane} label={b.label} handle={() => handles.current[b.pane] ?? null} />
    ) : b.kind === 'serving' ? (
      <ServingExampleButton key={i} label={b.label} form={b.form} />
    ) : b.kind === 'live' ? (
      <LiveBlock key={i} chapter={chapter.number} block={i} label={b.label} />
    ) : b.kind === 'widget' ? (
      b.widget === 'online-softmax' ? (
        <OnlineSoftmaxWidget key={i} />
      ) : b.widget === 'fp8-formats' ? (
        <Fp8FormatsWidget key={i} />
      ) : (
        <IoSweepView key={i} />
      )
    ) : b.kind === 'math' ? (
      <TexDisplay key={i} tex={b.tex} />
    ) : b.kind === 'h' ? (
      <h3 key={i}>{b.text}</h3>
    ) : b.kind === 'more' ? (
      <details key={i} className="lesson-more">
        <summary>
          <Inline text={fill(b.summary)} />
        </summary>
        <p>
          <Inline text={fill(b.text)} />
        </p>
      </details>
    ) : b.kind === 'code-wins' ? (
      <aside key={i} className="erratum code-wins" aria-label="Paper and code">
        <span className="erratum-tag">Paper vs code</span> <Inline text={fill(b.text)} />
      </aside>
    ) : b.kind === 'erratum' ? (
      <p key={i} className="erratum">
        <span className="erratum-tag">Erratum</span> <Inline text={fill(b.text)} />
      </p>
    ) : (
      <p key={i}>
        <Inline text={fill(b.text)} />
      </p>
    ),
  );

  return (
    <article className="chapter" aria-labelledby="chapter-title" data-chapter={chapter.number}>
      <header className="chapter-head">
        <p className="dim chapter-kicker">
          Chapter {chapter.number} of {CHAPTERS.length}
        </p>
        <h2 id="chapter-title">{chapter.title}</h2>
        <button type="button" className="jump" onClick={() => document.getElementById('lesson-live')?.scrollIntoView({ block: 'start' })}>
          ↓ to the debugger
        </button>
        <ChapterNav chapter={chapter} where="top" />
      </header>

      <div className="chapter-top">
        <div className="lesson-text">{textBlocks}</div>
        <aside className="lesson-side">
          <section className="try-this" aria-label="Try this">
            <h3>Try this</h3>
            <ul>
              {chapter.tryThis.map((t) => (
                <li key={t.label}>
                  <button type="button" disabled={!paneReady} onClick={() => void applyToPanes((r) => t.change(r), t.label)}>
                    {t.label}
                  </button>{' '}
                  <span className="try-look">
                    <Inline text={fill(t.look)} />
                  </span>
                </li>
              ))}
              <li>
                <button
                  type="button"
                  disabled={!paneReady}
                  onClick={() => void applyToPanes((_r, i) => chapter.panes[i].preset, 'Back to the preset')}
                >
                  Back to the preset
                </button>
              </li>
            </ul>
            {status && (
              <p className="dim" role="status" data-testid="try-status">
                {status}
              </p>
            )}
          </section>
          <section className="questions" aria-label="Check your understanding">
            <h3>Check your understanding</h3>
            <p className="dim">
              Answers are computed by the engine for the problem loaded in the debugger
              {chapter.panes.length > 1 ? ` (the ${chapter.panes[0].label} pane)` : ''}.
            </p>
            {chapter.questions.map((q, i) => (
              <QuestionCard
                key={q.id}
                chapter={chapter.number}
                q={q}
                prompt={fill(q.prompt)}
                index={i}
                request={paneReady ? applied : undefined}
              />
            ))}
          </section>
        </aside>
      </div>

      <section className="lesson-live" id="lesson-live" aria-label="Live debugger">
        {chapter.toggles && (
          <fieldset className="lesson-toggles bare" aria-label="Kernel switches">
            {chapter.toggles.map((t) => {
              const value = pending[t.feature] ?? applied?.features?.[t.feature] ?? t.kernelDefault;
              const on = value === t.on;
              return (
                <label key={t.feature} title={t.explain}>
                  <input
                    type="checkbox"
                    checked={on}
                    disabled={!paneReady}
                    onChange={(e) => {
                      const v = e.target.checked ? t.on : t.off;
                      setPending((p) => ({ ...p, [t.feature]: v }));
                      // A switch is a feature of the first pane's kernel; a pane that runs another algorithm keeps its problem.
                      const kernel = applied?.algorithm;
                      void applyToPanes(
                        (r) => (r.algorithm === kernel ? { ...r, features: { ...r.features, [t.feature]: v } } : r),
                        `${t.label} ${e.target.checked ? 'on' : 'off'}`,
                      );
                    }}
                  />{' '}
                  {t.label} <span className="dim">— {t.explain}</span>
                </label>
              );
            })}
          </fieldset>
        )}
        <div className={`lesson-panes ${chapter.panes.length > 1 ? 'two' : 'one'}`}>
          {chapter.panes.map((spec, i) => (
            <LessonPane
              key={`${chapter.number}-${i}`}
              chapter={chapter.number}
              index={i}
              spec={spec}
              initialStep={i === 0 && initialStep !== null ? initialStep : null}
              onHandle={handleSetters.current[i]}
            />
          ))}
        </div>
        {chapter.hardware && (
          <HardwareTableView
            chapter={chapter.number}
            table={chapter.hardware}
            current={applied?.features}
            toggleKeys={(chapter.toggles ?? []).map((t) => t.feature)}
          />
        )}
        {chapter.reference && <KernelReference ids={chapter.reference} />}
      </section>

      <SourcesFooter sources={chapter.sources} />
      <ChapterNav chapter={chapter} where="bottom" />
    </article>
  );
}
