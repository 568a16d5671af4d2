// Lesson text: inline maths between $…$ typeset by KaTeX, **bold** runs, display formulas.
// KaTeX never throws here: a malformed formula shows in red in place, the page goes on.
// KaTeX's HTML is hidden from screen readers, so each formula is a math element named by its TeX.

import katex from 'katex';
import 'katex/dist/katex.min.css';
import { Fragment, useMemo, type ReactNode } from 'react';
import { displayParts } from '../../content/tex.ts';

export function texHtml(tex: string, display: boolean): string {
  return katex.renderToString(tex, { throwOnError: false, displayMode: display, output: 'html' });
}

export function Tex({ tex, display = false }: { tex: string; display?: boolean }) {
  const html = useMemo(() => texHtml(tex, display), [tex, display]);
  return display ? (
    <div className="lesson-math" role="math" aria-label={tex} data-tex={tex} dangerouslySetInnerHTML={{ __html: html }} />
  ) : (
    <span className="lesson-imath" role="math" aria-label={tex} data-tex={tex} dangerouslySetInnerHTML={{ __html: html }} />
  );
}

/** A display formula whose side-by-side equations wrap onto lines of their own where the line is too narrow. */
export function TexDisplay({ tex }: { tex: string }) {
  const html = useMemo(() => displayParts(tex).map((part) => texHtml(part, true)), [tex]);
  if (html.length === 1) return <Tex tex={tex} display />;
  return (
    <div className="lesson-math lesson-math-row" role="math" aria-label={tex} data-tex={tex}>
      {html.map((h, i) => (
        <span key={i} dangerouslySetInnerHTML={{ __html: h }} />
      ))}
    </div>
  );
}

/** Splits text into plain, **bold** and $maths$ pieces. An unmatched $ is kept as text. */
export function splitInline(text: string): { kind: 'text' | 'bold' | 'math'; value: string }[] {
  const out: { kind: 'text' | 'bold' | 'math'; value: string }[] = [];
  const re = /\$([^$]+)\$|\*\*([^*]+)\*\*/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) out.push({ kind: 'text', value: text.slice(last, m.index) });
    if (m[1] !== undefined) out.push({ kind: 'math', value: m[1] });
    else out.push({ kind: 'bold', value: m[2] });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ kind: 'text', value: text.slice(last) });
  return out;
}

export function Inline({ text }: { text: string }): ReactNode {
  return (
    <>
      {splitInline(text).map((p, i) => (
        <Fragment key={i}>{p.kind === 'math' ? <Tex tex={p.value} /> : p.kind === 'bold' ? <strong>{p.value}</strong> : p.value}</Fragment>
      ))}
    </>
  );
}
