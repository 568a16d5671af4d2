// Lesson text to HTML: paragraphs, **bold**, `code`, and KaTeX for $…$ and $$…$$. The input
// is our own content (content/hardware/), escaped before the markup is applied.

import katex from 'katex';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function inline(s: string): string {
  return esc(s)
    .replace(/\*\*(.+?)\*\*/g, '<b>$1</b>')
    .replace(/\*(.+?)\*/g, '<i>$1</i>')
    .replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** Rendered texts: the step text changes on nearly every step, KaTeX is not free. */
const cache = new Map<string, string>();

export function lessonHtml(text: string): string {
  let html = cache.get(text);
  if (html === undefined) cache.set(text, (html = render(text)));
  return html;
}

function render(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((para) => {
      let html = '';
      let last = 0;
      const re = /\$\$([\s\S]+?)\$\$|\$([^$]+?)\$/g;
      for (let m = re.exec(para); m; m = re.exec(para)) {
        html += inline(para.slice(last, m.index));
        const tex = m[1] ?? m[2];
        // KaTeX's HTML is hidden from screen readers: the TeX names the formula for them.
        html += `<span role="math" aria-label="${esc(tex).replace(/"/g, '&quot;')}">${katex.renderToString(tex, { throwOnError: false, displayMode: m[1] !== undefined, output: 'html' })}</span>`;
        last = m.index + m[0].length;
      }
      html += inline(para.slice(last));
      return `<p>${html}</p>`;
    })
    .join('');
}
