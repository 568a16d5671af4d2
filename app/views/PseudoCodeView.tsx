// The algorithm's pseudo-code with the current line highlighted, and what this step does.

import { contentFor, lineIndexFor } from '../../content/index.ts';
import { backwardContentId } from '../../content/backward/index.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';

export function PseudoCodeView() {
  const { pane } = usePane();
  const event = useApp((s) => s.playback[pane].textFrame?.event);
  const algorithm = useApp((s) => s.playback[pane].summary?.algorithm);
  const name = useApp((s) => s.playback[pane].summary?.algorithmName);
  const backward = useApp((s) => s.playback[pane].summary?.pass === 'backward');
  const schedule = useApp((s) => s.playback[pane].summary?.schedule);
  if (!event || !algorithm) return null;
  const c = contentFor(backward ? backwardContentId(algorithm) : algorithm);
  if (!c) {
    return (
      <section className="view pseudo" aria-label="Pseudo-code">
        <p>
          {name}
          {backward ? '’s backward' : ''} has no pseudo-code in FlashScope's content yet; the current step is {event.kind} ({event.line}).
        </p>
      </section>
    );
  }
  const current = lineIndexFor(c, event);
  return (
    <section className="view pseudo" aria-label="Pseudo-code">
      <h3>
        {c.title} <span className="source">— {c.source}</span>
      </h3>
      {schedule && !backward && (
        <p className="schedule-note" data-testid="schedule-note">
          {schedule}
        </p>
      )}
      <ol className="code">
        {c.lines.map((l, i) => (
          <li
            key={i}
            className={i === current ? 'current' : undefined}
            aria-current={i === current ? 'step' : undefined}
            style={{ paddingLeft: `${0.6 + l.indent * 1.4}em` }}
          >
            {l.text}
          </li>
        ))}
      </ol>
      <p className="explain" role="note" aria-label="Step explanation">
        {c.explain[event.line] ?? (current >= 0 ? c.explain[c.lines[current].id] : '')}
      </p>
      {c.corrections && (
        <details className="corrections">
          <summary>Corrections to {c.corrections.listing}</summary>
          <ul>
            {c.corrections.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
