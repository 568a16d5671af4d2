// Aux arrays as text: parsed entry by entry with a message naming the array and the entry,
// written back with runs compressed, and read by a mask typed in the same fields.

import { describe, expect, it } from 'vitest';
import { fieldsToProblem, FieldError, problemToFields, type ProblemFields } from '../problem-fields.ts';
import { auxToText, MAX_AUX_TEXT, parseAuxText } from './mask-aux-text.ts';
import { randomInputs } from './inputs.ts';
import { referenceAttention } from './reference.ts';

const fields: ProblemFields = {
  batch: '1',
  hq: '2',
  hk: '2',
  nq: '6',
  nk: '6',
  d: '4',
  dv: '4',
  causal: false,
  windowLeft: '',
  windowRight: '',
  attentionChunk: '',
  alibi: false,
  softcap: '',
  sink: '',
  maskMod: '',
  scoreMod: '',
  dtype: 'fp32',
};

describe('aux arrays as text', () => {
  it('parses names, entries and v*n runs; writes runs back', () => {
    const aux = parseAuxText(' doc = 0*2, 1, 1*3 ; slope = 0.5, -2.5e-1 ');
    expect(aux).toEqual({ doc: [0, 0, 1, 1, 1, 1], slope: [0.5, -0.25] });
    expect(auxToText(aux!)).toBe('doc = 0*2, 1*4; slope = 0.5, -0.25');
    expect(parseAuxText(auxToText(aux!))).toEqual(aux);
    expect(parseAuxText('  ')).toBeUndefined();
  });

  it.each([
    ['doc 0, 1', 'needs the form name = 1, 2, 3'],
    ['doc = 0, x', 'doc: entry 2 "x" is not a number'],
    ['doc = 1*2*3', 'entry 1'],
    ['doc = 1*-2', 'entry 1'],
    ['q_idx = 1', 'q_idx'],
    ['doc = 1; doc = 2', "'doc' is given twice"],
    ['doc = 0*70000', 'at most 65536 entries'],
    ['doc = Infinity', 'is not a number'],
    ['doc = 0x10', 'is not a number'],
  ])('%s is refused with a message', (text, why) => {
    expect(() => parseAuxText(text)).toThrow(why);
  });

  it('a name like __proto__ is an own entry, never a prototype', () => {
    const aux = parseAuxText('__proto__ = 1, 2')!;
    expect(Object.getPrototypeOf(aux)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(aux, '__proto__')?.value).toEqual([1, 2]);
  });

  it('refuses text past its length limit', () => {
    expect(() => parseAuxText(`doc = ${'1, '.repeat(MAX_AUX_TEXT)}`)).toThrow(`at most ${MAX_AUX_TEXT} characters`);
  });

  it('a typed mask_mod reads the typed array; the problem matches a hand-written document mask in float64', () => {
    const p = fieldsToProblem({ ...fields, maskMod: 'doc[q_idx] == doc[kv_idx]', maskAux: 'doc = 0*2, 1*4' });
    expect(p.mask?.aux).toEqual({ doc: [0, 0, 1, 1, 1, 1] });
    const x = randomInputs(p, { seed: 2 });
    const got = referenceAttention(p, x);
    // Row 1 sees keys 0–1 only: its output is the softmax over those two keys.
    const q = (i: number) => x.q.slice(i * 4, i * 4 + 4);
    const k = (j: number) => x.k.slice(j * 4, j * 4 + 4);
    const s = [0, 1].map((j) => q(1).reduce((a, v, e) => a + v * k(j)[e], 0) / 2);
    const w = s.map((v) => Math.exp(v - Math.max(...s)));
    const want = [0, 1, 2, 3].map((e) => (w[0] * x.v[e] + w[1] * x.v[4 + e]) / (w[0] + w[1]));
    for (let e = 0; e < 4; e++) expect(got.o[4 + e]).toBeCloseTo(want[e], 12);
    // The fields of that problem carry the text form, and read back to the same mask.
    const back = problemToFields(p);
    expect(back.maskAux).toBe('doc = 0*2, 1*4');
    expect(fieldsToProblem(back).mask).toEqual(p.mask);
  });

  it('a mask reading an array the aux box does not give, or a bad aux box, names the field', () => {
    expect(() => fieldsToProblem({ ...fields, maskMod: 'doc[q_idx] == doc[kv_idx]' })).toThrow(FieldError);
    expect(() => fieldsToProblem({ ...fields, maskMod: 'doc[q_idx] == doc[kv_idx]', maskAux: 'doc = a' })).toThrow(/^aux arrays: /);
  });
});
