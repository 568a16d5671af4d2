// A formula as the formula panel shows it, and numbers written as TeX: shared by the forward
// and backward formulas and the live lesson text.

export interface Formula {
  /** The update in symbols. */
  symbolic: string;
  /** The same update with this row's numbers. */
  live: string;
}

/** A number as TeX: 5 significant digits, ±∞ and NaN spelled out. */
export function texNum(x: number | undefined): string {
  if (x === undefined) return '?';
  if (Number.isNaN(x)) return '\\mathrm{NaN}';
  if (x === Infinity) return '\\infty';
  if (x === -Infinity) return '-\\infty';
  const a = Math.abs(x);
  const s = a !== 0 && (a < 1e-4 || a >= 1e6) ? x.toExponential(3) : String(Number(x.toPrecision(5)));
  const m = /^(-?[\d.]+)e([+-]\d+)$/.exec(s);
  return m ? `${m[1]}\\times10^{${Number(m[2])}}` : s;
}

/**
 * A display formula cut at its top-level `\qquad`s (outside braces and environments), so that
 * the equations a line sets side by side can wrap onto lines of their own on a narrow screen.
 */
export function displayParts(tex: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < tex.length; i++) {
    const c = tex[i];
    if (c === '\\' && tex.startsWith('\\begin{', i)) depth++;
    else if (c === '\\' && tex.startsWith('\\end{', i)) depth--;
    else if (c === '{') depth++;
    else if (c === '}') depth--;
    else if (c === '\\' && depth === 0 && tex.startsWith('\\qquad', i) && !/[a-zA-Z]/.test(tex[i + 6] ?? '')) {
      parts.push(tex.slice(start, i));
      start = i + 6;
    }
    if (c === '\\') i++;
  }
  parts.push(tex.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}
