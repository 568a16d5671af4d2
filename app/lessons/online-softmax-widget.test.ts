// The online softmax widget's table names its columns in typeset maths: x_i, m_i, the two factors, ℓ_i.

import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { OnlineSoftmaxWidget } from './OnlineSoftmaxWidget.tsx';

describe('online softmax widget', () => {
  it('heads the running-sum column ℓ_i, typeset', () => {
    const html = renderToStaticMarkup(createElement(OnlineSoftmaxWidget));
    const head = /<thead>(.*?)<\/thead>/s.exec(html)?.[1] ?? '';
    const tex = [...head.matchAll(/data-tex="([^"]*)"/g)].map((m) => m[1]);
    expect(tex).toEqual(['x_i', 'm_i', 'e^{m_{i-1}-m_i}', 'e^{x_i-m_i}', '\\ell_i']);
    // KaTeX draws \ell as ℓ; a doubled backslash would have drawn a line break and the letters "ell".
    expect(head).toContain('ℓ');
    expect(head).not.toMatch(/>e<\/span><span[^>]*>l<\/span><span[^>]*>l</);
  });
});
