import katex from 'katex';
import { describe, expect, it } from 'vitest';
import { CUTE_FA2_FEATURES } from '../../engine/algorithms/cute-fa2/forward.ts';
import { FA3_FEATURES } from '../../engine/algorithms/fa3/forward.ts';
import { FA4_FEATURES } from '../../engine/algorithms/fa4/forward.ts';
import { FLASH_DECODING_FEATURES } from '../../engine/algorithms/flash-decoding/forward.ts';
import { FMHA_V2_FEATURES } from '../../engine/algorithms/fmha-v2/forward.ts';
import { SAGE_FEATURES } from '../../engine/algorithms/sage/forward.ts';
import { algorithmById } from '../../engine/algorithms/registry.ts';
import type { RunOptions } from '../../engine/algorithms/types.ts';
import { randomInputs } from '../../engine/core/inputs.ts';
import type { AttentionProblem } from '../../engine/core/problem.ts';
import { runToEnd } from '../../engine/run.ts';
import type { PhaseKind } from '../../engine/trace/events.ts';
import { contentFor } from '../index.ts';
import { HW_LESSONS } from './index.ts';
import type { AlgorithmLesson } from './types.ts';

/** The KaTeX spans of a Markdown text ($$…$$ and $…$), code spans removed first. */
function mathSpans(md: string): { tex: string; display: boolean }[] {
  const text = md.replace(/`[^`]*`/g, '');
  const out: { tex: string; display: boolean }[] = [];
  const re = /\$\$([\s\S]+?)\$\$|\$([^$]+?)\$/g;
  for (let m = re.exec(text); m; m = re.exec(text))
    out.push(m[1] !== undefined ? { tex: m[1], display: true } : { tex: m[2], display: false });
  return out;
}

/** The Markdown + KaTeX parts (the pseudo-code pane's content is plain text). */
function allText(l: AlgorithmLesson): string[] {
  return [l.intro, ...Object.values(l.steps), ...l.features.map((f) => f.text)].filter((t): t is string => typeof t === 'string');
}

// A problem per algorithm that makes it emit every line it has: several blocks (rescale),
// a causal diagonal (mask), and for flash-decoding several splits (partials, combine).
const runs: Record<string, { p: Partial<AttentionProblem>; o: Omit<RunOptions, 'trace'> }> = {
  // A causal window leaves the first K/V blocks empty for the last Q tile: every run has a skip step.
  fa3: { p: { nq: 150, nk: 300, causal: true, window: { left: 64, right: 0 } }, o: { blockN: 64 } },
  fa4: { p: { nq: 150, nk: 400, causal: true, window: { left: 64, right: 0 } }, o: { features: { lazyRescale: false } } },
  'fmha-v2': { p: { nq: 150, nk: 300, causal: true, window: { left: 64, right: 0 } }, o: {} },
  'cute-fa2': { p: { nq: 256, nk: 300, causal: true }, o: {} },
  'flash-decoding': { p: { nq: 3, nk: 600, causal: true, window: { left: 100, right: 0 } }, o: { blockN: 64, features: { splits: 3 } } },
  sage: { p: { nq: 150, nk: 300, causal: true, window: { left: 64, right: 0 } }, o: { features: { version: 2 } } },
};
const featureKeys: Record<string, string[]> = {
  fa3: Object.keys(FA3_FEATURES),
  fa4: Object.keys(FA4_FEATURES),
  'fmha-v2': Object.keys(FMHA_V2_FEATURES),
  'cute-fa2': Object.keys(CUTE_FA2_FEATURES),
  'flash-decoding': Object.keys(FLASH_DECODING_FEATURES),
  sage: Object.keys(SAGE_FEATURES),
};

describe('hardware-model lessons', () => {
  for (const [id, lesson] of Object.entries(HW_LESSONS)) {
    describe(id, () => {
      it('covers exactly the pseudo-code lines and step kinds the algorithm emits', () => {
        expect(lesson.id).toBe(id);
        const { p, o } = runs[id];
        const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 16, nk: 16, d: 64, dv: 64, causal: false, dtype: 'bf16', ...p };
        const lines = new Set<string>();
        const kinds = new Set<PhaseKind>();
        runToEnd(algorithmById(id), problem, randomInputs(problem, { seed: 1 }), {
          ...o,
          trace: true,
          onEvent: (e) => {
            lines.add(e.line);
            kinds.add(e.kind);
          },
        });
        const listed = lesson.content.lines.map((l) => l.id).filter((x) => x !== '');
        expect([...lines].sort()).toEqual([...listed].sort());
        expect(Object.keys(lesson.content.explain).sort()).toEqual([...listed].sort());
        expect(lesson.content.algorithm).toBe(id);
        for (const k of kinds) expect(lesson.steps[k], `step text for '${k}'`).toBeTruthy();
      });
      it('documents every feature the algorithm accepts', () => {
        expect(lesson.features.map((f) => f.key).sort()).toEqual([...featureKeys[id]].sort());
      });
      it('is what the debugger pane finds for the algorithm', () => {
        expect(contentFor(id)).toBe(lesson.content);
        // Plain text there: no TeX left in the pseudo-code or the explanations.
        for (const t of [...lesson.content.lines.map((l) => l.text), ...Object.values(lesson.content.explain)])
          expect(t).not.toMatch(/[$\\]/);
      });
      it('has formulas that KaTeX renders', () => {
        const spans = allText(lesson).flatMap(mathSpans);
        expect(spans.length).toBeGreaterThan(5);
        for (const s of spans) {
          expect(() => katex.renderToString(s.tex, { throwOnError: true, displayMode: s.display }), s.tex).not.toThrow();
        }
      });
    });
  }
});
