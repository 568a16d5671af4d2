// The verdict under a question: the message (a hint after a wrong answer) and the explanation,
// with their maths typeset like the chapter text.

import { Inline } from './RichText.tsx';

export type Feedback =
  | { kind: 'correct'; message: string; explanation?: string }
  | { kind: 'wrong' | 'invalid' | 'error'; message: string }
  | { kind: 'revealed'; message: string; explanation: string };

export function QuestionFeedback({ qid, fb }: { qid: string; fb: Feedback }) {
  return (
    <div className={`q-feedback ${fb.kind}`} role="status" data-testid={`feedback-${qid}`}>
      <strong>
        <Inline text={fb.message} />
      </strong>
      {'explanation' in fb && fb.explanation && (
        <p>
          <Inline text={fb.explanation} />
        </p>
      )}
    </div>
  );
}
