// The one mask field a problem carries: mask_mod and score_mod text plus the named aux arrays
// they read. Checked once here; every consumer compiles the same checked trees.

import { compileMaskMod, compileScoreMod } from './mask-evaluate.ts';
import { auxNameProblem, MaskError, type MaskKind, type MaskNode, type MaskType, namesRead, parseMask } from './mask-language.ts';

export interface MaskSpec {
  /** mask_mod(b, h, q_idx, kv_idx) body: true keeps the key. */
  maskMod?: string;
  /** score_mod(score, b, h, q_idx, kv_idx) body: the new score (score arrives scaled). */
  scoreMod?: string;
  /** Aux arrays by name (document ids, per-head slopes, a bias table). */
  aux?: Record<string, number[]>;
}

/** At most this many aux entries in all, so a share link cannot carry a huge table. */
export const MAX_AUX_ENTRIES = 1 << 16;
const MAX_AUX_ARRAYS = 8;

/** A MaskSpec problem, naming the field ('mask.maskMod', 'mask.aux.doc', …) and for text the column. */
export class MaskSpecError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
    readonly column?: number,
  ) {
    super(`${field}: ${reason}`);
    this.name = 'MaskSpecError';
  }
}

export interface CheckedMask {
  maskAst?: MaskNode;
  scoreAst?: MaskNode;
  aux: ReadonlyMap<string, readonly number[]>;
  auxTypes: ReadonlyMap<string, MaskType>;
  /** The mask_mod reads b or h (or an array indexed by them): its block mask is per (b, h). */
  maskReadsBatchOrHead: boolean;
  /** The mask_mod reads h: its block mask differs per query head. */
  maskReadsHead: boolean;
}

function checkAux(aux: unknown): Map<string, readonly number[]> {
  const out = new Map<string, readonly number[]>();
  if (aux === undefined) return out;
  if (typeof aux !== 'object' || aux === null || Array.isArray(aux))
    throw new MaskSpecError('mask.aux', 'must map names to arrays of numbers');
  const names = Object.keys(aux);
  if (names.length > MAX_AUX_ARRAYS) throw new MaskSpecError('mask.aux', `at most ${MAX_AUX_ARRAYS} arrays, got ${names.length}`);
  let total = 0;
  for (const name of names) {
    const why = auxNameProblem(name);
    if (why) throw new MaskSpecError('mask.aux', why);
    const values = (aux as Record<string, unknown>)[name];
    if (!Array.isArray(values)) throw new MaskSpecError(`mask.aux.${name}`, 'must be an array of numbers');
    total += values.length;
    if (total > MAX_AUX_ENTRIES) throw new MaskSpecError(`mask.aux.${name}`, `aux arrays hold at most ${MAX_AUX_ENTRIES} entries in all`);
    if (!values.every((v) => typeof v === 'number' && Number.isFinite(v)))
      throw new MaskSpecError(`mask.aux.${name}`, 'entries must be finite numbers');
    out.set(name, values as number[]);
  }
  return out;
}

function parseField(text: unknown, kind: MaskKind, auxTypes: ReadonlyMap<string, MaskType>): MaskNode | undefined {
  if (text === undefined) return undefined;
  const field = kind === 'mask_mod' ? 'mask.maskMod' : 'mask.scoreMod';
  if (typeof text !== 'string') throw new MaskSpecError(field, 'must be text');
  try {
    return parseMask(text, kind, auxTypes);
  } catch (e) {
    if (e instanceof MaskError) throw new MaskSpecError(field, e.message, e.column);
    throw e;
  }
}

/** Checks a MaskSpec (text and arrays); throws MaskSpecError naming the field and column. */
export function checkMaskSpec(spec: MaskSpec): CheckedMask {
  if (typeof spec !== 'object' || spec === null) throw new MaskSpecError('mask', 'must be an object with maskMod / scoreMod text');
  const aux = checkAux(spec.aux);
  const auxTypes = new Map<string, MaskType>();
  for (const [name, values] of aux) auxTypes.set(name, values.every(Number.isInteger) ? 'int' : 'num');
  const maskAst = parseField(spec.maskMod, 'mask_mod', auxTypes);
  const scoreAst = parseField(spec.scoreMod, 'score_mod', auxTypes);
  const read = maskAst ? namesRead(maskAst) : new Set<string>();
  return { maskAst, scoreAst, aux, auxTypes, maskReadsBatchOrHead: read.has('b') || read.has('h'), maskReadsHead: read.has('h') };
}

export interface CompiledMask {
  checked: CheckedMask;
  maskMod?: (b: number, h: number, q: number, kv: number) => boolean;
  scoreMod?: (b: number, h: number, q: number, kv: number, score: number) => number;
}

/** The spec's evaluators for a problem of nq queries and nk keys. */
export function compileMaskSpec(spec: MaskSpec, nq: number, nk: number): CompiledMask {
  const checked = checkMaskSpec(spec);
  const x = { nq, nk, aux: checked.aux };
  return {
    checked,
    maskMod: checked.maskAst ? compileMaskMod(checked.maskAst, x) : undefined,
    scoreMod: checked.scoreAst ? compileScoreMod(checked.scoreAst, x) : undefined,
  };
}

/** True when the spec changes nothing (no text in either field). */
export function isEmptyMask(spec: MaskSpec | undefined): boolean {
  return spec === undefined || (spec.maskMod === undefined && spec.scoreMod === undefined);
}
