import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { stepActor, stepInWords } from './step-words.ts';

async function events(form: Partial<typeof DEFAULT_FORM> = {}) {
  const s = new DebuggerSession();
  await s.load(formToRequest({ ...DEFAULT_FORM, ...form }));
  return s.events();
}

describe('step lines in words', () => {
  it('names the tiles, rows and keys of the FA2 default run', async () => {
    const ev = await events();
    const words = ev.map(stepInWords);
    expect(words[0]).toBe('Load Q tile 0 (rows 0–15)');
    expect(words[1]).toBe('Load K, V block 0 (keys 0–15)');
    expect(words[2]).toBe('S = Q·Kᵀ for Q tile 0 × K block 0 (rows 0–15, keys 0–15)');
    expect(words).toContain('Running max m of rows 16–31 over K block 2');
    expect(words).toContain('Rescale O of rows 0–15 by e^(m_old − m_new)');
    expect(words.at(-1)).toBe('Write O, LSE tile 3 (rows 48–63)');
    // No step falls back to an internal id.
    for (const w of words) expect(w).not.toMatch(/fa2\.|undefined|-1/);
  });

  it('a step over every row names no tile', async () => {
    const fa1 = await events({ algorithm: 'fa1' });
    expect(stepInWords(fa1[0])).toBe('Write O, ℓ, m (rows 0–63)');
  });

  it('says which split and warpgroup run a step', async () => {
    const fd = await events({ algorithm: 'flash-decoding' });
    expect(fd.some((e) => stepActor(e).some((a) => /^split \d+$/.test(a)))).toBe(true);
    expect(fd.map(stepInWords)).toContain('Combine the splits of rows 0–15 weighted by their LSE');
    const fa3 = await events({ algorithm: 'fa3' });
    expect(fa3.some((e) => stepActor(e).includes('warpgroup 0'))).toBe(true);
  });
});
