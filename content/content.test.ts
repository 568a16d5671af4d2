import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../engine/algorithms/registry.ts';
import { randomInputs } from '../engine/core/inputs.ts';
import type { AttentionProblem } from '../engine/core/problem.ts';
import type { TraceEvent } from '../engine/trace/events.ts';
import { runToEnd } from '../engine/run.ts';
import { formulaFor } from './formulas.ts';
import { texNum } from './tex.ts';
import { CONTENT, contentFor, lineIndexFor } from './index.ts';

const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 24, nk: 40, d: 8, dv: 8, causal: true, dtype: 'fp32' };

describe('content', () => {
  for (const algo of ALGORITHMS.filter((a) => contentFor(a.id))) {
    it(`${algo.id}: every step maps to its own pseudo-code line, explanation and formula`, () => {
      const c = contentFor(algo.id)!;
      const events: TraceEvent[] = [];
      runToEnd(algo, p, randomInputs(p, { seed: 5 }), { blockM: 8, blockN: 8, trace: true, onEvent: (e) => events.push(e) });
      const seen = new Set<string>();
      for (const ev of events) {
        const i = lineIndexFor(c, ev);
        expect(i, ev.line).toBeGreaterThanOrEqual(0);
        expect(c.lines[i].id).toBe(ev.line);
        expect(c.explain[ev.line], ev.line).toBeTruthy();
        const f = formulaFor(algo.id, ev, 0, undefined);
        expect(f.symbolic.length).toBeGreaterThan(0);
        // The running sum is ℓ, as in the lessons: no bare l with a subscript or superscript.
        expect(`${f.symbolic} ${f.live}`, ev.line).not.toMatch(/(?<![A-Za-z\\])l[_^]/);
        seen.add(ev.line);
      }
      expect(seen.size).toBeGreaterThan(5);
    });
  }

  it('pseudo-code lines and explanations write the running sum ℓ, never a bare l', () => {
    // A lone l (not in a word, a TeX command or an upstream "l. 12" line citation).
    const bare = /(?<![\p{L}\p{N}_\\$-])l(?![\p{L}\p{N}(]|\. ?\d)/u;
    expect(bare.test('O / l;  LSE = m + log ℓ')).toBe(true);
    expect(bare.test('l_new = e^(m − m_new) ℓ')).toBe(true);
    expect(bare.test('ℓ, log, \\ell, flash.py l. 12')).toBe(false);
    for (const c of CONTENT)
      for (const text of [...c.lines.map((l) => l.text), ...Object.values(c.explain)]) expect(text, c.algorithm).not.toMatch(bare);
  });

  it("the live rowsum formula reproduces the engine's ℓ (FA2)", () => {
    const algo = ALGORITHMS.find((a) => a.id === 'fa2')!;
    const events: TraceEvent[] = [];
    runToEnd(algo, p, randomInputs(p, { seed: 5 }), { blockM: 8, blockN: 8, trace: true, onEvent: (e) => events.push(e) });
    const i = events.findIndex(
      (e, k) => e.kind === 'rowsum' && events.slice(0, k).filter((x) => x.kind === 'rowsum' && x.tile.qBlock === e.tile.qBlock).length > 0,
    );
    const ev = events[i] as Extract<TraceEvent, { kind: 'rowsum' }>;
    const rm = events
      .slice(0, i)
      .reverse()
      .find((e) => e.kind === 'rowmax') as Extract<TraceEvent, { kind: 'rowmax' }>;
    const f = formulaFor('fa2', ev, 0, { kvBlock: ev.tile.kvBlock, mBefore: rm.mBefore, mAfter: rm.mAfter });
    const recomputed = Math.exp(rm.mBefore[0] - rm.mAfter[0]) * ev.lBefore[0] + ev.tileSum[0];
    expect(recomputed).toBeCloseTo(ev.lAfter[0], 4);
    expect(f.live).toContain(texNum(ev.lAfter[0]));
    expect(f.live).toContain(texNum(ev.lBefore[0]));
    expect(f.symbolic).toContain('\\ell_{\\text{new}}');
  });

  it("sage's qk step shows the two INT8 scales its integer scores were multiplied by", () => {
    const algo = ALGORITHMS.find((a) => a.id === 'sage')!;
    const events: TraceEvent[] = [];
    const ps = { ...p, dtype: 'fp16' as const };
    runToEnd(algo, ps, randomInputs(ps, { seed: 5 }), { blockM: 8, blockN: 8, trace: true, onEvent: (e) => events.push(e) });
    const qk = events.find((e) => e.kind === 'qk') as Extract<TraceEvent, { kind: 'qk' }>;
    const f = formulaFor('sage', qk, 0, undefined);
    expect(f.symbolic).toContain('\\delta_Q');
    expect(f.live).toContain(`\\delta_Q = ${texNum(qk.qScale)}`);
    expect(f.live).toContain(`\\delta_K = ${texNum(qk.kScale)}`);
  });

  it('texNum writes infinities and exponents as TeX', () => {
    expect(texNum(-Infinity)).toBe('-\\infty');
    expect(texNum(1.5e-7)).toBe('1.500\\times10^{-7}');
    expect(texNum(2.25)).toBe('2.25');
  });
});
