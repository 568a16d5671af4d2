import { describe, expect, it } from 'vitest';
import { decodeState, defaultSharedState, encodeState } from '../share/url-state.ts';
import { formToRequest } from '../store/problem-form.ts';
import { checkBox } from './MaskEditor.tsx';
import { DEFAULT_VIEWS as VIEWS } from '../views/registry.ts';

function link(maskMod: string, scoreMod = ''): string {
  const s = defaultSharedState(VIEWS);
  s.form = { ...s.form, maskMod, scoreMod };
  return encodeState(s);
}

describe('masks in share links and the editor', () => {
  it('a link carries mask_mod and score_mod text exactly', () => {
    const text = 'kv_idx <= q_idx && (q_idx - kv_idx) % 3 == 0';
    const { state, notices } = decodeState(link(text, 'softcap:20'), VIEWS);
    expect(notices).toEqual([]);
    expect(state.form.maskMod).toBe(text);
    expect(state.form.scoreMod).toBe('softcap:20');
    expect(formToRequest(state.form).problem.mask).toEqual({ maskMod: text, scoreMod: '20 * tanh(score / 20)' });
  });

  it('a link carries the aux arrays as text; a bad aux text is dropped with a notice and the rest kept', () => {
    const s = defaultSharedState(VIEWS);
    s.form = { ...s.form, maskMod: 'doc[q_idx] == doc[kv_idx]', maskAux: 'doc = 0*20, 1*44' };
    const { state, notices } = decodeState(encodeState(s), VIEWS);
    expect(notices).toEqual([]);
    expect(state.form.maskAux).toBe('doc = 0*20, 1*44');
    expect(formToRequest(state.form).problem.mask?.aux?.doc).toEqual([...new Array(20).fill(0), ...new Array(44).fill(1)]);
    expect(checkBox('maskMod', 'doc[q_idx] == doc[kv_idx]', { hq: 1, nq: 64, nk: 64 }, 'doc = 0*64')).toEqual({});
    const bad = defaultSharedState(VIEWS);
    bad.form = { ...bad.form, nq: '48', maskAux: 'doc = 1, two' };
    const r = decodeState(encodeState(bad), VIEWS);
    expect(r.state.form.nq).toBe('48');
    expect(r.state.form.maskAux).toBe('');
    expect(r.notices.join('\n')).toMatch(/aux arrays: doc: entry 2 "two" is not a number/);
  });

  it('a hostile link keeps the rest of the problem, drops the mask with a notice and runs nothing', () => {
    const g = globalThis as { __pwned?: unknown };
    delete g.__pwned;
    const s = defaultSharedState(VIEWS);
    s.form = { ...s.form, nq: '48', maskMod: "constructor.constructor('globalThis.__pwned = 1')()" };
    const { state, notices } = decodeState(encodeState(s), VIEWS);
    expect(state.form.nq).toBe('48');
    expect(state.form.maskMod).toBe('');
    expect(notices.join('\n')).toMatch(/problem\.maskMod: mask_mod: column 1: only the built-in functions can be called/);
    expect(g.__pwned).toBeUndefined();
    const long = decodeState(link(`q_idx >= kv_idx${' '.repeat(2000)}`), VIEWS);
    expect(long.state.form.maskMod).toBe('');
    expect(long.notices.join('\n')).toMatch(/problem\.maskMod: .* is longer than 1000 characters/);
  });

  it('the editor reports the column, and shows the text a preset runs as', () => {
    const dims = { hq: 2, nq: 64, nk: 64 };
    expect(checkBox('maskMod', 'q_idx >= kv_idx & bogus', dims).error).toEqual({
      column: 19,
      message: "column 19: unknown name 'bogus'; known: b, h, q_idx, kv_idx, nq, nk",
    });
    expect(checkBox('maskMod', 'prefix_lm:8', dims)).toEqual({ runs: 'kv_idx < 8 || kv_idx <= q_idx + (nk - nq)' });
    expect(checkBox('scoreMod', 'causal', dims).error?.message).toMatch(/'causal' is a mask_mod preset, not a score_mod/);
    expect(checkBox('scoreMod', '', dims)).toEqual({});
  });
});
