import { describe, expect, it } from 'vitest';
import { randomInputs } from '../core/inputs.ts';
import { type AttentionProblem, DTYPES, isFp8, ProblemError } from '../core/problem.ts';
import { startPass } from '../request.ts';
import { declaredRefusal } from './capabilities.ts';
import { DESCRIPTORS } from './registry.ts';

const base: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 16, nk: 16, d: 64, dv: 64, causal: false, dtype: 'fp16' };

/** Head dims and modifiers that cross every declared rule: d above 128 and 256, d ≠ dv, FA3 FP8's 192/128 pair. */
const SHAPES: Partial<AttentionProblem>[] = [
  {},
  { d: 32, dv: 64 },
  { d: 192, dv: 128 },
  { d: 160, dv: 160 },
  { d: 288, dv: 288 },
  { alibi: 'standard' },
  { softcap: 30 },
  { sinks: [0.5] },
  { attentionChunk: 8 },
];

/** The engine's own refusal, field and message (null when the first step is taken). */
function engineRefusal(
  algorithm: string,
  pass: 'forward' | 'backward',
  p: AttentionProblem,
  features?: Record<string, boolean | number>,
): { field: string; message: string } | null {
  try {
    const req = { algorithm, problem: p, seed: 0, distribution: 'normal' as const, blocks: { blockM: 16, blockN: 16 }, pass, features };
    startPass(req, p, randomInputs(p, { seed: 0 }), { blockM: 16, blockN: 16, features, trace: true }).gen.next();
    return null;
  } catch (e) {
    if (e instanceof ProblemError) return { field: e.field, message: e.message };
    throw e;
  }
}

describe('capabilities declared on the descriptor agree with the engine', () => {
  for (const a of DESCRIPTORS) {
    it(`${a.id}: every declared acceptance runs and every declared refusal is refused on the same field`, () => {
      let accepted = 0;
      for (const pass of ['forward', 'backward'] as const)
        for (const dtype of DTYPES)
          for (const shape of SHAPES) {
            const p: AttentionProblem = { ...base, dtype, ...shape };
            const d = declaredRefusal(a, pass, p);
            const declared = d && { field: d.field, message: `${d.field}: ${d.message}` };
            const engine = engineRefusal(a.id, pass, p);
            const what = `${a.id} ${pass} ${JSON.stringify({ dtype, ...shape })}`;
            expect(engine === null, what).toBe(declared === null);
            // With two faults (an FP8 dtype and a head dim or modifier) either may be named first.
            const oneFault = !isFp8(dtype) || Object.keys(shape).length === 0;
            if (oneFault) expect(engine, what).toEqual(declared);
            if (declared === null) accepted++;
          }
      expect(accepted).toBeGreaterThan(0);
    });
  }
  it('a switch whose spec names FP8 dtypes only is taken at FP8 and refused at 16 bits', () => {
    let fp8Only = 0;
    for (const a of DESCRIPTORS)
      for (const [key, spec] of Object.entries(a.switches)) {
        if (!spec.dtypes?.every(isFp8)) continue;
        fp8Only++;
        const f = { [key]: spec.default };
        expect(engineRefusal(a.id, 'forward', { ...base, dtype: 'fp8e4m3' }, f), `${a.id} ${key}`).toBeNull();
        expect(engineRefusal(a.id, 'forward', base, f)?.field, `${a.id} ${key}`).toBe(`features.${key}`);
      }
    expect(fp8Only).toBeGreaterThan(0);
  });
});
