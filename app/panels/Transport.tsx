// Playback controls: buttons, scrubber, speed, granularity and the step counter.

import { useState } from 'react';
import type { Granularity } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { stepActor, stepInWords } from './step-words.ts';
import { formDiffersFromRun } from './load-pending.ts';

const SPEEDS: [number, string][] = [
  [1, '1 step/s'],
  [5, '5 steps/s'],
  [10, '10 steps/s'],
  [30, '30 steps/s'],
  [0, 'Max'],
];

export function Transport() {
  const { pane, ctl } = usePane();
  const step = useApp((s) => s.playback[pane].frame?.step);
  const total = useApp((s) => s.playback[pane].frame?.total);
  const event = useApp((s) => s.playback[pane].frame?.event);
  // Only the single debugger's pane loads from a form the person edits; compare and lesson panes load their own requests.
  const pending = useApp(
    (s) => pane === 'main' && s.playback[pane].status === 'ready' && formDiffersFromRun(s.problem[pane].form, s.problem[pane].applied),
  );
  const playing = useApp((s) => s.playback[pane].playing);
  const speed = useApp((s) => s.playback[pane].speed);
  const granularity = useApp((s) => s.playback[pane].granularity);
  const status = useApp((s) => s.playback[pane].status);
  const hit = useApp((s) => s.playback[pane].hit);
  const error = useApp((s) => s.playback[pane].error);
  const patch = useApp((s) => s.patchPlayback);
  // The scrubber shows where the pointer is while dragging and seeks on release.
  // A drag belongs to the step it started from: once the run moves on, the scrubber follows the run again.
  const [drag, setDrag] = useState<{ from: number | undefined; to: number } | null>(null);
  const scrub = drag && drag.from === step ? drag.to : null;
  const ready = status === 'ready' && step !== undefined && total !== undefined;
  const atEnd = ready && step >= total - 1;
  const atStart = ready && step <= 0;
  return (
    <div className="transport" role="toolbar" aria-label="Playback">
      {/* The buttons and counter: on a phone the only row that stays on screen while the views scroll. */}
      <div className="transport-bar">
        <div className="buttons">
          <button type="button" onClick={() => void ctl.seek(0)} disabled={!ready || atStart} aria-label="Reset" title="Reset (Home)">
            ⇤
          </button>
          <button
            type="button"
            onClick={() => void ctl.step(-1, 'inner')}
            disabled={!ready || atStart}
            aria-label="Previous iteration"
            title="Previous iteration (Shift+←)"
          >
            «
          </button>
          <button
            type="button"
            onClick={() => void ctl.step(-1, 'phase')}
            disabled={!ready || atStart}
            aria-label="Step back"
            title="Step back (←)"
          >
            ‹
          </button>
          {playing ? (
            <button type="button" onClick={() => ctl.pause()} aria-label="Pause" title="Pause (Space)" className="primary">
              ❚❚
            </button>
          ) : (
            <button
              type="button"
              onClick={() => ctl.play()}
              disabled={!ready || atEnd}
              aria-label="Play"
              title="Play (Space)"
              className="primary"
            >
              ▶
            </button>
          )}
          <button
            type="button"
            onClick={() => void ctl.step(1, 'phase')}
            disabled={!ready || atEnd}
            aria-label="Step forward"
            title="Step forward (→)"
          >
            ›
          </button>
          <button
            type="button"
            onClick={() => void ctl.step(1, 'inner')}
            disabled={!ready || atEnd}
            aria-label="Next iteration"
            title="Next iteration (Shift+→)"
          >
            »
          </button>
          <button
            type="button"
            onClick={() => void ctl.seek(Number.MAX_SAFE_INTEGER)}
            disabled={!ready || atEnd}
            aria-label="End"
            title="End (End)"
          >
            ⇥
          </button>
        </div>
        <span className="counter" aria-live="polite" data-testid="step-counter">
          {ready ? `Step ${step + 1} of ${total}` : status === 'loading' ? 'Loading…' : 'No run loaded'}
        </span>
      </div>
      <div className="transport-more">
        <input
          className="scrubber"
          type="range"
          aria-label="Scrubber"
          min={0}
          max={Math.max(0, (total ?? 1) - 1)}
          value={scrub ?? step ?? 0}
          disabled={!ready}
          onChange={(e) => setDrag({ from: step, to: Number(e.target.value) })}
          onPointerUp={() => scrub !== null && void ctl.seek(scrub)}
          onKeyUp={() => scrub !== null && void ctl.seek(scrub)}
        />
        <label>
          Speed{' '}
          <select aria-label="Speed" value={speed} onChange={(e) => patch(pane, { speed: Number(e.target.value) })}>
            {SPEEDS.map(([v, t]) => (
              <option key={v} value={v}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Step by{' '}
          <select
            aria-label="Step granularity"
            value={granularity}
            onChange={(e) => patch(pane, { granularity: e.target.value as Granularity })}
          >
            <option value="phase">phase</option>
            <option value="inner">inner iteration</option>
            <option value="outer">outer iteration</option>
          </select>
        </label>
        {pending && (
          <span className="load-pending" role="status">
            Problem changed: press Load problem to run it
          </span>
        )}
        {ready && event && (
          <span className="where" data-testid="where">
            {stepInWords(event)}
            {stepActor(event).map((a) => ` · ${a}`)} · <code title="pseudo-code line">{event.line}</code>
          </span>
        )}
        {hit && (
          <span className="hit" role="status" data-testid="breakpoint-hit">
            ■ Stopped at breakpoint — {hit.reason}
          </span>
        )}
        {error?.place === 'transport' && (
          <span className="error" role="alert">
            {error.message}
          </span>
        )}
      </div>
    </div>
  );
}
