// Every chapter against what its panes show: a view the text, the questions or the "try this"
// notes send the student to is open in a pane and applies to that pane's kernel; a preset the
// hardware model draws passes the model's own checks (no "does not fit" in place of a timeline);
// every number the text quotes is a placeholder the engine fills, and the text quotes no
// measured figure (bytes, times, ratios with decimals) of its own.

import { describe, expect, it } from 'vitest';
import { CHAPTERS } from '../../content/lessons/chapters/index.ts';
import { chapterFacts, checkAnswer, lessonContext, RunCache } from '../../content/lessons/chapters/evaluate.ts';
import { placeholdersOf } from '../../content/lessons/chapters/facts.ts';
import { displayParts } from '../../content/tex.ts';
import { outlierQk } from '../../content/lessons/chapters/low-precision.ts';
import type { Chapter } from '../../content/lessons/chapters/types.ts';
import type { LoadSummary } from '../../engine/debugger/protocol.ts';
import { featureKeysOf } from '../../engine/hw/model.ts';
import { describeFor, hasHardwareModel, hwAlgorithmFor, shapeOf } from '../../engine/algorithms/schedule-registry.ts';
import { defaultGpu } from '../store/gpus.ts';
import { VIEWS } from '../views/registry.ts';
import { scaleLines } from '../views/tile-info.ts';
import { roundFp8, type TilePrecision } from '../../engine/api.ts';

/** How text names a view: its title followed by "view", or a name only that view carries. */
const NAMED: { id: string; pattern: RegExp }[] = [
  ...VIEWS.map((v) => ({ id: v.id, pattern: new RegExp(`\\b${v.title.replace(/[-]/g, '\\-')} views?\\b`, 'i') })),
  { id: 'hw-timeline', pattern: /\b(warp-role )?timeline\b/i },
  { id: 'hw-memory', pattern: /\bmemory map\b|\bSMEM strip\b/i },
  { id: 'formula', pattern: /\bFormula view\b/ },
  { id: 'heatmaps', pattern: /\bheatmaps?\b/i },
];

/** Every piece of text a student reads in the chapter, with where it stands. */
function textsOf(c: Chapter): { where: string; text: string }[] {
  const out: { where: string; text: string }[] = [];
  c.blocks.forEach((b, i) => {
    if ('text' in b) out.push({ where: `block ${i}`, text: b.text });
    if (b.kind === 'math') out.push({ where: `block ${i}`, text: b.tex });
  });
  for (const t of c.tryThis) out.push({ where: `try "${t.label}"`, text: `${t.label} ${t.look}` });
  for (const q of c.questions) out.push({ where: `question ${q.id}`, text: `${q.prompt} ${q.hint}` });
  return out;
}

/** The summary fields the views' `when` reads, for a preset. */
function summaryOf(req: Chapter['panes'][number]['preset']): LoadSummary {
  return { algorithm: req.algorithm, pass: req.pass ?? 'forward' } as LoadSummary;
}

/**
 * A figure the engine would produce: a decimal, or a number with a byte or time unit or a "×".
 * Figures of the hardware itself (227 KiB of SMEM) and of published papers are not measured
 * here; they are listed per chapter with what they are.
 */
const MEASURED = /(?<![\w.^{§-])\d[\d\u202f ]*(\.\d+)?\s?(B|KB|kB|KiB|MiB|µs|us|ms|TFLOP\/s|×)(?![\w])|(?<![\w.^{§\\-])\d+\.\d+(?![\w.])/g;
const PUBLISHED: Record<number, string[]> = {
  // The on-chip memory M the student sets, and a typical SRAM size per SM.
  4: ['100 KB', '1 KiB', '4 KiB', '8 KiB'],
  // B200's shared memory per thread block.
  8: ['227 KiB'],
  // Five matmuls against two; 8192² fp16 scores of one head.
  10: ['2.5', '128 MiB'],
  // e4m3's largest value (1.75 · 2⁸ = 448), and the FA3 paper's error ratio.
  12: ['1.75', '2.6×'],
  // 2⁻¹⁰ as a score distance: 10 · ln 2.
  13: ['6.9'],
};

const cache = new RunCache(20);

/** Views the chapter's text names that no pane of it shows, as "where: view". */
function missingViews(c: Chapter): string[] {
  const shown = new Set(c.panes.flatMap((p) => p.views));
  const out: string[] = [];
  for (const { where, text } of textsOf(c))
    for (const n of NAMED) if (n.pattern.test(text) && !shown.has(n.id)) out.push(`${where}: ${n.id}`);
  return [...new Set(out)];
}

/** Figures written out in the text (placeholders and arXiv ids aside) that the chapter does not list as not measured. */
function strayFigures(c: Chapter): string[] {
  const out: string[] = [];
  for (const { where, text } of textsOf(c)) {
    const figures = [...text.replace(/\{\{[^}]+\}\}|arXiv \d+\.\d+/g, '').matchAll(MEASURED)].map((m) => m[0].trim());
    for (const f of figures) if (!(PUBLISHED[c.number] ?? []).includes(f)) out.push(`${where}: ${f}`);
  }
  return out;
}

describe('chapters name only views their panes show', () => {
  it('the check catches a question that sends the student to a view the pane lacks, and a figure typed into the text', () => {
    const c = CHAPTERS[0];
    const q = { ...c.questions[0], hint: 'Read it in the Formula view.' };
    const broken: Chapter = { ...c, questions: [q], blocks: [{ kind: 'p', text: 'S moves 4.1 kB, 2.25× more.' }] };
    expect(missingViews(broken)).toEqual([`question ${q.id}: formula`]);
    expect(strayFigures(broken)).toEqual(['block 0: 4.1 kB', 'block 0: 2.25×']);
  });

  for (const c of CHAPTERS) {
    it(`chapter ${c.number}: every view the text names is open in a pane that can show it`, () => {
      c.panes.forEach((pane, i) => {
        for (const id of pane.views) {
          const v = VIEWS.find((x) => x.id === id);
          expect(v, `chapter ${c.number} pane ${i}: unknown view ${id}`).toBeDefined();
          expect(
            v?.when?.(summaryOf(pane.preset)) ?? true,
            `chapter ${c.number} pane ${i}: ${id} does not apply to ${pane.preset.algorithm}`,
          ).toBe(true);
        }
      });
      expect(missingViews(c)).toEqual([]);
    });
  }
});

const viewCache = new RunCache(4);

describe('presets the hardware model draws are ones it accepts', () => {
  for (const c of CHAPTERS) {
    c.panes.forEach((pane, i) => {
      const req = pane.preset;
      const pass = req.pass === 'backward' ? 'backward' : 'forward';
      if (!hasHardwareModel(req.algorithm, pass)) return;
      it(`chapter ${c.number} pane ${i} (${req.algorithm}, ${req.problem.dtype}): no "does not fit"`, () => {
        // Only the switches the schedule has; the others (FP8 block scales…) are the numerics'.
        const keys = new Set<string>(featureKeysOf(hwAlgorithmFor(req.algorithm, pass)));
        const hwFeatures = Object.fromEntries(Object.entries(req.features ?? {}).filter(([k]) => keys.has(k)));
        const sheet = describeFor(req.algorithm, defaultGpu(req.algorithm, pass), shapeOf(req.problem), hwFeatures, pass);
        expect(sheet.does_not_fit).toEqual([]);
      });
      if (pane.views.includes('hw-timeline'))
        it(`chapter ${c.number} pane ${i}: the step trace runs the tile the timeline draws`, () => {
          const sheet = describeFor(req.algorithm, defaultGpu(req.algorithm, pass), shapeOf(req.problem), {}, pass);
          const { blockM, blockN } = lessonContext(c, req, viewCache).run.result.blocks;
          expect({ blockM, blockN }).toEqual({ blockM: sheet.tiles.block_m, blockN: sheet.tiles.block_n });
        });
    });
  }
});

describe('numbers in the text come from the engine', () => {
  for (const c of CHAPTERS) {
    it(`chapter ${c.number}: every placeholder is filled from the engine, and no measured figure is written out`, () => {
      const facts = chapterFacts(c, cache);
      const used = new Set<string>();
      for (const { where, text } of textsOf(c)) {
        for (const name of placeholdersOf(text)) {
          used.add(name);
          expect(facts[name], `chapter ${c.number} ${where}: {{${name}}} has no engine value`).toMatch(/\d/);
        }
      }
      expect(strayFigures(c), 'figures written out instead of taken from the engine').toEqual([]);
      expect(Object.keys(facts).filter((k) => !used.has(k))).toEqual([]);
    });
  }
});

describe('chapters stay short enough to read in one sitting', () => {
  for (const c of CHAPTERS)
    it(`chapter ${c.number}: at most 1,200 words of written text (text the engine computes aside)`, () => {
      const words = textsOf(c)
        .filter((t) => !t.where.startsWith('block') || !('tex' in (c.blocks[Number(t.where.slice(6))] ?? {})))
        .reduce((n, t) => n + t.text.split(/\s+/).filter(Boolean).length, 0);
      expect(words).toBeLessThanOrEqual(1200);
    });
});

describe('questions answerable from the digits the views show', () => {
  it("chapter 12's stored value of x = 1: 1 / the K scale as the Precision view prints it, rounded to e4m3", () => {
    const c = CHAPTERS.find((x) => x.number === 12)!;
    const req = c.panes[0].preset;
    const run = lessonContext(c, req, cache).run;
    const at = run.events[outlierQk(run.events)];
    const ks = at?.kind === 'qk' ? at.kScale! : NaN;
    const line = scaleLines({ kScale: ks } as TilePrecision).find((l) => l.startsWith('K scale '))!;
    const shown = Number(line.slice('K scale '.length));
    const typed = roundFp8('e4m3', 1 / shown);
    expect(checkAnswer(c, 'one-stored', req, String(typed), cache).verdict, `1 / ${line} → ${typed}`).toBe('correct');
    // The unrounded quotient, or the grid's next value, is a wrong answer, so the check is not a free pass.
    expect(checkAnswer(c, 'one-stored', req, String(1 / shown), cache).verdict).toBe('wrong');
    expect(checkAnswer(c, 'one-stored', req, String(roundFp8('e4m3', typed * 1.13)), cache).verdict).toBe('wrong');
  });
});

describe('every chapter cites its sources with a place in them', () => {
  // Papers whose body no stored copy reaches: cited by the place their abstract names, and by nothing vaguer.
  const BY_ABSTRACT = ['2603.05451'];
  for (const c of CHAPTERS)
    it(`chapter ${c.number}: a paper with its arXiv id and section, a file at a commit with its lines`, () => {
      for (const s of c.sources) {
        for (const m of s.matchAll(/arXiv (\d{4}\.\d{5})/g))
          if (BY_ABSTRACT.includes(m[1]))
            expect(s, `arXiv ${m[1]} without its abstract's technique`).toMatch(/arXiv \d{4}\.\d{5}, abstract: techniques? \(\d\)/);
          else expect(s, `arXiv ${m[1]} without a section`).toMatch(/§\s?\d|Appendix [A-Z]/);
        if (/@[0-9a-f]{7,40}\b/.test(s)) expect(s, 'a file at a commit without lines').toMatch(/\bl\. \d+/);
        // A repository path ending in a file names the commit it was read at.
        if (/\/[\w-]+\.(h|hpp|cpp|cu|py)\b/.test(s)) expect(s, 'a file without a commit').toMatch(/@[0-9a-f]{7,40}\b/);
      }
    });
});

describe('display formulas wrap at their side-by-side equations', () => {
  it('cuts at top-level \\qquad only, never inside braces or an environment', () => {
    expect(displayParts('a = 1,\\qquad b = 2')).toEqual(['a = 1,', 'b = 2']);
    expect(displayParts('x_{\\qquad} = \\begin{cases} a \\qquad b \\end{cases}\\qquad y')).toEqual([
      'x_{\\qquad} = \\begin{cases} a \\qquad b \\end{cases}',
      'y',
    ]);
    expect(displayParts('\\qquadx')).toEqual(['\\qquadx']);
  });
});
