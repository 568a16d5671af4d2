// The one conversion between an attention problem and the text fields a person types it in:
// the problem panel, the WebGPU panel, compare's panes and the lessons' forms all read and
// write problems through it, so a new problem field is added here once.

import { auxToText, parseAuxText } from './core/mask-aux-text.ts';
import { maskSpecFrom } from './core/mask-presets.ts';
import { checkMaskSpec, type MaskSpec, MaskSpecError } from './core/mask-spec.ts';
import type { AttentionProblem, DType } from './core/problem.ts';

/** A problem as typed: numbers kept as text, so a bad value is shown back, never lost. */
export interface ProblemFields {
  batch: string;
  hq: string;
  hk: string;
  nq: string;
  nk: string;
  d: string;
  dv: string;
  causal: boolean;
  /** Empty: no sliding window on that side. */
  windowLeft: string;
  windowRight: string;
  /** Empty: no attention chunk; else a query sees only keys of its own chunk of this many positions. */
  attentionChunk: string;
  alibi: boolean;
  /** Empty: no softcap. */
  softcap: string;
  /** Empty: no attention sink; else one sink logit used for every query head. */
  sink: string;
  /** mask_mod as mask-language text or a preset reference (`sliding_window:16`); empty: none. */
  maskMod: string;
  /** score_mod, likewise. */
  scoreMod: string;
  /** The aux arrays they read, as text (`doc = 0*12, 1*28; slope = 0.5, 0.25`); empty or absent: none. */
  maskAux?: string;
  dtype: DType;
}

/** A field that does not parse, named as the form labels it. */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A whole number of at least `min` typed in `field`. */
export function wholeNumber(field: string, text: string, min = 1): number {
  const t = text.trim();
  if (!/^-?\d+$/.test(t)) throw new FieldError(field, `must be a whole number, got "${text}"`);
  const n = Number(t);
  if (n < min) throw new FieldError(field, `must be at least ${min}, got ${n}`);
  return n;
}

/** A tile side typed in `field`: empty or "auto" leaves it to the algorithm, which resolves it once per load (passBlocks). */
export function tileSide(field: string, text: string): number | undefined {
  const t = text.trim();
  return t === '' || t.toLowerCase() === 'auto' ? undefined : wholeNumber(field, text);
}

/** The problem these fields describe; throws a FieldError naming the first bad field. */
export function fieldsToProblem(f: ProblemFields): AttentionProblem {
  const problem: AttentionProblem = {
    batch: wholeNumber('batch', f.batch),
    hq: wholeNumber('hq', f.hq),
    hk: wholeNumber('hk', f.hk),
    nq: wholeNumber('nq', f.nq),
    nk: wholeNumber('nk', f.nk),
    d: wholeNumber('d', f.d),
    dv: wholeNumber('dv', f.dv),
    causal: f.causal,
    dtype: f.dtype,
  };
  if (f.windowLeft.trim() !== '' || f.windowRight.trim() !== '') {
    problem.window = {
      left: f.windowLeft.trim() === '' ? -1 : wholeNumber('window left', f.windowLeft, 0),
      right: f.windowRight.trim() === '' ? -1 : wholeNumber('window right', f.windowRight, 0),
    };
  }
  if (f.attentionChunk.trim() !== '') problem.attentionChunk = wholeNumber('attention chunk', f.attentionChunk);
  if (f.alibi) problem.alibi = 'standard';
  if (f.softcap.trim() !== '') {
    const c = Number(f.softcap);
    if (!(Number.isFinite(c) && c > 0)) throw new FieldError('softcap', `must be a number > 0, got "${f.softcap}"`);
    problem.softcap = c;
  }
  if (f.sink.trim() !== '') {
    const v = Number(f.sink);
    if (!Number.isFinite(v)) throw new FieldError('sink', `must be a number, got "${f.sink}"`);
    problem.sinks = new Array<number>(problem.hq).fill(v);
  }
  const mask = maskFromFields(f, problem);
  if (mask) problem.mask = mask;
  return problem;
}

/** The mask field from the mask_mod / score_mod boxes; a FieldError names the box and the column. */
export function maskFromFields(
  f: Pick<ProblemFields, 'maskMod' | 'scoreMod' | 'maskAux'>,
  dims: { hq: number; nq: number; nk: number },
): MaskSpec | undefined {
  const spec: MaskSpec = {};
  let given: Record<string, number[]> | undefined;
  try {
    given = parseAuxText(f.maskAux ?? '');
  } catch (e) {
    throw new FieldError('aux arrays', e instanceof MaskSpecError ? e.reason : (e as Error).message);
  }
  for (const [key, field] of [
    ['maskMod', 'mask_mod'],
    ['scoreMod', 'score_mod'],
  ] as const) {
    const ref = f[key].trim();
    if (ref === '') continue;
    let one: MaskSpec;
    try {
      one = maskSpecFrom({ [key]: ref }, dims);
      // The typed arrays are there for the text to read; a preset's own arrays take their names.
      if (given) one.aux = { ...given, ...one.aux };
      checkMaskSpec(one);
    } catch (e) {
      throw new FieldError(field, e instanceof MaskSpecError ? e.reason : (e as Error).message);
    }
    spec[key] = one[key];
    if (one.aux) spec.aux = { ...spec.aux, ...one.aux };
  }
  return spec.maskMod === undefined && spec.scoreMod === undefined ? undefined : spec;
}

/**
 * The fields that show this problem. The fields hold one sink logit for every head, so
 * per-head sinks that differ leave the sink field empty.
 */
export function problemToFields(p: AttentionProblem): ProblemFields {
  const sinks = p.sinks;
  return {
    batch: String(p.batch),
    hq: String(p.hq),
    hk: String(p.hk),
    nq: String(p.nq),
    nk: String(p.nk),
    d: String(p.d),
    dv: String(p.dv),
    causal: p.causal,
    windowLeft: p.window && p.window.left >= 0 ? String(p.window.left) : '',
    windowRight: p.window && p.window.right >= 0 ? String(p.window.right) : '',
    attentionChunk: p.attentionChunk !== undefined ? String(p.attentionChunk) : '',
    alibi: !!p.alibi,
    softcap: p.softcap !== undefined ? String(p.softcap) : '',
    sink: sinks && sinks.length > 0 && sinks.every((v) => v === sinks[0]) ? String(sinks[0]) : '',
    // The mask's text as it runs, and its arrays in their text form.
    maskMod: p.mask?.maskMod ?? '',
    scoreMod: p.mask?.scoreMod ?? '',
    maskAux: p.mask?.aux ? auxToText(p.mask.aux) : '',
    dtype: p.dtype,
  };
}
