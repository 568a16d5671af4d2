// No chapter prints a question's answer before the student asks for it: the prose, the computed
// text, the "Try this" lines, the prompts and the hints must not contain the answer in any form a
// student would read or type, for the preset or any problem a "Try this" loads.

import { describe, expect, it } from 'vitest';
import { counterFigure } from '../../counter-figures.ts';
import type { LoadRequest } from '../../../engine/api.ts';
import { CHAPTERS } from './index.ts';
import { chapterFacts, lessonContext, liveBlock, RunCache } from './evaluate.ts';
import type { Chapter } from './types.ts';

const cache = new RunCache(12);

/** Digits that carry information: a figure with fewer than 3 (2, 16, 0.5) appears in any text legitimately. */
const significantDigits = (s: string): number => s.replace(/[^0-9]/g, '').replace(/^0+/, '').length;

/** The ways a student reads or types a number: rounded to 3–6 digits, grouped, or as the Counters view shows it. */
function answerForms(a: number): string[] {
  const forms = new Set<string>();
  if (Number.isInteger(a)) {
    forms.add(String(a));
    forms.add(a.toLocaleString('en-US'));
    forms.add(a.toLocaleString('en-US').replace(/,/g, ' '));
    if (Math.abs(a) >= 1000) {
      forms.add(counterFigure(Math.abs(a)));
      forms.add(`${counterFigure(Math.abs(a))}B`);
      forms.add(`${Number((a / 1024).toPrecision(4))} KiB`);
    }
  } else {
    for (const p of [3, 4, 5, 6]) {
      forms.add(a.toPrecision(p));
      forms.add(String(Number(a.toPrecision(p))));
    }
  }
  // A figure with a unit (4.1 kB) reads as an answer from 2 digits on; a bare one from 3.
  return [...forms].filter((f) => significantDigits(f) >= (/[a-z]/i.test(f) ? 2 : 3));
}

/** Where `form` stands in `text` as a whole figure (not inside a longer number or word), or −1. */
function findFigure(text: string, form: string): number {
  const escaped = form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`(?<![0-9.])${escaped}(?![0-9]|[a-z])`, 'i').exec(normalize(text));
  return m ? m.index : -1;
}

const normalize = (t: string): string => t.replace(/\u2212/g, '-').replace(/[\u00a0\u2009\u202f]/g, ' ');

/** Everything the chapter shows before an answer is revealed, with where it stands. */
function shownText(c: Chapter): { where: string; text: string }[] {
  const facts = chapterFacts(c, cache);
  const fill = (t: string) => t.replace(/\{\{([\w-]+)\}\}/g, (_, k: string) => facts[k] ?? '');
  const out: { where: string; text: string }[] = [];
  c.blocks.forEach((b, i) => {
    const where = `block ${i}`;
    if (b.kind === 'p' || b.kind === 'erratum' || b.kind === 'code-wins' || b.kind === 'h') out.push({ where, text: fill(b.text) });
    else if (b.kind === 'more') out.push({ where, text: fill(`${b.summary} ${b.text}`) });
    else if (b.kind === 'math') out.push({ where, text: b.tex });
    else if (b.kind === 'live') {
      const live = liveBlock(c, i, cache);
      out.push({ where, text: [live.text, ...(live.table?.rows.flat() ?? [])].join(' ') });
    }
  });
  for (const t of c.tryThis) out.push({ where: `Try this "${t.label}"`, text: fill(`${t.label} ${t.look}`) });
  for (const t of c.toggles ?? []) out.push({ where: `switch "${t.label}"`, text: t.explain });
  for (const q of c.questions) out.push({ where: `question ${q.id}`, text: `${q.prompt} ${q.hint}` });
  return out;
}

/**
 * Figures the text shows on purpose although a question has the same value, each with why it
 * gives nothing away. Keyed "chapter/question/form".
 */
const INTENTIONAL: Record<string, string> = {
  '8/rescaled-rows/128': 'the text says 128 for the tile size (128 rows, 128 TMEM lanes), never for a count of rescales',
  '8/rescaled-rows/768': 'the head-dimension-256 paragraph counts TMEM columns (768 of 512), not rescales',
  '10/atomic-adds/8192': 'the text names a training sequence length N = 8192, not a count of atomic adds',
};

/** The answers of the chapter's numeric questions for the preset and for each problem its "Try this" lines load. */
function answers(c: Chapter): { qid: string; problem: string; value: number }[] {
  const preset = c.panes[0].preset;
  const requests: [string, LoadRequest][] = [
    ['preset', preset],
    ...c.tryThis.map((t): [string, LoadRequest] => [t.label, t.change(preset)]),
  ];
  const out: { qid: string; problem: string; value: number }[] = [];
  for (const q of c.questions) {
    if (q.kind === 'choice') continue;
    for (const [problem, req] of requests) {
      const a = q.answer(lessonContext(c, req, cache));
      if (typeof a === 'number' && Number.isFinite(a)) out.push({ qid: q.id, problem, value: a });
    }
  }
  return out;
}

/** Each place a chapter's shown text prints one of its answers. */
function leaks(c: Chapter): string[] {
  const texts = shownText(c);
  const found = new Set<string>();
  for (const a of answers(c)) {
    for (const form of answerForms(a.value)) {
      if (INTENTIONAL[`${c.number}/${a.qid}/${form}`]) continue;
      for (const t of texts) {
        if (findFigure(t.text, form) >= 0)
          found.add(`chapter ${c.number}, ${t.where} prints "${form}", question ${a.qid}'s answer for the ${a.problem} problem`);
      }
    }
  }
  return [...found];
}

describe('answer forms', () => {
  it('a ratio reads at 3 to 6 digits; a byte count grouped, bare or as the Counters view rounds it', () => {
    expect(answerForms(1.60198)).toEqual(['1.60', '1.602', '1.6020', '1.60198']);
    expect(answerForms(4096)).toEqual(['4096', '4,096', '4 096', '4.1 k', '4.1 kB']);
    expect(answerForms(16)).toEqual([]);
  });

  it('a figure counts only whole: 1.602 is not in 11.602 or 1.6025, 4096 is in "4096 B"', () => {
    expect(findFigure('the ratio is 1.602.', '1.602')).toBeGreaterThan(0);
    expect(findFigure('11.602 and 1.6025', '1.602')).toBe(-1);
    expect(findFigure('O is 4096 B', '4096')).toBe(5);
    expect(findFigure('4.1 keys', '4.1 k')).toBe(-1);
  });
});

describe('no chapter prints an answer before it is asked for', () => {
  it("chapter 5's old 'K/V blocks of 16' line, which quoted question 1's ratios, is caught", () => {
    const c5 = CHAPTERS.find((c) => c.number === 5)!;
    const old: Chapter = {
      ...c5,
      tryThis: c5.tryThis.map((t) =>
        t.label === 'K/V blocks of 16' ? { ...t, look: "question 1's ratio falls from {{ratio-preset}} to {{ratio-bc16}}" } : t,
      ),
      facts: (run) => {
        const ratio = (r: LoadRequest) => {
          const total = (q: LoadRequest) => {
            const c = run(q).result.counters;
            return (
              Object.values(c.hbmRead).reduce((s, x) => s + (x ?? 0), 0) + Object.values(c.hbmWritten).reduce((s, x) => s + (x ?? 0), 0)
            );
          };
          return total(r) / total({ ...r, algorithm: 'fa2' });
        };
        const preset = c5.panes[0].preset;
        return {
          'ratio-preset': ratio(preset).toFixed(3),
          'ratio-bc16': ratio({ ...preset, blocks: { ...preset.blocks, blockN: 16 } }).toFixed(3),
        };
      },
    };
    expect(leaks(old).join('\n')).toMatch(/Try this "K\/V blocks of 16" prints .*traffic-ratio/);
  });

  for (const c of CHAPTERS) {
    it(`chapter ${c.number}`, () => {
      expect(leaks(c)).toEqual([]);
    });
  }

  it('every intentional exception still matches a figure the text prints', () => {
    for (const key of Object.keys(INTENTIONAL)) {
      const [n, qid, form] = key.split('/');
      const c = CHAPTERS.find((x) => x.number === Number(n))!;
      expect(
        answers(c).some((a) => a.qid === qid && answerForms(a.value).includes(form)),
        key,
      ).toBe(true);
    }
  });
});
