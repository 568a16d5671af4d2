// A step link in a chapter's text: moves one of the chapter's debuggers to the step the
// paragraph talks about, found by the lesson worker in the problem loaded now.

import { useState } from 'react';
import { useApp } from '../store/store.ts';
import { lessonCall } from './lesson-client.ts';
import { lessonPaneId, type LessonPaneHandle } from './LessonPane.tsx';

export function StepLink({
  chapter,
  block,
  pane,
  label,
  handle,
}: {
  chapter: number;
  block: number;
  pane: number;
  label: string;
  handle: () => LessonPaneHandle | null;
}) {
  const id = lessonPaneId(chapter, pane);
  const ready = useApp((s) => s.playback[id]?.status === 'ready');
  const [note, setNote] = useState<string | null>(null);
  const go = async () => {
    const req = useApp.getState().problem[id]?.applied;
    const h = handle();
    if (!req || !h) return;
    try {
      const t = await lessonCall((api) => api.locateBlock(chapter, block, req));
      if (t.step < 0) {
        setNote('The problem loaded now has no such step.');
        return;
      }
      setNote(null);
      await h.seek(t.step);
      document.querySelector(`[data-lesson-pane="${id}"]`)?.scrollIntoView({ block: 'start', behavior: 'smooth' });
    } catch (e) {
      setNote(`Could not find the step: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  return (
    <p className="step-link">
      <button type="button" className="linkish" disabled={!ready} onClick={() => void go()}>
        ▸ Show in the debugger: {label}
      </button>
      {note && <span className="dim"> {note}</span>}
    </p>
  );
}
