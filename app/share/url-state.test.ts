// The share-link codec: exact round trips, and every malformed or outdated link opening
// the defaults for the parts it cannot read, with a notice naming each part.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { decodeState, defaultSharedState, encodeState, SHARE_VERSION, type SharedState } from './url-state.ts';
import { problemSize, RUN_BUDGET_BYTES } from '../../engine/api.ts';

const VIEWS = ['heatmaps', 'zoom', 'stats', 'counters'];
const frag = (obj: unknown) => `#s=${Buffer.from(JSON.stringify(obj)).toString('base64url')}`;

describe('share link codec', () => {
  it('round-trips a full state exactly', () => {
    const s: SharedState = {
      mode: 'compare',
      form: {
        ...DEFAULT_FORM,
        algorithm: 'fa1',
        nq: '48',
        causal: true,
        windowLeft: '8',
        seed: '7',
        dtype: 'fp16',
        distribution: 'outlier-row',
        outlierRow: '5',
      },
      step: 17,
      views: ['stats', 'heatmaps'],
      compare: {
        axis: 'time',
        gpu: 'b200',
        panes: [
          { config: { algorithm: 'fa4', blockM: '', blockN: '', features: { lazyRescale: false }, views: ['counters'] }, step: 3 },
          { config: { algorithm: 'fa4', blockM: '128', blockN: '64', features: {}, views: ['heatmaps', 'zoom'] }, step: 9 },
          { config: { algorithm: 'fa3', blockM: '', blockN: '', features: { pingpong: false }, views: [] }, step: 0 },
        ],
        diff: [2, 0],
      },
      imported: false,
    };
    const url = encodeState(s);
    expect(url).toMatch(/^#s=[A-Za-z0-9_-]+$/);
    expect(decodeState(url, VIEWS)).toEqual({ state: s, notices: [] });
  });

  it('carries the attention chunk, and a bad one falls back to none with a notice naming it', () => {
    const s = defaultSharedState(VIEWS);
    s.form = { ...DEFAULT_FORM, algorithm: 'fa3', causal: true, attentionChunk: '16' };
    const back = decodeState(encodeState(s), VIEWS);
    expect(back.notices).toEqual([]);
    expect(back.state.form.attentionChunk).toBe('16');
    expect(formToRequest(back.state.form).problem.attentionChunk).toBe(16);
    const zero = decodeState(frag({ v: 1, f: { algorithm: 'fa3', attentionChunk: '0' } }), VIEWS);
    expect(zero.state.form.attentionChunk).toBe('');
    expect(zero.notices.join('\n')).toMatch(/attention chunk: must be at least 1, got 0/);
    const huge = decodeState(frag({ v: 1, f: { attentionChunk: String(2 ** 25) } }), VIEWS);
    expect(huge.state.form.attentionChunk).toBe('');
    expect(huge.notices.join('\n')).toMatch(/problem\.attentionChunk: "33554432" is more than 16777216/);
  });

  it('carries the backward pass', () => {
    const s = defaultSharedState(VIEWS);
    s.form = { ...DEFAULT_FORM, algorithm: 'fa2', pass: 'backward' };
    s.step = 40;
    const back = decodeState(encodeState(s), VIEWS);
    expect(back.notices).toEqual([]);
    expect(back.state.form.pass).toBe('backward');
    expect(formToRequest(back.state.form).pass).toBe('backward');
    // Links made before the switch existed open the forward pass.
    expect(decodeState(frag({ v: 1, f: { algorithm: 'fa1' } }), VIEWS).state.form.pass).toBe('forward');
  });

  it('carries per-pane dtypes and FP8 features, and the FA3-outlier and sink inputs (the FP8 study)', async () => {
    const { FP8_STUDY } = await import('../compare/presets.ts');
    const s = defaultSharedState(VIEWS);
    s.mode = 'compare';
    s.form = { ...DEFAULT_FORM, ...FP8_STUDY.form };
    s.compare.panes = FP8_STUDY.panes.map((config, i) => ({ config: structuredClone(config), step: i * 5 }));
    s.compare.diff = [1, 2];
    const back = decodeState(encodeState(s), VIEWS);
    expect(back).toEqual({ state: s, notices: [] });
    expect(back.state.form.distribution).toBe('fa3-outliers');
    expect(back.state.compare.panes.map((p) => p.config.dtype)).toEqual(['fp16', 'fp8e4m3', 'fp8e4m3', 'fp16']);
    expect(back.state.compare.panes[1].config.features).toEqual({ blockQuant: false, incoherent: false });
    expect(back.state.compare.panes[3].config).toMatchObject({ algorithm: 'sage', features: { version: 2 } });
    // e5m2 with the P-cast switches.
    s.compare.panes[2] = {
      config: {
        algorithm: 'fa3',
        dtype: 'fp8e5m2',
        blockM: '64',
        blockN: '64',
        features: { pScale: 1, reverseKv: false, seed: 3 },
        views: [],
      },
      step: 2,
    };
    expect(decodeState(encodeState(s), VIEWS)).toEqual({ state: s, notices: [] });
    // A pane without a dtype of its own stays on the shared one.
    expect(decodeState(encodeState(defaultSharedState(VIEWS)), VIEWS).state.compare.panes[0].config.dtype).toBeUndefined();
    s.form = { ...s.form, distribution: 'sink' };
    expect(decodeState(encodeState(s), VIEWS).state.form.distribution).toBe('sink');
  });

  it('an empty fragment is the defaults without a notice', () => {
    expect(decodeState('', VIEWS)).toEqual({ state: defaultSharedState(VIEWS), notices: [] });
  });

  const bad: [string, string, RegExp][] = [
    ['not a state fragment', '#view=3', /not a FlashScope state/],
    ['bad base64', '#s=%%%', /could not be read.*base64url/],
    ['not JSON', `#s=${Buffer.from('{oops').toString('base64url')}`, /could not be read/],
    ['not an object', frag([1, 2]), /not an object/],
    ['newer version', frag({ v: SHARE_VERSION + 1 }), /newer FlashScope \(state version 2/],
    ['missing version', frag({ m: 'compare' }), /unknown state version undefined/],
    ['unknown algorithm', frag({ v: 1, f: { algorithm: 'fa9' } }), /problem.algorithm: "fa9" is not one of standard, fa1/],
    ['nq not a number', frag({ v: 1, f: { nq: 'abc' } }), /problem.nq: nq: must be a whole number, got "abc"; using "64"/],
    ['nq of the wrong type', frag({ v: 1, f: { nq: 64 } }), /problem.nq: 64 is not a string/],
    ['unknown pass', frag({ v: 1, f: { pass: 'sideways' } }), /problem.pass: "sideways" is not one of forward, backward; using "forward"/],
    [
      'backward of a forward-only algorithm',
      frag({ v: 1, f: { algorithm: 'sage', pass: 'backward' } }),
      /problem.pass: pass: sage has no backward pass in FlashScope.*; using "forward"/,
    ],
    ['unknown form field', frag({ v: 1, f: { colour: 'red' } }), /problem.colour: unknown setting/],
    ['bad mode', frag({ v: 1, m: 'split' }), /mode "split" is not debugger or compare/],
    ['negative step', frag({ v: 1, st: -4 }), /step -4 is not a step number/],
    ['unknown view', frag({ v: 1, vw: ['heatmaps', 'x-ray'] }), /views: unknown view "x-ray" ignored/],
    ['bad sync axis', frag({ v: 1, c: { a: 'diagonal' } }), /sync axis "diagonal" is not one of kv, progress, time, none/],
    ['unknown GPU', frag({ v: 1, c: { g: 'v100' } }), /GPU "v100" is not one of/],
    ['five panes', frag({ v: 1, c: { p: [1, 2, 3, 4, 5].map(() => ({ algorithm: 'fa2' })) } }), /5 compare panes; at most 4/],
    ['one pane', frag({ v: 1, c: { p: [{ algorithm: 'fa2' }] } }), /at least 2 panes; a default pane was added/],
    [
      'Br zero in a pane',
      frag({ v: 1, c: { p: [{ algorithm: 'fa2', blockM: '0' }, { algorithm: 'fa1' }] } }),
      /compare pane 1: Br "0" is not a positive whole number/,
    ],
    ['bad diff pair', frag({ v: 1, c: { d: [1, 1] } }), /difference pair \[1,1\] does not name two different panes/],
    [
      'unknown pane dtype',
      frag({ v: 1, c: { p: [{ algorithm: 'fa3', dtype: 'int4' }, { algorithm: 'fa2' }] } }),
      /compare pane 1: dtype "int4" is not one of fp32, fp16, bf16, fp8e4m3, fp8e5m2; the shared dtype is used/,
    ],
    ['imported tensors', frag({ v: 1, im: 1 }), /tensors loaded from files, which a link cannot carry/],
    ['too long', `#s=${'A'.repeat(20_000)}`, /more than a FlashScope link can be/],
  ];
  it.each(bad)('%s: defaults for that part, with a notice', (_name, fragment, message) => {
    const r = decodeState(fragment, VIEWS);
    expect(r.notices.join('\n')).toMatch(message);
    // Whatever was ignored, what comes back is a state the app can load.
    expect(() => encodeState(r.state)).not.toThrow();
  });

  it('keeps the good parts of a partly bad link', () => {
    const r = decodeState(frag({ v: 1, f: { nq: 'abc', nk: '96', causal: true }, st: 5 }), VIEWS);
    expect(r.state.form.nq).toBe('64');
    expect(r.state.form.nk).toBe('96');
    expect(r.state.form.causal).toBe(true);
    expect(r.state.step).toBe(5);
    expect(r.notices).toHaveLength(1);
  });

  it('fuzz: any fragment decodes to a loadable state without throwing', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json().map((j) => frag(JSON.parse(j))),
          fc.object().map((o) => frag({ v: 1, ...o })),
        ),
        (f) => {
          const r = decodeState(f, VIEWS);
          expect(r.state.compare.panes.length).toBeGreaterThanOrEqual(2);
          expect(r.state.compare.panes.length).toBeLessThanOrEqual(4);
          expect(() => formToRequest(r.state.form)).not.toThrow();
        },
      ),
      { numRuns: 500 },
    );
  });

  it('round-trips an FP8 problem with its distribution and FA3 switches', () => {
    const s = defaultSharedState(VIEWS);
    s.form = {
      ...DEFAULT_FORM,
      algorithm: 'fa3',
      dtype: 'fp8e5m2',
      distribution: 'sink',
      switches: { incoherent: false, pScale: '1', reverseKv: false, seed: '4', blockQuant: true },
    };
    expect(decodeState(encodeState(s), VIEWS)).toEqual({ state: s, notices: [] });
    s.form = { ...s.form, dtype: 'fp8e4m3', distribution: 'fa3-outliers' };
    expect(decodeState(encodeState(s), VIEWS)).toEqual({ state: s, notices: [] });
  });

  it('drops a switch a link cannot carry, with a notice, and keeps the rest', () => {
    const f = {
      ...DEFAULT_FORM,
      algorithm: 'fa3',
      dtype: 'fp8e4m3',
      switches: { pScale: '3', incoherent: false, bogus: true, blockQuant: 'yes' },
    };
    const { state, notices } = decodeState(frag({ v: SHARE_VERSION, f }), VIEWS);
    expect(state.form.switches).toEqual({ incoherent: false });
    expect(state.form.dtype).toBe('fp8e4m3');
    expect(notices.join('\n')).toMatch(/switches\.pScale: .*power of two/);
    expect(notices.join('\n')).toMatch(/switches\.bogus: unknown switch/);
    expect(notices.join('\n')).toMatch(/switches\.blockQuant: "yes" is not true or false/);
  });

  it('round-trips sage’s switches and drops those sage does not have or refuses, with a notice each', () => {
    const s = defaultSharedState(VIEWS);
    s.form = {
      ...DEFAULT_FORM,
      algorithm: 'sage',
      dtype: 'fp16',
      blockM: '128',
      blockN: '64',
      switches: { version: '2', smoothK: false, qPerWarp: false },
    };
    expect(decodeState(encodeState(s), VIEWS)).toEqual({ state: s, notices: [] });
    // The switches come before the algorithm in this link: they are still read as sage's.
    const f = {
      switches: { version: '3', smoothK: 'no', qPerWarp: false, pScale: '64', bogus: 1 },
      algorithm: 'sage',
      dtype: 'fp16',
      blockM: '128',
      blockN: '64',
    };
    const { state, notices } = decodeState(frag({ v: SHARE_VERSION, f }), VIEWS);
    expect(state.form.algorithm).toBe('sage');
    expect(state.form.switches).toEqual({});
    const text = notices.join('\n');
    expect(text).toMatch(/switches\.version: .*must be 1 .*got 3/);
    expect(text).toMatch(/switches\.smoothK: "no" is not true or false/);
    expect(text).toMatch(/switches\.pScale: not a switch of sage, ignored/);
    expect(text).toMatch(/switches\.bogus: unknown switch/);
    // version fell back to 1, where qPerWarp does not apply.
    expect(text).toMatch(/switches\.qPerWarp: applies to version 2 only; ignored/);
    expect(notices).toHaveLength(5);
    expect(formToRequest(state.form).features).toBeUndefined();
  });
});

describe('share link sizes held to the size model', () => {
  const runBytes = (form: SharedState['form']) => {
    const p = formToRequest(form).problem;
    return problemSize({ ...p, blockM: 1, blockN: 1 }).runBytes;
  };

  it('a link asking for more memory than a run may hold gets the largest fitting value of the dimension, with a notice', () => {
    const { state, notices } = decodeState(frag({ v: 1, f: { nq: '16777216', d: '512', dv: '512' } }), VIEWS);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^problem\.nq: "16777216" is too large \(this problem would need about .* over the limit of 1\.00 GB.*at most (\d+) fits/,
    );
    const v = Number(state.form.nq);
    expect(notices[0]).toContain(`using "${v}"`);
    expect(v).toBeGreaterThan(64);
    expect(runBytes(state.form)).toBeLessThanOrEqual(RUN_BUDGET_BYTES);
    // The largest that fits: one more does not.
    expect(runBytes({ ...state.form, nq: String(v + 1) })).toBeGreaterThan(RUN_BUDGET_BYTES);
    expect(state.form).toMatchObject({ d: '512', dv: '512' });
  });

  it('a link over the budget in several dimensions is brought within it, each change with a notice', () => {
    const { state, notices } = decodeState(frag({ v: 1, f: { batch: '64', hq: '64', hk: '64', nq: '16384', nk: '16384' } }), VIEWS);
    expect(notices.length).toBeGreaterThan(0);
    for (const n of notices) expect(n).toMatch(/^problem\.(batch|hq|hk|nq|nk): "\d+" is too large \(this problem would need about /);
    expect(runBytes(state.form)).toBeLessThanOrEqual(RUN_BUDGET_BYTES);
  });

  it('a link within the budget is kept as it is, without a notice', () => {
    const f = { ...DEFAULT_FORM, nq: '2048', nk: '2048', d: '64', dv: '64' };
    expect(decodeState(frag({ v: 1, f }), VIEWS)).toMatchObject({ state: { form: f }, notices: [] });
  });

  it('fuzz: every decoded link fits the run budget', () => {
    const dim = fc.oneof(fc.integer({ min: 1, max: 65_536 }), fc.constantFrom(1, 2, 64, 4096, 65_536));
    const seq = fc.oneof(fc.integer({ min: 1, max: 2 ** 24 }), fc.constantFrom(1, 64, 2748, 2 ** 24));
    fc.assert(
      fc.property(fc.record({ batch: dim, hq: dim, nq: seq, nk: seq, d: dim, dv: dim }), (r) => {
        const f = Object.fromEntries(Object.entries({ ...r, hk: r.hq }).map(([k, v]) => [k, String(v)]));
        const { state, notices } = decodeState(frag({ v: 1, f }), VIEWS);
        expect(runBytes(state.form)).toBeLessThanOrEqual(RUN_BUDGET_BYTES);
        if (notices.length === 0) expect(state.form).toMatchObject(f);
      }),
      { numRuns: 300 },
    );
  });
});
