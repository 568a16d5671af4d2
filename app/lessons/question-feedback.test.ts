// A hint or an explanation with maths is typeset as the chapter text is, never shown as raw $…$.

import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { QuestionFeedback } from './QuestionFeedback.tsx';

const textOf = (html: string) => html.replace(/<annotation[^>]*>.*?<\/annotation>/gs, '').replace(/<[^>]+>/g, '');

describe('question feedback', () => {
  it('typesets the maths of a hint', () => {
    const html = renderToStaticMarkup(
      createElement(QuestionFeedback, { qid: 'q', fb: { kind: 'wrong', message: 'Not quite. Read $\\ell$ for row 0.' } }),
    );
    expect(html).toContain('class="katex"');
    expect(textOf(html)).not.toContain('$');
    expect(textOf(html)).toContain('Not quite. Read ');
  });

  it('typesets the maths of an explanation, after a right answer and when revealed', () => {
    for (const kind of ['correct', 'revealed'] as const) {
      const html = renderToStaticMarkup(
        createElement(QuestionFeedback, {
          qid: 'q',
          fb: { kind, message: 'Correct.', explanation: '$\\mathrm{LSE}_5 = m_5 + \\log \\ell_5$ = 3.5647.' },
        }),
      );
      expect(html).toContain('class="katex"');
      expect(textOf(html)).not.toContain('$');
      expect(textOf(html)).toContain('= 3.5647.');
    }
  });
});
