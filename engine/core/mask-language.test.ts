import { describe, expect, it } from 'vitest';
import { compileMaskMod, compileScoreMod, MaskRangeError } from './mask-evaluate.ts';
import { MAX_MASK_CHARS, MaskError, type MaskType, parseMask } from './mask-language.ts';
import { checkMaskSpec, MaskSpecError } from './mask-spec.ts';

const AUX = new Map<string, MaskType>([
  ['doc', 'int'],
  ['slope', 'num'],
]);

function mask(text: string, aux: Record<string, number[]> = {}, nq = 8, nk = 8) {
  const node = parseMask(text, 'mask_mod', new Map(Object.entries(aux).map(([k, v]) => [k, v.every(Number.isInteger) ? 'int' : 'num'])));
  return compileMaskMod(node, { nq, nk, aux: new Map(Object.entries(aux)) });
}

function refusal(text: string, kind: 'mask_mod' | 'score_mod' = 'mask_mod'): MaskError {
  try {
    parseMask(text, kind, AUX);
  } catch (e) {
    if (e instanceof MaskError) return e;
    throw new Error(`'${text}' threw ${String(e)} instead of a MaskError`);
  }
  throw new Error(`'${text}' was accepted`);
}

describe('mask language', () => {
  it('evaluates index arithmetic, logic and functions like the formulas they spell', () => {
    const causal = mask('kv_idx <= q_idx');
    const band = mask('abs(q_idx - kv_idx) <= 2 && !(q_idx == 3)');
    const chunk = mask('floor(q_idx / 4) == floor(kv_idx / 4)');
    const tern = mask('q_idx % 2 == 0 ? kv_idx < 3 : where(kv_idx > 5, true, false)');
    const torchy = mask('(q_idx >= kv_idx) & (q_idx - kv_idx < 3) | (kv_idx === 0)');
    for (let q = 0; q < 8; q++)
      for (let k = 0; k < 8; k++) {
        expect(causal(0, 0, q, k)).toBe(k <= q);
        expect(band(0, 0, q, k)).toBe(Math.abs(q - k) <= 2 && q !== 3);
        expect(chunk(0, 0, q, k)).toBe(Math.floor(q / 4) === Math.floor(k / 4));
        expect(tern(0, 0, q, k)).toBe(q % 2 === 0 ? k < 3 : k > 5);
        expect(torchy(0, 0, q, k)).toBe((q >= k && q - k < 3) || k === 0);
      }
  });

  it('reads aux arrays and the batch/head indices', () => {
    const doc = [0, 0, 0, 1, 1, 2, 2, 2];
    const m = mask('doc[q_idx] == doc[kv_idx] && h != 1 && b < 2', { doc });
    expect(m(0, 0, 1, 2)).toBe(true);
    expect(m(0, 0, 2, 3)).toBe(false);
    expect(m(0, 1, 1, 2)).toBe(false);
    expect(m(2, 0, 1, 2)).toBe(false);
    const sm = compileScoreMod(parseMask('score - slope[h] * abs(kv_idx - q_idx)', 'score_mod', AUX), {
      nq: 4,
      nk: 4,
      aux: new Map([['slope', [0.5, 0.25]]]),
    });
    expect(sm(0, 1, 3, 0, 2)).toBe(2 - 0.25 * 3);
    expect(compileScoreMod(parseMask('30 * tanh(score / 30)', 'score_mod'), { nq: 1, nk: 1, aux: new Map() })(0, 0, 0, 0, 7)).toBe(
      30 * Math.tanh(7 / 30),
    );
  });

  it('reports a read outside an aux array instead of reading undefined', () => {
    const m = mask('doc[kv_idx + 1] == 0', { doc: [0, 0, 0] }, 3, 3);
    expect(m(0, 0, 0, 1)).toBe(true);
    expect(() => m(0, 0, 0, 2)).toThrow(MaskRangeError);
    expect(() => m(0, 0, 0, 2)).toThrow(/doc\[3\] is outside doc's 3 entries/);
  });

  it('points at the column of the problem', () => {
    expect(refusal('q_idx >= foo').message).toBe("column 10: unknown name 'foo'; known: b, h, q_idx, kv_idx, nq, nk, doc, slope");
    expect(refusal('kv_idx <= q_idx && bar(1)').column).toBe(20);
    expect(refusal('q_idx ^ 2').column).toBe(7);
    expect(refusal('q_idx + 1').message).toMatch(/^column 1: mask_mod must be true \(keep\) or false/);
    expect(refusal('score > 0').message).toMatch(/^column 1: 'score' exists only in score_mod/);
    expect(refusal('q_idx >= kv_idx', 'score_mod').message).toMatch(/score_mod must be a number/);
    expect(refusal('doc[q_idx / 2] == 0').column).toBe(5);
    expect(refusal('q_idx > (kv_idx').message).toMatch(/^column \d+: /);
  });

  it('checks the spec: aux names, sizes and entries', () => {
    expect(() => checkMaskSpec({ maskMod: 'q_idx >= kv_idx', aux: { 'a-b': [1] } })).toThrow(MaskSpecError);
    expect(() => checkMaskSpec({ aux: { q_idx: [1] } })).toThrow(/reserved/);
    expect(() => checkMaskSpec({ aux: { doc: [Number.NaN] } })).toThrow(/finite/);
    expect(() => checkMaskSpec({ aux: { doc: new Array(70000).fill(0) } })).toThrow(/at most/);
    const e = (() => {
      try {
        checkMaskSpec({ maskMod: 'q_idx >= nope' });
      } catch (err) {
        return err as MaskSpecError;
      }
    })();
    expect(e?.field).toBe('mask.maskMod');
    expect(e?.column).toBe(10);
    expect(checkMaskSpec({ maskMod: 'h == 0 || q_idx >= kv_idx' }).maskReadsBatchOrHead).toBe(true);
    expect(checkMaskSpec({ maskMod: 'q_idx >= kv_idx' }).maskReadsBatchOrHead).toBe(false);
  });
});

/** Texts built to break out, exhaust or confuse the parser; every one must be a MaskError. */
const HOSTILE: string[] = [
  // prototype and global names
  'constructor',
  '__proto__',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'globalThis',
  'window',
  'self',
  'process',
  'require',
  'module',
  'exports',
  'import',
  'eval',
  'Function',
  'Object',
  'Math',
  'JSON',
  'Reflect',
  'Proxy',
  'this',
  'arguments',
  'undefined',
  'NaN',
  'Infinity',
  'document',
  'fetch',
  'setTimeout',
  'navigator',
  // member access and calls through it
  'constructor.constructor("return 1")()',
  'q_idx.constructor',
  'q_idx["constructor"]',
  'doc.length > 0',
  'doc["__proto__"]',
  'doc.constructor.constructor("globalThis.__pwned=1")()',
  'Math.max(q_idx, kv_idx) > 0',
  'min.call(null, 1, 2)',
  'min.apply(0, [1, 2])',
  'this.constructor',
  '(0).constructor',
  "''.constructor.constructor('x')()",
  '[].constructor',
  'eval("1")',
  'Function("return 1")()',
  'new Function("x")',
  'import("fs")',
  'require("child_process")',
  'process.exit(1)',
  'globalThis.__pwned = 1',
  'q_idx?.x',
  'doc?.[0]',
  // assignment and statements
  'q_idx = 1',
  'q_idx += 1',
  'q_idx++',
  '--q_idx',
  'q_idx >= kv_idx; globalThis.__pwned = 1',
  'q_idx >= kv_idx, kv_idx >= 0',
  'let x = 1',
  'var x',
  'function f() {}',
  '() => 1',
  'x => x',
  '{}',
  '{ a: 1 }',
  'if (q_idx) 1',
  'while (true) {}',
  'for (;;) {}',
  'delete doc',
  'typeof q_idx',
  'void 0',
  'q_idx instanceof Object',
  '"a" in doc',
  'throw 1',
  'await q_idx',
  'yield q_idx',
  // strings, templates, regexes, odd literals
  '"q_idx >= kv_idx"',
  "'x' == 'x'",
  `\`$\{globalThis.__pwned = 1}\``,
  '/x/.test("x")',
  'null',
  '0x10 > 1',
  '1e999 > q_idx',
  '1_000 > q_idx',
  '[1, 2]',
  'doc[]',
  'doc[1, 2] == 0',
  // operators outside the language
  'q_idx ^ kv_idx',
  'q_idx << 2 > 0',
  'q_idx >> 1 > 0',
  'q_idx >>> 1 > 0',
  '~q_idx > 0',
  'q_idx ** 2 > 0',
  'q_idx ?? kv_idx',
  'q_idx // 2 == 0',
  // type errors
  'q_idx',
  '1',
  'true + 1 > 0',
  '!q_idx',
  'q_idx && kv_idx',
  'where(q_idx, true, false)',
  'where(q_idx > 0, 1, true)',
  'min(q_idx > 0, 1) > 0',
  'tanh(true) > 0',
  'doc[q_idx > 0] == 0',
  'doc[q_idx / 3] == 0',
  'doc == 0',
  'slope[h]',
  'q_idx == true',
  // arity and unknown functions
  'min(q_idx) > 0',
  'max(1, 2, 3) > 0',
  'abs() > 0',
  'where(true, true) ',
  'pow(q_idx, 2) > 0',
  'sin(q_idx) > 0',
  'min > 0',
  'q_idx(1)',
  'doc(1) == 0',
  'min(1, 2)(3) > 0',
  'min(, 1) > 0',
  'unknown[q_idx] == 0',
  // unicode and control characters
  'q_іdx >= kv_idx',
  'ｑ_idx >= kv_idx',
  'q_idx >= kv_idx\u0000',
  'q_idx >= kv_idx\u0007',
  'q_idx\u202e >= kv_idx',
  'q_idx >= kv_idx \u{1F600}',
  'π > 3',
  '\u200bq_idx >= kv_idx',
  'q_idx ≥ kv_idx',
  'q_idx >= kv_idx −1',
  // malformed
  '',
  '   ',
  '(',
  ')',
  'q_idx >=',
  '>= kv_idx',
  'q_idx >= (kv_idx',
  'q_idx >= kv_idx)',
  'q_idx >= kv_idx ? true',
  'q_idx >= kv_idx : true',
  'doc[q_idx',
  'min(1, 2',
  '&&',
  // size and depth
  `${'('.repeat(5000)}q_idx >= kv_idx${')'.repeat(5000)}`,
  `${'('.repeat(41)}q_idx >= kv_idx${')'.repeat(41)}`,
  `${'!'.repeat(900)}true`,
  `${'-'.repeat(900)}q_idx > 0`,
  `q_idx ${'+ 1 '.repeat(400)}> 0`,
  'q_idx >= kv_idx || '.repeat(60) + 'true',
  `${'abs('.repeat(60)}q_idx${')'.repeat(60)} > 0`,
  'q_idx >= kv_idx'.padEnd(MAX_MASK_CHARS + 1, ' '),
  'x'.repeat(100_000),
  `doc[${'doc['.repeat(45)}0${']'.repeat(45)}] == 0`,
];

describe('hostile mask texts', () => {
  it(`refuses all ${HOSTILE.length} with a column message and runs none of them`, () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(100);
    const g = globalThis as { __pwned?: unknown };
    delete g.__pwned;
    const accepted: string[] = [];
    for (const text of HOSTILE) {
      let err: unknown;
      try {
        parseMask(text, 'mask_mod', AUX);
        accepted.push(text);
      } catch (e) {
        err = e;
      }
      if (err === undefined) continue;
      expect(err, text.slice(0, 80)).toBeInstanceOf(MaskError);
      const e = err as MaskError;
      expect(e.message, text.slice(0, 80)).toMatch(/^column \d+: \S/);
      expect(e.column, text.slice(0, 80)).toBeGreaterThanOrEqual(1);
      expect(e.column, text.slice(0, 80)).toBeLessThanOrEqual(Math.max(text.length, MAX_MASK_CHARS) + 1);
      expect(e.message.length, text.slice(0, 80)).toBeLessThan(400);
    }
    expect(accepted).toEqual([]);
    expect(g.__pwned).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('__pwned');
  });

  it('keeps aux arrays named like prototype members in their own map', () => {
    const spec = JSON.parse('{"maskMod":"constructor[kv_idx] == 0","aux":{"constructor":[0,1]}}');
    const checked = checkMaskSpec(spec);
    expect(checked.aux.get('constructor')).toEqual([0, 1]);
    expect(() => checkMaskSpec(JSON.parse('{"maskMod":"q_idx >= 0","aux":{"__proto__":[1]}}'))).not.toThrow(TypeError);
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
  });
});
