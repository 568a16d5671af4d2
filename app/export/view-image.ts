// A view as an image. SVG: the view's DOM cloned with its computed styles inlined (so the
// file looks the same without the app's stylesheet) and every canvas replaced by a PNG of
// its pixels, inside a foreignObject. PNG: that SVG drawn onto a canvas at twice the CSS
// size, so heatmap cells stay crisp.

/** Styles that decide how a view looks; copying every computed property would bloat the file tenfold. */
const PROPS = [
  'display',
  'position',
  'box-sizing',
  'width',
  'height',
  'min-width',
  'max-width',
  'min-height',
  'max-height',
  'margin',
  'padding',
  'border-top',
  'border-right',
  'border-bottom',
  'border-left',
  'border-radius',
  'outline',
  'box-shadow',
  'border-collapse',
  'border-spacing',
  'background-color',
  'color',
  'font-family',
  'font-size',
  'font-weight',
  'font-style',
  'line-height',
  'letter-spacing',
  'text-align',
  'vertical-align',
  'white-space',
  'text-decoration',
  'opacity',
  'overflow',
  'visibility',
  'flex-direction',
  'flex-wrap',
  'flex-grow',
  'flex-shrink',
  'flex-basis',
  'align-items',
  'align-self',
  'align-content',
  'justify-content',
  'justify-items',
  'justify-self',
  'gap',
  'grid-template-columns',
  'grid-template-rows',
  'grid-template-areas',
  'grid-area',
  'grid-column',
  'grid-row',
  'list-style',
  'top',
  'left',
  'right',
  'bottom',
  'transform',
  'z-index',
  'image-rendering',
  'table-layout',
  'fill',
  'stroke',
  'stroke-width',
];

function inlineStyles(src: Element, dst: Element): void {
  const cs = getComputedStyle(src);
  const style = PROPS.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(';');
  dst.setAttribute('style', style);
  const a = src.children;
  const b = dst.children;
  for (let i = 0; i < a.length && i < b.length; i++) inlineStyles(a[i], b[i]);
}

function replaceCanvases(src: HTMLElement, dst: HTMLElement): void {
  const from = src.querySelectorAll('canvas');
  const to = dst.querySelectorAll('canvas');
  from.forEach((c, i) => {
    const img = document.createElement('img');
    img.src = c.toDataURL('image/png');
    img.setAttribute('width', String(c.clientWidth || c.width));
    img.setAttribute('height', String(c.clientHeight || c.height));
    img.setAttribute('style', `${to[i].getAttribute('style') ?? ''};image-rendering:pixelated`);
    to[i].replaceWith(img);
  });
}

export function viewToSvg(el: HTMLElement): { svg: string; width: number; height: number } {
  const rect = el.getBoundingClientRect();
  const width = Math.ceil(rect.width);
  const height = Math.ceil(rect.height);
  const clone = el.cloneNode(true) as HTMLElement;
  inlineStyles(el, clone);
  replaceCanvases(el, clone);
  clone.querySelectorAll('[data-export-skip]').forEach((n) => n.remove());
  clone.setAttribute('xmlns', 'http://www.w3.org/1999/xhtml');
  const body = new XMLSerializer().serializeToString(clone);
  const bg = getComputedStyle(document.documentElement).getPropertyValue('--bg').trim() || getComputedStyle(document.body).backgroundColor;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="${bg || '#fff'}"/>` +
    `<foreignObject x="0" y="0" width="${width}" height="${height}">${body}</foreignObject></svg>`;
  return { svg, width, height };
}

export async function svgToPng(svg: string, width: number, height: number, scale = 2): Promise<Blob> {
  const img = new Image();
  img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(width * scale));
  canvas.height = Math.max(1, Math.round(height * scale));
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('no 2D canvas to draw the image on');
  ctx.scale(scale, scale);
  ctx.drawImage(img, 0, 0);
  return new Promise((resolve, reject) =>
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the browser could not encode the PNG'))), 'image/png'),
  );
}
