// The text form of a mask's aux arrays, for the editor and share links:
// `doc = 0*12, 1*28, 2*16; slope = 0.5, 0.25` (name = entries; `v*n` repeats v n times).

import { auxNameProblem } from './mask-language.ts';
import { MAX_AUX_ENTRIES, MaskSpecError } from './mask-spec.ts';

/** Longest aux text accepted (a link must not carry a huge table). */
export const MAX_AUX_TEXT = 8000;

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** Parses aux text; throws MaskSpecError('mask.aux', …) naming the array and entry. */
export function parseAuxText(text: string): Record<string, number[]> | undefined {
  if (text.length > MAX_AUX_TEXT) throw new MaskSpecError('mask.aux', `at most ${MAX_AUX_TEXT} characters, got ${text.length}`);
  // A Map, so a name like __proto__ is an entry like any other and never an object's prototype.
  const out = new Map<string, number[]>();
  let total = 0;
  for (const part of text.split(';')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq < 0) throw new MaskSpecError('mask.aux', `"${part.trim().slice(0, 40)}" needs the form name = 1, 2, 3`);
    const name = part.slice(0, eq).trim();
    const why = auxNameProblem(name);
    if (why) throw new MaskSpecError('mask.aux', why);
    if (out.has(name)) throw new MaskSpecError('mask.aux', `'${name}' is given twice`);
    const values: number[] = [];
    const items = part.slice(eq + 1).split(',');
    for (let k = 0; k < items.length; k++) {
      const item = items[k].trim();
      const [v, times = '1'] = item.split('*').map((s) => s.trim());
      if (!NUMBER.test(v ?? '') || !/^\d+$/.test(times) || item.split('*').length > 2)
        throw new MaskSpecError('mask.aux', `${name}: entry ${k + 1} "${item.slice(0, 20)}" is not a number (or number*count)`);
      const n = Number(times);
      total += n;
      if (total > MAX_AUX_ENTRIES) throw new MaskSpecError('mask.aux', `aux arrays hold at most ${MAX_AUX_ENTRIES} entries in all`);
      for (let r = 0; r < n; r++) values.push(Number(v));
    }
    out.set(name, values);
  }
  return out.size > 0 ? Object.fromEntries(out) : undefined;
}

/** The text of aux arrays, runs of equal entries written v*n. */
export function auxToText(aux: Record<string, readonly number[]>): string {
  return Object.entries(aux)
    .map(([name, values]) => {
      const items: string[] = [];
      for (let i = 0; i < values.length; ) {
        let j = i;
        while (j < values.length && values[j] === values[i]) j++;
        items.push(j - i > 1 ? `${values[i]}*${j - i}` : String(values[i]));
        i = j;
      }
      return `${name} = ${items.join(', ')}`;
    })
    .join('; ');
}
