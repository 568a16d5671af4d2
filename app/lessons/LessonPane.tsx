// An embedded debugger for a lesson: its own pane (own worker session), opened on the
// chapter's preset and moved to the step the text talks about. The lesson drives it only
// through the pane's controller and the store, like any other pane owner.

import { withTileNumbers } from './pane-views.ts';
import { useCallback, useEffect, useRef, useState } from 'react';
import type { LoadRequest } from '../../engine/api.ts';
import type { PaneSpec } from '../../content/lessons/chapters/types.ts';
import type { TargetStep } from '../../content/lessons/chapters/evaluate.ts';
import { DebuggerPane } from '../pane/DebuggerPane.tsx';
import type { PaneController } from '../store/pane-controller.ts';
import { useApp } from '../store/store.ts';
import { lessonCall } from './lesson-client.ts';
import { requestToForm } from '../store/problem-form.ts';

export function lessonPaneId(chapter: number, index: number): string {
  return `lesson-${chapter}-${index}`;
}

export interface LessonPaneHandle {
  /** Loads a request (form updated to match) and moves to the chapter's target step. */
  load(req: LoadRequest): Promise<void>;
  /** Moves back to the chapter's target step for what is loaded now. */
  toTarget(): Promise<void>;
  /** Moves to a step of what is loaded now (a step link in the text). */
  seek(step: number): Promise<void>;
}

function makeActive(pane: string) {
  const s = useApp.getState();
  if (s.layout.activePane !== pane) useApp.setState({ layout: { ...s.layout, activePane: pane } });
}

export function LessonPane({
  chapter,
  index,
  spec,
  initialStep,
  onHandle,
}: {
  chapter: number;
  index: number;
  spec: PaneSpec;
  /** 0-based step from a deep link; replaces the target on the first load. */
  initialStep: number | null;
  onHandle: (h: LessonPaneHandle | null) => void;
}) {
  const pane = lessonPaneId(chapter, index);
  const ctlRef = useRef<PaneController | null>(null);
  const [target, setTarget] = useState<TargetStep | null>(null);
  const [targetError, setTargetError] = useState<string | null>(null);
  // Prepared before the pane mounts: its views and a form showing the preset.
  const [ready] = useState(() => {
    const s = useApp.getState();
    const views = withTileNumbers(spec.views);
    s.addPane(pane, views);
    s.setViews(pane, views);
    s.setForm(pane, requestToForm(spec.preset));
    return true;
  });

  const seekTarget = useCallback(
    async (req: LoadRequest, override: number | null) => {
      const ctl = ctlRef.current;
      if (!ctl) return;
      setTargetError(null);
      try {
        const t = await lessonCall((api) => api.locate(chapter, index, req));
        setTarget(t);
        // Only if the person has not loaded something else meanwhile.
        if (useApp.getState().problem[pane]?.applied !== req) return;
        await ctl.seek(override !== null ? Math.min(override, t.total - 1) : t.step);
      } catch (e) {
        setTargetError(`Could not find the chapter's step: ${e instanceof Error ? e.message : String(e)}`);
      }
    },
    [chapter, index, pane],
  );

  const load = useCallback(
    async (req: LoadRequest, override: number | null = null) => {
      const ctl = ctlRef.current;
      if (!ctl) return;
      useApp.getState().setForm(pane, requestToForm(req));
      await ctl.load(req);
      if (useApp.getState().problem[pane]?.applied === req) await seekTarget(req, override);
    },
    [pane, seekTarget],
  );

  const onController = useCallback(
    (ctl: PaneController | null) => {
      ctlRef.current = ctl;
      if (!ctl) {
        onHandle(null);
        return;
      }
      onHandle({
        load: (req) => load(req),
        toTarget: async () => {
          const applied = useApp.getState().problem[pane]?.applied;
          if (applied) await seekTarget(applied, null);
        },
        seek: async (step) => {
          makeActive(pane);
          await ctl.seek(step);
        },
      });
      void load(spec.preset, initialStep);
    },
    // Mounted once per pane id (the chapter view keys panes by chapter).
    [load, onHandle, pane, seekTarget, spec.preset, initialStep],
  );

  useEffect(() => {
    if (index === 0) makeActive(pane);
  }, [index, pane]);

  // A problem loaded from the pane's own panel gets its target step recomputed too.
  const applied = useApp((s) => s.problem[pane]?.applied);
  useEffect(() => {
    if (!applied) return;
    let live = true;
    lessonCall((api) => api.locate(chapter, index, applied)).then(
      (t) => live && setTarget(t),
      (e: unknown) => live && setTargetError(`Could not find the chapter's step: ${e instanceof Error ? e.message : String(e)}`),
    );
    return () => {
      live = false;
    };
  }, [applied, chapter, index]);

  if (!ready) return null;
  return (
    <div className="lesson-pane" data-lesson-pane={pane} onPointerDown={() => makeActive(pane)} onFocusCapture={() => makeActive(pane)}>
      {spec.label && <h3 className="lesson-pane-label">{spec.label}</h3>}
      <p className="lesson-target dim" data-testid={`lesson-target-${index}`}>
        {targetError ? (
          <span className="error">{targetError}</span>
        ) : target ? (
          <>
            {target.exact ? 'The text refers to' : 'In this problem, the nearest to the text is'} step {target.step + 1} of {target.total}:{' '}
            {target.describe}.{' '}
            <button
              type="button"
              className="linkish"
              onClick={() => void seekTarget(useApp.getState().problem[pane]?.applied ?? spec.preset, null)}
            >
              Go to that step
            </button>
          </>
        ) : (
          'Loading the chapter’s problem…'
        )}
      </p>
      <DebuggerPane pane={pane} loadOnMount={false} onController={onController} />
    </div>
  );
}
