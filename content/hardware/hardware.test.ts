import katex from 'katex';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../../engine/algorithms/registry.ts';
import { randomInputs } from '../../engine/core/inputs.ts';
import type { AttentionProblem } from '../../engine/core/problem.ts';
import { HW_ALGORITHMS } from '../../engine/algorithms/schedule-registry.ts';
import type { PhaseKind } from '../../engine/trace/events.ts';
import { runToEnd } from '../../engine/run.ts';
import { HARDWARE_LESSONS, hardwareLessonFor } from './index.ts';

function formulas(text: string): string[] {
  const out: string[] = [];
  const re = /\$\$([\s\S]+?)\$\$|\$([^$]+?)\$/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m[1] ?? m[2]);
  return out;
}

describe('hardware lessons', () => {
  it('every algorithm with a hardware schedule has a lesson', () => {
    for (const a of HW_ALGORITHMS) expect(hardwareLessonFor(a.id), a.id).toBeDefined();
  });

  it('every phase kind each algorithm emits (causal, plain, split) has its hardware explanation', () => {
    const problems: AttentionProblem[] = [
      { batch: 1, hq: 2, hk: 1, nq: 40, nk: 72, d: 16, dv: 16, causal: true, dtype: 'fp16' },
      { batch: 1, hq: 1, hk: 1, nq: 2, nk: 300, d: 16, dv: 16, causal: false, dtype: 'fp16' },
    ];
    for (const lesson of HARDWARE_LESSONS) {
      const algo = ALGORITHMS.find((a) => a.id === lesson.algorithm)!;
      const kinds = new Set<PhaseKind>();
      for (const p of problems)
        runToEnd(algo, p, randomInputs(p, { seed: 2 }), { blockM: 16, blockN: 16, trace: true, onEvent: (e) => kinds.add(e.kind) });
      expect(kinds.size, lesson.algorithm).toBeGreaterThan(6);
      for (const k of kinds) expect(lesson.steps[k]?.length ?? 0, `${lesson.algorithm} ${k}`).toBeGreaterThan(20);
    }
  });

  it('every formula typesets with KaTeX', () => {
    let n = 0;
    for (const l of HARDWARE_LESSONS)
      for (const text of [...l.topics.map((t) => t.text), ...Object.values(l.steps)])
        for (const f of formulas(text)) {
          expect(() => katex.renderToString(f, { throwOnError: true }), `${l.algorithm}: ${f}`).not.toThrow();
          n++;
        }
    expect(n).toBeGreaterThan(30);
  });

  it('no text keeps the escape of a code span (a backslash before a backtick)', () => {
    for (const l of HARDWARE_LESSONS)
      for (const text of [...l.topics.map((t) => t.text), ...Object.values(l.steps)]) expect(text, l.algorithm).not.toContain('\\`');
  });

  it('covers the topics the issue names', () => {
    const titles = (id: string) => hardwareLessonFor(id)!.topics.map((t) => t.id);
    expect(titles('fa3')).toEqual(expect.arrayContaining(['roles', 'tma', 'pingpong', 'overlap', 'fp8']));
    expect(titles('fa4')).toEqual(expect.arrayContaining(['tmem', 'roles', 'lsl', 'p34', 'lazy', 'exp2']));
    expect(titles('fmha-v2')).toEqual(expect.arrayContaining(['warps', 'ldgsts', 'qkv']));
    expect(titles('flash-decoding')).toEqual(expect.arrayContaining(['why', 'combine']));
  });
});
