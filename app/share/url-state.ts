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
} from '../../engine/api.ts';
import { DEFAULT_FORM, panelSwitches, effectiveSwitches, formToRequest, type ProblemForm } from '../store/problem-form.ts';
import { DEFAULT_PANES, MAX_PANES, MIN_PANES, type ComparePaneConfig } from '../compare/pane-config.ts';
import { decodeServing, encodeServing, type ServingShare } from '../serving/serving-url.ts';

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

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isStep = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
const show = (x: unknown) => {
  const t = JSON.stringify(x);
  return t === undefined ? String(x) : t.length > 40 ? `${t.slice(0, 40)}…` : t;
};

/** The problem form from a link: each field checked by type, then the whole by formToRequest; bad fields fall back to the defaults. */
function readForm(x: unknown, notices: string[]): ProblemForm {
  const form: ProblemForm = { ...DEFAULT_FORM };
  if (x === undefined) return form;
  if (!isObj(x)) {
    notices.push(`problem: not an object (${show(x)}); the default problem is shown`);
    return form;
  }
  const enums: Partial<Record<keyof ProblemForm, readonly string[]>> = {
    algorithm: ALGORITHMS.map((a) => a.id),
    pass: PASSES,
    blockMode: ['sram', 'explicit'],
    dtype: DTYPES,
    distribution: INPUT_DISTRIBUTIONS,
  };
  // Switches are read once the algorithm is known: only its own are kept.
  let rawSwitches: unknown;
  for (const [k, v] of Object.entries(x)) {
    if (!(k in DEFAULT_FORM)) {
      notices.push(`problem.${k}: unknown setting, ignored`);
      continue;
    }
    if (k === 'switches') {
      rawSwitches = v;
      continue;
    }
    const key = k as keyof ProblemForm;
    const want = typeof DEFAULT_FORM[key];
    const allowed = enums[key];
    if (typeof v !== want || (allowed && !allowed.includes(v as string))) {
      notices.push(
        `problem.${k}: ${show(v)} is not ${allowed ? `one of ${allowed.join(', ')}` : `a ${want}`}; using ${show(DEFAULT_FORM[key])}`,
      );
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
    softcap: 'softcap',
    mask_mod: 'maskMod',
    score_mod: 'scoreMod',
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
  return form;
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
  if (!isObj(x)) {
    notices.push(`problem.switches: ${show(x)} ignored (not an object)`);
    return out;
  }
  const own = new Map(panelSwitches(algorithm).map((sw) => [sw.key, typeof sw.spec.default === 'boolean' ? 'boolean' : 'string']));
  const anyAlgorithm = new Set(DESCRIPTORS.flatMap((d) => panelSwitches(d.id).map((sw) => sw.key)));
  for (const [k, v] of Object.entries(x)) {
    const want = own.get(k);
    if (!want) notices.push(`problem.switches.${k}: ${anyAlgorithm.has(k) ? `not a switch of ${algorithm}` : 'unknown switch'}, ignored`);
    else if (typeof v !== want)
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

function readPane(x: unknown, i: number, known: readonly string[], notices: string[]): SharedPane | undefined {
  const where = `compare pane ${i + 1}`;
  if (!isObj(x)) {
    notices.push(`${where}: not an object (${show(x)}); pane dropped`);
    return undefined;
  }
  const d = DEFAULT_PANES[Math.min(i, DEFAULT_PANES.length - 1)];
  const config: ComparePaneConfig = { ...structuredClone(d) };
  if (typeof x.algorithm === 'string' && ALGORITHMS.some((a) => a.id === x.algorithm)) config.algorithm = x.algorithm;
  else notices.push(`${where}: unknown algorithm ${show(x.algorithm)}; using ${d.algorithm}`);
  if (x.dtype !== undefined) {
    if (typeof x.dtype === 'string' && (DTYPES as readonly string[]).includes(x.dtype)) config.dtype = x.dtype as DType;
    else notices.push(`${where}: dtype ${show(x.dtype)} is not one of ${DTYPES.join(', ')}; the shared dtype is used`);
  }
  for (const k of ['blockM', 'blockN'] as const) {
    const v = x[k];
    if (v === undefined) continue;
    if (typeof v === 'string' && /^\d{0,6}$/.test(v) && v !== '0') config[k] = v;
    else notices.push(`${where}: ${k === 'blockM' ? 'Br' : 'Bc'} ${show(v)} is not a positive whole number; using ${show(d[k])}`);
  }
  if (x.features !== undefined) {
    if (!isObj(x.features)) notices.push(`${where}: features ${show(x.features)} ignored (not an object)`);
    else {
      config.features = {};
      for (const [k, v] of Object.entries(x.features)) {
        if (typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) config.features[k] = v;
        else notices.push(`${where}: feature ${k}=${show(v)} ignored (not true/false or a number)`);
      }
    }
  }
  config.views = readViews(x.views, known, `${where} views`, d.views, notices);
  let step = 0;
  if (x.st !== undefined) {
    if (isStep(x.st)) step = x.st;
    else notices.push(`${where}: step ${show(x.st)} is not a step number; starting at step 1`);
  }
  return { config, step };
}

/** Reads a URL fragment (with or without the leading '#'). An empty fragment gives the defaults and no notices. */
export function decodeState(fragment: string, knownViews: readonly string[]): DecodeResult {
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
  let raw: unknown;
  try {
    raw = JSON.parse(fromBase64Url(m[1]));
  } catch (e) {
    return {
      state,
      notices: [`the link's state could not be read (${e instanceof Error ? e.message : String(e)}); the defaults are shown`],
    };
  }
  if (!isObj(raw)) return { state, notices: ["the link's state is not an object; the defaults are shown"] };
  if (raw.v !== SHARE_VERSION) {
    const v = raw.v;
    const why =
      typeof v === 'number' && v > SHARE_VERSION
        ? `a newer FlashScope (state version ${v}; this one reads ${SHARE_VERSION})`
        : `an unknown state version ${show(v)} (this FlashScope reads ${SHARE_VERSION})`;
    return { state, notices: [`the link was made by ${why}; the defaults are shown`] };
  }
  for (const k of Object.keys(raw))
    if (!['v', 'm', 'f', 'st', 'vw', 'c', 'im', 'sv'].includes(k)) notices.push(`unknown part "${k}" ignored`);
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
    if (!isObj(raw.c)) notices.push(`compare settings ${show(raw.c)} ignored (not an object)`);
    else {
      const c = raw.c;
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
