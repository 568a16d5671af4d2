// The shareable state and its URL form. The state travels in the URL fragment as
// base64url(JSON) with a version number, so a link keeps working across releases that can
// still read its version, and a malformed or outdated link opens the defaults for every
// part that cannot be read, with one notice line per part that was ignored.
// Pure TS (no DOM): tested with vitest.

import {
  ALGORITHMS,
  DESCRIPTORS,
  PASSES,
  SYNC_AXES,
  type SyncAxis,
  GPUS,
  DTYPES,
  type DType,
  INPUT_DISTRIBUTIONS,
  type FeatureSpecs,
  maskFromFields,
  MAX_AUX_TEXT,
  checkSize,
  RUN_BUDGET_BYTES,
  SizeError,
} from '../../engine/api.ts';
import { DEFAULT_FORM, panelSwitches, effectiveSwitches, formToRequest, type ProblemForm } from '../store/problem-form.ts';
import { DEFAULT_PANES, MAX_PANES, MIN_PANES, paneSwitchSpecs, type ComparePaneConfig } from '../compare/pane-config.ts';
import { decodeServing, encodeServing, type ServingShare } from '../serving/serving-url.ts';
import { hasOwnKey, isRecord, own, pick } from '../store/untrusted.ts';

export const SHARE_VERSION = 1;
/** Longest fragment accepted; real states are well under 2 kB. */
const MAX_FRAGMENT = 16_384;

export interface SharedPane {
  config: ComparePaneConfig;
  step: number;
}

export interface SharedState {
  mode: 'debugger' | 'compare';
  form: ProblemForm;
  /** The debugger pane's step and views. */
  step: number;
  views: string[];
  compare: { axis: SyncAxis; gpu: string; panes: SharedPane[]; diff: [number, number] };
  /** The run used tensors from files, which a link cannot carry. */
  imported: boolean;
  /** The serving-layouts page, when it is open. */
  serving?: ServingShare;
}

export function defaultSharedState(views: string[]): SharedState {
  return {
    mode: 'debugger',
    form: { ...DEFAULT_FORM },
    step: 0,
    views: [...views],
    compare: { axis: 'kv', gpu: 'h100', panes: DEFAULT_PANES.map((c) => ({ config: structuredClone(c), step: 0 })), diff: [0, 1] },
    imported: false,
  };
}

function toBase64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(s: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error('it holds characters base64url does not use');
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
  return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

export function encodeState(s: SharedState): string {
  const compact = {
    v: SHARE_VERSION,
    m: s.mode,
    f: s.form,
    st: s.step,
    vw: s.views,
    c: { a: s.compare.axis, g: s.compare.gpu, p: s.compare.panes.map((p) => ({ ...p.config, st: p.step })), d: s.compare.diff },
    ...(s.imported ? { im: 1 } : {}),
    ...(s.serving ? { sv: encodeServing(s.serving) } : {}),
  };
  return `#s=${toBase64Url(JSON.stringify(compact))}`;
}

export interface DecodeResult {
  state: SharedState;
  /** One line per part of the link that was ignored, saying why. Empty: restored exactly. */
  notices: string[];
}

const isStep = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
/** A key from a link, shortened for a notice line. */
const label = (k: string) => (k.length > 40 ? `${k.slice(0, 40)}…` : k);
const show = (x: unknown) => {
  const t = JSON.stringify(x);
  return t === undefined ? String(x) : t.length > 40 ? `${t.slice(0, 40)}…` : t;
};

/** One problem-form field as a link may carry it. */
type FieldSpec =
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'bool' }
  /** Text as typed in the panel; when it is a whole number it must lie in [0, max]. */
  | { kind: 'text'; max: number; blank?: true }
  | { kind: 'switches' }
  /** Mask-language text (or a preset reference), parsed only by the mask language's whitelist when the problem is read. */
  | { kind: 'mask' }
  /** Aux arrays as text (`doc = 0*12, 1*28`), parsed only by parseAuxText when the problem is read. */
  | { kind: 'aux' };

/** The longest mask text a link may carry, as the mask language accepts. */
const MAX_MASK_TEXT = 1000;

/** The longest text a link's form field may hold; the panel's fields are short numbers. */
const MAX_FIELD_TEXT = 24;
const HEADS = 65_536;
const SEQ = 2 ** 24;

/** Every form field a link may set, with its type and range; anything else is dropped. */
const FORM_SCHEMA: Record<keyof ProblemForm, FieldSpec> = {
  algorithm: { kind: 'enum', values: ALGORITHMS.map((a) => a.id) },
  pass: { kind: 'enum', values: PASSES },
  batch: { kind: 'text', max: HEADS },
  hq: { kind: 'text', max: HEADS },
  hk: { kind: 'text', max: HEADS },
  nq: { kind: 'text', max: SEQ },
  nk: { kind: 'text', max: SEQ },
  d: { kind: 'text', max: HEADS },
  dv: { kind: 'text', max: HEADS },
  blockMode: { kind: 'enum', values: ['sram', 'explicit'] },
  sramBytes: { kind: 'text', max: 2 ** 30 },
  blockM: { kind: 'text', max: HEADS, blank: true },
  blockN: { kind: 'text', max: HEADS, blank: true },
  causal: { kind: 'bool' },
  windowLeft: { kind: 'text', max: SEQ, blank: true },
  windowRight: { kind: 'text', max: SEQ, blank: true },
  attentionChunk: { kind: 'text', max: SEQ, blank: true },
  alibi: { kind: 'bool' },
  softcap: { kind: 'text', max: Number.MAX_VALUE, blank: true },
  sink: { kind: 'text', max: Number.MAX_VALUE, blank: true },
  dtype: { kind: 'enum', values: DTYPES },
  seed: { kind: 'text', max: 2 ** 32 - 1 },
  distribution: { kind: 'enum', values: INPUT_DISTRIBUTIONS },
  outlierRow: { kind: 'text', max: SEQ, blank: true },
  maskMod: { kind: 'mask' },
  scoreMod: { kind: 'mask' },
  maskAux: { kind: 'aux' },
  switches: { kind: 'switches' },
};

/** Why a link's value does not fit its field, or undefined when it does. */
function misfit(spec: FieldSpec, v: unknown): string | undefined {
  switch (spec.kind) {
    case 'enum':
      return typeof v === 'string' && spec.values.includes(v) ? undefined : `is not one of ${spec.values.join(', ')}`;
    case 'bool':
      return typeof v === 'boolean' ? undefined : 'is not a boolean';
    case 'switches':
      return undefined;
    case 'mask':
      if (typeof v !== 'string') return 'is not a string';
      return v.length > MAX_MASK_TEXT ? `is longer than ${MAX_MASK_TEXT} characters` : undefined;
    case 'aux':
      if (typeof v !== 'string') return 'is not a string';
      return v.length > MAX_AUX_TEXT ? `is longer than ${MAX_AUX_TEXT} characters` : undefined;
    case 'text': {
      if (typeof v !== 'string') return 'is not a string';
      if (v.length > MAX_FIELD_TEXT) return `is longer than ${MAX_FIELD_TEXT} characters`;
      const t = v.trim();
      if (/^\d+$/.test(t) && Number(t) > spec.max) return `is more than ${spec.max}`;
      return undefined;
    }
  }
}

/** The problem form from a link: each field checked against FORM_SCHEMA, then the whole by formToRequest; bad fields fall back to the defaults. */
function readForm(x: unknown, notices: string[]): ProblemForm {
  const form: ProblemForm = { ...DEFAULT_FORM };
  if (x === undefined) return form;
  if (!isRecord(x)) {
    notices.push(`problem: not an object (${show(x)}); the default problem is shown`);
    return form;
  }
  // Switches are read once the algorithm is known: only its own are kept.
  let rawSwitches: unknown;
  for (const k of Object.keys(x)) {
    if (!hasOwnKey(FORM_SCHEMA, k)) {
      notices.push(`problem.${label(k)}: unknown setting, ignored`);
      continue;
    }
    const key = k as keyof ProblemForm;
    const v = x[k];
    const spec = FORM_SCHEMA[key];
    if (spec.kind === 'switches') {
      rawSwitches = v;
      continue;
    }
    const why = misfit(spec, v);
    if (why) {
      notices.push(`problem.${k}: ${show(v)} ${why}; using ${show(DEFAULT_FORM[key])}`);
      continue;
    }
    (form as unknown as Record<string, unknown>)[key] = v;
  }
  if (rawSwitches !== undefined) form.switches = readSwitches(rawSwitches, form.algorithm, notices);
  // Field-level values can still make an invalid problem (e.g. nq "abc"): reset the field named by the error.
  const fieldOf: Record<string, keyof ProblemForm> = {
    batch: 'batch',
    hq: 'hq',
    hk: 'hk',
    nq: 'nq',
    nk: 'nk',
    d: 'd',
    dv: 'dv',
    Br: 'blockM',
    Bc: 'blockN',
    'on-chip memory M': 'sramBytes',
    'window left': 'windowLeft',
    'window right': 'windowRight',
    'attention chunk': 'attentionChunk',
    softcap: 'softcap',
    mask_mod: 'maskMod',
    score_mod: 'scoreMod',
    'aux arrays': 'maskAux',
    seed: 'seed',
    'outlier row': 'outlierRow',
    pass: 'pass',
  };
  for (let tries = 0; tries < 20; tries++) {
    try {
      formToRequest(form);
      break;
    } catch (e) {
      const field = (e as { field?: string }).field ?? '';
      if (field.startsWith('switches.')) {
        const sw = field.slice('switches.'.length);
        notices.push(`problem.${field}: ${(e as Error).message}; using the kernel's default`);
        const rest = { ...form.switches };
        delete rest[sw];
        form.switches = rest;
        continue;
      }
      const key = fieldOf[field];
      if (!key) {
        notices.push(`problem: ${(e as Error).message}; the default problem is shown`);
        return { ...DEFAULT_FORM };
      }
      notices.push(`problem.${key}: ${(e as Error).message}; using ${show(DEFAULT_FORM[key])}`);
      (form as unknown as Record<string, unknown>)[key] = DEFAULT_FORM[key];
    }
  }
  dropInactiveSwitches(form, notices);
  return withinSizeModel(form, notices);
}

/**
 * A link's problem held to what the app can run at all (the size model's run budget): the
 * dimension the model names is clamped to its largest fitting value, with a notice.
 */
function withinSizeModel(form: ProblemForm, notices: string[]): ProblemForm {
  for (let tries = 0; tries < 8; tries++) {
    let problem: ReturnType<typeof formToRequest>['problem'];
    try {
      problem = formToRequest(form).problem;
    } catch (e) {
      notices.push(`problem: ${(e as Error).message}; the default problem is shown`);
      return { ...DEFAULT_FORM };
    }
    try {
      // Tiles do not change a run's memory; 1 keeps them out of the advice.
      checkSize({ ...problem, blockM: 1, blockN: 1 }, { measure: (z) => z.runBytes, budget: RUN_BUDGET_BYTES, what: 'this problem' });
      return form;
    } catch (e) {
      if (!(e instanceof SizeError) || !hasOwnKey(FORM_SCHEMA, e.field)) throw e;
      const key = e.field as keyof ProblemForm;
      const now = form[key];
      const next = e.largestFitting > 0 ? String(e.largestFitting) : DEFAULT_FORM[key];
      notices.push(`problem.${key}: ${show(now)} is too large (${e.message}); using ${show(next)}`);
      form = { ...form, [key]: next };
    }
  }
  notices.push('problem: too large for this app; the default problem is shown');
  return { ...DEFAULT_FORM };
}

/** A switch that does not apply with the link's other switches (sage's qPerWarp on version 1) is dropped, with a notice. */
function dropInactiveSwitches(form: ProblemForm, notices: string[]): void {
  const values = effectiveSwitches(form.algorithm, form.switches, undefined);
  for (const sw of panelSwitches(form.algorithm)) {
    if (!(sw.key in form.switches) || sw.fp8Only) continue;
    const why = sw.inactive?.(values, form.dtype);
    if (!why) continue;
    notices.push(`problem.switches.${sw.key}: ${why}; ignored`);
    const rest = { ...form.switches };
    delete rest[sw.key];
    form.switches = rest;
  }
}

/** The problem panel's kernel switches from a link: known keys with a value of the right kind. */
function readSwitches(x: unknown, algorithm: string, notices: string[]): ProblemForm['switches'] {
  const out: ProblemForm['switches'] = {};
  if (!isRecord(x)) {
    notices.push(`problem.switches: ${show(x)} ignored (not an object)`);
    return out;
  }
  const own = new Map(panelSwitches(algorithm).map((sw) => [sw.key, typeof sw.spec.default === 'boolean' ? 'boolean' : 'string']));
  const anyAlgorithm = new Set(DESCRIPTORS.flatMap((d) => panelSwitches(d.id).map((sw) => sw.key)));
  for (const [k, v] of Object.entries(x)) {
    const want = own.get(k);
    if (!want)
      notices.push(`problem.switches.${label(k)}: ${anyAlgorithm.has(k) ? `not a switch of ${algorithm}` : 'unknown switch'}, ignored`);
    else if (typeof v !== want || (typeof v === 'string' && v.length > MAX_FIELD_TEXT))
      notices.push(
        `problem.switches.${k}: ${show(v)} is not ${want === 'boolean' ? 'true or false' : 'a number as text'}; using the kernel's default`,
      );
    else out[k] = v as boolean | string;
  }
  return out;
}

function readViews(x: unknown, known: readonly string[], where: string, fallback: string[], notices: string[]): string[] {
  if (x === undefined) return [...fallback];
  if (!Array.isArray(x)) {
    notices.push(`${where}: not a list of views (${show(x)}); default views shown`);
    return [...fallback];
  }
  const out: string[] = [];
  for (const v of x) {
    if (typeof v === 'string' && known.includes(v)) {
      if (!out.includes(v)) out.push(v);
    } else notices.push(`${where}: unknown view ${show(v)} ignored`);
  }
  return out;
}

const PANE_KEYS = ['algorithm', 'dtype', 'blockM', 'blockN', 'features', 'views', 'st', 'maskMod'] as const;

/** A notice for each key of `x` that is not one of `known`. */
function ignoreUnknown(x: Record<string, unknown>, known: readonly string[], where: string, notices: string[]): void {
  for (const k of Object.keys(x)) if (!known.includes(k)) notices.push(`${where}: unknown setting ${show(k)} ignored`);
}

function readPane(x: unknown, i: number, known: readonly string[], notices: string[]): SharedPane | undefined {
  const where = `compare pane ${i + 1}`;
  if (!isRecord(x)) {
    notices.push(`${where}: not an object (${show(x)}); pane dropped`);
    return undefined;
  }
  const p = pick(x, PANE_KEYS);
  ignoreUnknown(x, PANE_KEYS, where, notices);
  const d = DEFAULT_PANES[Math.min(i, DEFAULT_PANES.length - 1)];
  const config: ComparePaneConfig = { ...structuredClone(d) };
  if (typeof p.algorithm === 'string' && ALGORITHMS.some((a) => a.id === p.algorithm)) config.algorithm = p.algorithm;
  else notices.push(`${where}: unknown algorithm ${show(p.algorithm)}; using ${d.algorithm}`);
  if (p.dtype !== undefined) {
    if (typeof p.dtype === 'string' && (DTYPES as readonly string[]).includes(p.dtype)) config.dtype = p.dtype as DType;
    else notices.push(`${where}: dtype ${show(p.dtype)} is not one of ${DTYPES.join(', ')}; the shared dtype is used`);
  }
  for (const k of ['blockM', 'blockN'] as const) {
    const v = p[k];
    if (v === undefined) continue;
    if (typeof v === 'string' && /^\d{0,6}$/.test(v) && v !== '0') config[k] = v;
    else notices.push(`${where}: ${k === 'blockM' ? 'Br' : 'Bc'} ${show(v)} is not a positive whole number; using ${show(d[k])}`);
  }
  if (p.features !== undefined) {
    if (!isRecord(p.features)) notices.push(`${where}: features ${show(p.features)} ignored (not an object)`);
    else {
      config.features = {};
      const specs = { ...paneSwitchSpecs(config.algorithm), ...paneSwitchSpecs(config.algorithm, true) };
      for (const [k, v] of Object.entries(p.features)) {
        const spec = own(specs, k) as FeatureSpecs[string] | undefined;
        if (!spec) notices.push(`${where}: ${label(k)} is not a switch of ${config.algorithm}; ignored`);
        else if (typeof v === typeof spec.default && (typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))))
          config.features[k] = v;
        else
          notices.push(`${where}: feature ${k}=${show(v)} ignored (not ${typeof spec.default === 'boolean' ? 'true/false' : 'a number'})`);
      }
    }
  }
  if (p.maskMod !== undefined) {
    const why = misfit({ kind: 'mask' }, p.maskMod);
    if (why) notices.push(`${where}: mask_mod ${show(p.maskMod)} ${why}; the shared mask is used`);
    else {
      try {
        maskFromFields({ maskMod: p.maskMod as string, scoreMod: '' }, { hq: 1, nq: 64, nk: 64 });
        config.maskMod = p.maskMod as string;
      } catch (e) {
        notices.push(`${where}: ${(e as Error).message}; the shared mask is used`);
      }
    }
  }
  config.views = readViews(p.views, known, `${where} views`, d.views, notices);
  let step = 0;
  if (p.st !== undefined) {
    if (isStep(p.st)) step = p.st;
    else notices.push(`${where}: step ${show(p.st)} is not a step number; starting at step 1`);
  }
  return { config, step };
}

/**
 * Reads a URL fragment (with or without the leading '#'). An empty fragment gives the defaults
 * and no notices; a link nothing can be read from gives the defaults with one notice.
 */
export function decodeState(fragment: string, knownViews: readonly string[]): DecodeResult {
  try {
    return readState(fragment, knownViews);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return { state: defaultSharedState([...knownViews]), notices: [`the link could not be read (${why}); the defaults are shown`] };
  }
}

function readState(fragment: string, knownViews: readonly string[]): DecodeResult {
  const notices: string[] = [];
  const state = defaultSharedState([...knownViews]);
  const frag = fragment.replace(/^#/, '');
  if (frag === '') return { state, notices };
  if (frag.length > MAX_FRAGMENT)
    return { state, notices: [`the link is ${frag.length} characters long, more than a FlashScope link can be; the defaults are shown`] };
  const m = /^s=(.*)$/.exec(frag);
  if (!m)
    return {
      state,
      notices: [`the link's fragment "${frag.slice(0, 30)}" is not a FlashScope state (expected #s=…); the defaults are shown`],
    };
  let parsed: unknown;
  try {
    parsed = JSON.parse(fromBase64Url(m[1]));
  } catch (e) {
    return {
      state,
      notices: [`the link's state could not be read (${e instanceof Error ? e.message : String(e)}); the defaults are shown`],
    };
  }
  if (!isRecord(parsed)) return { state, notices: ["the link's state is not an object; the defaults are shown"] };
  const raw = pick(parsed, ['v', 'm', 'f', 'st', 'vw', 'c', 'im', 'sv']);
  if (raw.v !== SHARE_VERSION) {
    const v = raw.v;
    const why =
      typeof v === 'number' && v > SHARE_VERSION
        ? `a newer FlashScope (state version ${v}; this one reads ${SHARE_VERSION})`
        : `an unknown state version ${show(v)} (this FlashScope reads ${SHARE_VERSION})`;
    return { state, notices: [`the link was made by ${why}; the defaults are shown`] };
  }
  for (const k of Object.keys(parsed)) if (!hasOwnKey(raw, k)) notices.push(`unknown part ${show(k)} ignored`);
  if (raw.m === 'debugger' || raw.m === 'compare') state.mode = raw.m;
  else if (raw.m !== undefined) notices.push(`mode ${show(raw.m)} is not debugger or compare; debugger shown`);
  state.form = readForm(raw.f, notices);
  if (raw.st !== undefined) {
    if (isStep(raw.st)) state.step = raw.st;
    else notices.push(`step ${show(raw.st)} is not a step number; starting at step 1`);
  }
  state.views = readViews(raw.vw, knownViews, 'views', state.views, notices);
  if (raw.sv !== undefined) state.serving = decodeServing(raw.sv, notices);
  if (raw.im === 1) {
    state.imported = true;
    notices.push(
      'the link was made with tensors loaded from files, which a link cannot carry; random inputs with the same shapes and seed are shown',
    );
  }
  if (raw.c !== undefined) {
    if (!isRecord(raw.c)) notices.push(`compare settings ${show(raw.c)} ignored (not an object)`);
    else {
      const c = pick(raw.c, ['a', 'g', 'p', 'd']);
      ignoreUnknown(raw.c, ['a', 'g', 'p', 'd'], 'compare settings', notices);
      if (typeof c.a === 'string' && (SYNC_AXES as readonly string[]).includes(c.a)) state.compare.axis = c.a as SyncAxis;
      else if (c.a !== undefined) notices.push(`sync axis ${show(c.a)} is not one of ${SYNC_AXES.join(', ')}; using kv`);
      if (typeof c.g === 'string' && GPUS.some((g) => g.id === c.g)) state.compare.gpu = c.g;
      else if (c.g !== undefined) notices.push(`GPU ${show(c.g)} is not one of ${GPUS.map((g) => g.id).join(', ')}; using h100`);
      if (c.p !== undefined) {
        if (!Array.isArray(c.p)) notices.push(`compare panes ${show(c.p)} ignored (not a list)`);
        else {
          if (c.p.length > MAX_PANES) notices.push(`the link has ${c.p.length} compare panes; at most ${MAX_PANES} are shown`);
          const panes = c.p
            .slice(0, MAX_PANES)
            .map((p, i) => readPane(p, i, knownViews, notices))
            .filter((p): p is SharedPane => !!p);
          while (panes.length < MIN_PANES) {
            notices.push(`compare needs at least ${MIN_PANES} panes; a default pane was added`);
            panes.push({ config: structuredClone(DEFAULT_PANES[panes.length]), step: 0 });
          }
          state.compare.panes = panes;
        }
      }
      const n = state.compare.panes.length;
      if (Array.isArray(c.d) && c.d.length === 2 && c.d.every((i) => Number.isInteger(i) && i >= 0 && i < n) && c.d[0] !== c.d[1])
        state.compare.diff = [c.d[0], c.d[1]];
      else if (c.d !== undefined) notices.push(`difference pair ${show(c.d)} does not name two different panes; using panes 1 and 2`);
    }
  }
  return { state, notices };
}
