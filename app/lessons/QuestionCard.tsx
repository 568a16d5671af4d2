// One check-your-understanding question. The answer is never on the page: the lesson
// worker computes it from the engine for the problem now loaded and says right or wrong.

import { useState } from 'react';
import type { LoadRequest } from '../../engine/api.ts';
import type { Question } from '../../content/lessons/chapters/types.ts';
import { lessonCall } from './lesson-client.ts';
import { useProgress } from './progress.ts';
import { Inline } from './RichText.tsx';
import { type Feedback, QuestionFeedback } from './QuestionFeedback.tsx';

export function QuestionCard({
  chapter,
  q,
  prompt,
  index,
  request,
}: {
  chapter: number;
  q: Question;
  /** The prompt with the numbers it quotes filled in. */
  prompt: string;
  index: number;
  request: LoadRequest | undefined;
}) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [fb, setFb] = useState<Feedback | null>(null);
  const [missed, setMissed] = useState(false);
  const solved = useProgress((s) => s.solved.includes(`${chapter}:${q.id}`));
  const solve = useProgress((s) => s.solve);

  const check = async () => {
    if (!request || busy) return;
    setBusy(true);
    try {
      const r = await lessonCall((api) => api.check(chapter, q.id, request, text));
      if (r.verdict === 'correct') {
        setFb({ kind: 'correct', message: r.message, explanation: r.explanation });
        solve(chapter, q.id);
      } else {
        setFb({ kind: r.verdict, message: r.message });
        if (r.verdict === 'wrong') setMissed(true);
      }
    } catch (e) {
      setFb({ kind: 'error', message: `Could not check the answer: ${e instanceof Error ? e.message : String(e)}` });
    } finally {
      setBusy(false);
    }
  };

  const reveal = async () => {
    if (!request) return;
    setBusy(true);
    try {
      const r = await lessonCall((api) => api.reveal(chapter, q.id, request));
      setFb({ kind: 'revealed', message: `The answer is ${r.answer}.`, explanation: r.explanation });
    } catch (e) {
      setFb({ kind: 'error', message: `Could not compute the answer: ${e instanceof Error ? e.message : String(e)}` });
    } finally {
      setBusy(false);
    }
  };

  const id = `q-${chapter}-${q.id}`;
  return (
    <form
      className={`question ${fb?.kind ?? ''}`}
      data-testid={`question-${q.id}`}
      // Keys typed here (arrows in radio groups, Enter) belong to the question, not the debugger.
      onKeyDown={(e) => e.stopPropagation()}
      onSubmit={(e) => {
        e.preventDefault();
        void check();
      }}
    >
      <p className="q-prompt" id={`${id}-prompt`}>
        <span className="q-num">Q{index + 1}.</span> <Inline text={prompt} />
        {solved && (
          <span className="q-solved" title="Answered right before">
            {' '}
            ✓ solved
          </span>
        )}
      </p>
      {q.kind === 'choice' ? (
        <div role="radiogroup" aria-labelledby={`${id}-prompt`} className="q-choices">
          {q.choices!.map((c) => (
            <label key={c.id}>
              <input type="radio" name={id} value={c.id} checked={text === c.id} onChange={() => setText(c.id)} /> {c.label}
            </label>
          ))}
        </div>
      ) : (
        <input
          className="q-input"
          type="text"
          inputMode="decimal"
          aria-labelledby={`${id}-prompt`}
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder={q.kind === 'integer' ? 'a whole number' : 'a number'}
        />
      )}
      <div className="q-buttons">
        <button type="submit" className="primary" disabled={!request || busy}>
          Check
        </button>
        {missed && fb?.kind !== 'correct' && fb?.kind !== 'revealed' && (
          <button type="button" onClick={() => void reveal()} disabled={busy}>
            Show answer
          </button>
        )}
        {!request && <span className="dim">waiting for the debugger to load…</span>}
      </div>
      {fb && <QuestionFeedback qid={q.id} fb={fb} />}
    </form>
  );
}
