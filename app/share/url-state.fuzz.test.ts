// Hostile share links: every name Object.prototype has, as a key at every level of the state,
// and thousands of randomly mutated states. Each must decode to a state the app can load,
// with a notice whenever something was dropped, and leave Object.prototype untouched.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { decodeState, defaultSharedState, encodeState, type SharedState } from './url-state.ts';

const VIEWS = ['heatmaps', 'zoom', 'stats', 'counters'];
const PROTO_NAMES = Object.getOwnPropertyNames(Object.prototype);
const frag = (obj: unknown) => `#s=${Buffer.from(JSON.stringify(obj)).toString('base64url')}`;

/** A valid link's JSON, with every part present: the serving page, compare panes with features, switches. */
function fullState(): Record<string, unknown> {
  const s: SharedState = defaultSharedState(VIEWS);
  s.mode = 'compare';
  s.form = { ...DEFAULT_FORM, algorithm: 'fa3', dtype: 'fp8e4m3', attentionChunk: '32', switches: { incoherent: false } };
  s.step = 3;
  s.compare.panes[0].config.features = { pingpong: false };
  s.serving = {
    form: {
      layout: 'paged',
      algorithm: 'fa2',
      seqlensQ: [3, 5],
      seqlensK: [7, 9],
      nq: 4,
      pageSize: 4,
      hq: 2,
      hk: 1,
      d: 8,
      causal: true,
      seed: 1,
      splits: 0,
    },
    step: 2,
    files: false,
  };
  const text = Buffer.from(encodeState(s).slice(3), 'base64url').toString();
  return JSON.parse(text) as Record<string, unknown>;
}

/** The paths of every object in the state, where a hostile key can go. */
const LEVELS: (string | number)[][] = [[], ['f'], ['f', 'switches'], ['c'], ['c', 'p', 0], ['c', 'p', 1, 'features'], ['sv'], ['sv', 'f']];

/** The object at `path`, or undefined where an earlier edit replaced it with something else. */
function at(root: Record<string, unknown>, path: (string | number)[]): Record<string, unknown> | undefined {
  let o: unknown = root;
  for (const k of path)
    o = typeof o === 'object' && o !== null && Object.hasOwn(o, k) ? (o as Record<string | number, unknown>)[k] : undefined;
  return typeof o === 'object' && o !== null ? (o as Record<string, unknown>) : undefined;
}

/** Sets an own property, even one named __proto__ (an assignment would set the prototype instead). */
function putOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

function expectLoadable(fragment: string): string[] {
  const before = Object.getOwnPropertyNames(Object.prototype).sort();
  const r = decodeState(fragment, VIEWS);
  expect(() => formToRequest(r.state.form)).not.toThrow();
  expect(r.state.compare.panes.length).toBeGreaterThanOrEqual(2);
  expect(r.state.compare.panes.length).toBeLessThanOrEqual(4);
  expect(r.state.views.every((v) => VIEWS.includes(v))).toBe(true);
  // What came back is plain data: it re-encodes, and the re-encoded link decodes to itself.
  const again = decodeState(encodeState(r.state), VIEWS);
  expect(again.state).toEqual(r.state);
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  return r.notices;
}

const HOSTILE_VALUES: unknown[] = [1, 'x', true, null, [], {}, { polluted: 1 }, ['a', 'b'], { join: 1 }];

describe('share links with Object.prototype names as keys', () => {
  it('links whose form keys are Object.prototype names open the defaults for the problem, with a notice naming the key', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty']) {
      const f = JSON.parse(`{"v":1,"f":{${JSON.stringify(name)}:1}}`);
      const notices = expectLoadable(frag(f));
      expect(notices).toEqual([`problem.${name}: unknown setting, ignored`]);
      expect(decodeState(frag(f), VIEWS).state.form).toEqual(DEFAULT_FORM);
    }
  });

  it.each(LEVELS.map((p) => [p.join('.') || '(top)', p] as const))('at %s: every name, every kind of value', (_where, path) => {
    for (const name of PROTO_NAMES)
      for (const value of HOSTILE_VALUES) {
        const root = fullState();
        putOwn(at(root, path)!, name, value);
        const notices = expectLoadable(frag(root));
        // Dropping a key is never silent.
        expect(notices.join('\n')).toContain(name);
      }
  });

  it('a prototype name as a whole part keeps the other parts', () => {
    const root = fullState();
    putOwn(root, 'constructor', { f: 1 });
    const r = decodeState(frag(root), VIEWS);
    expect(r.state.form.algorithm).toBe('fa3');
    expect(r.state.serving?.form.layout).toBe('paged');
  });
});

/** One random edit of the state: a value replaced, or a key added, somewhere in it. */
const key = fc.oneof(fc.constantFrom(...PROTO_NAMES), fc.constantFrom('v', 'f', 'c', 'p', 'nq', 'd', 'algorithm', 'switches'), fc.string());
const edit = fc.record({ level: fc.nat(LEVELS.length - 1), key, value: fc.jsonValue(), replace: fc.boolean() });

describe('share links, mutated at random', () => {
  it('every mutated state decodes to a loadable state and leaves Object.prototype alone', () => {
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        const root = fullState();
        for (const e of edits) {
          const o = at(root, LEVELS[e.level]);
          if (!o) continue;
          const keys = Object.keys(o);
          const k = e.replace && keys.length ? keys[e.key.length % keys.length] : e.key;
          putOwn(o, k, e.value);
        }
        expectLoadable(frag(root));
      }),
      { numRuns: 1200 },
    );
  });

  it('every field of the problem with a hostile value falls back to its default, with a notice', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...(Object.keys(DEFAULT_FORM) as (keyof typeof DEFAULT_FORM)[])),
        fc.oneof(fc.jsonValue(), fc.constantFrom('1e9', '99999999999', '-1', 'NaN', '1'.repeat(30), '  64  ')),
        (field, value) => {
          const notices = expectLoadable(frag({ v: 1, f: { [field]: value } }));
          const got = decodeState(frag({ v: 1, f: { [field]: value } }), VIEWS).state.form[field];
          if (notices.length === 0) expect(got).toEqual(value);
          else expect(notices.join('\n')).toMatch(new RegExp(`problem(\\.${field}|\\.switches|:)`));
        },
      ),
      { numRuns: 500 },
    );
  });
});
