// The hardware side of the current step (what the memory map and timeline show now) and
// the kernel's lesson topics, typeset with KaTeX. Loaded lazily with KaTeX.

import 'katex/dist/katex.min.css';
import { useMemo } from 'react';
import { hardwareLessonFor } from '../../content/hardware/index.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';
import { lessonHtml } from './lesson-text.ts';

export default function HardwareNotesView() {
  const { pane } = usePane();
  const algorithm = useApp((s) => s.playback[pane].summary?.algorithm ?? '');
  const kind = useApp((s) => s.playback[pane].frame?.event.kind);
  const lesson = hardwareLessonFor(algorithm);
  // Backward phases have a hardware note only where a lesson writes one.
  const stepText = lesson && kind ? lesson.steps[kind] : undefined;
  const stepHtml = useMemo(() => (stepText ? lessonHtml(stepText) : ''), [stepText]);
  const topics = useMemo(() => lesson?.topics.map((t) => ({ ...t, html: lessonHtml(t.text) })) ?? [], [lesson]);
  if (!lesson || !kind) return null;
  return (
    <section className="view hw-lesson" aria-label="On the hardware">
      <h3>On the hardware: {kind}</h3>
      <div className="hw-step-text" data-testid="hw-step-text" data-kind={kind} dangerouslySetInnerHTML={{ __html: stepHtml }} />
      <h3>{lesson.title}</h3>
      {topics.map((t) => (
        <details key={t.id} className="hw-topic" data-topic={t.id}>
          <summary>{t.title}</summary>
          <div dangerouslySetInnerHTML={{ __html: t.html }} />
        </details>
      ))}
    </section>
  );
}
