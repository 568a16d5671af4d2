// What an algorithm's kernels accept, answered from its declaration alone: the dtype, the
// head-dim pair and the score modifiers. The refusal names the field at fault and says what
// to pick instead, so the problem panel can offer a one-click fix without starting a pass,
// and the algorithm's own entry throws the same refusal (one copy of each rule).

import { type AttentionProblem, type DType, isFp8, noFp8Path, ProblemError } from '../core/problem.ts';

/** The score modifiers a kernel may lack. */
export type Modifier = 'alibi' | 'softcap' | 'sinks';

export interface Supports {
  /** Input dtypes its forward takes (the backward takes the 16- and 32-bit ones). */
  readonly dtypes: readonly DType[];
  /** Dtypes it steps that its kernel does not ship, each with the note the dtype menu shows. */
  readonly whatIf?: Partial<Record<DType, string>>;
  /** Its own sentence for a dtype it refuses (absent: the shared "no FP8 path" one). */
  readonly dtypeRefusal?: (dtype: DType) => string;
  /** Head-dim rules of its kernels: the largest d, and whether d must equal dv. */
  readonly headDims?: {
    readonly max?: number;
    readonly maxRefusal: (d: number) => string;
    readonly equal?: (d: number, dv: number) => string;
  };
  /** Its forward takes attention_chunk (FA3's hopper/ kernels, and the reference); absent: refused. */
  readonly attentionChunk?: true;
  /** Modifiers its kernels lack, each with the sentence its refusal says. */
  readonly lacks?: Partial<Record<Modifier, string>>;
  /** Its FP8 forward's extra limits: the modifiers it lacks and the (d, dv) pairs with d ≠ dv it instantiates. */
  readonly fp8?: {
    readonly lacks: Partial<Record<Modifier, string>>;
    readonly headDimPairs: readonly (readonly [number, number])[];
    readonly pairRefusal: (d: number, dv: number) => string;
  };
}

export interface DeclaredRefusal {
  field: string;
  message: string;
}

const MODIFIERS: readonly Modifier[] = ['alibi', 'softcap', 'sinks'];

function lacking(p: AttentionProblem, lacks: Partial<Record<Modifier, string>> | undefined): DeclaredRefusal | null {
  for (const m of MODIFIERS) {
    const message = lacks?.[m];
    if (message !== undefined && p[m] !== undefined) return { field: m, message };
  }
  return null;
}

/** The refusal of an attention chunk by algorithm `id`'s `pass`: only FA3's forward kernels take one. */
export function noAttentionChunk(pass: 'forward' | 'backward', id = ''): DeclaredRefusal {
  return {
    field: 'attentionChunk',
    message:
      pass === 'backward'
        ? "the backward pass has no attention chunk (FA3's backward runs with attention_chunk 0, hopper/flash_api.cpp); step the forward, or clear the attention chunk"
        : `${id} has no attention chunk (FA3's hopper/ kernels take attention_chunk); run it on fa3 or standard, or clear the attention chunk`,
  };
}

/** The refusal `s` declares for `p` on algorithm `id`'s `pass` (which exists), or null when it accepts it. */
export function supportsRefusal(id: string, s: Supports, pass: 'forward' | 'backward', p: AttentionProblem): DeclaredRefusal | null {
  if (pass === 'backward') {
    if (isFp8(p.dtype)) return { field: 'dtype', message: noFp8Path(`the ${id} backward`, p.dtype) };
  } else if (!s.dtypes.includes(p.dtype)) {
    return { field: 'dtype', message: s.dtypeRefusal ? s.dtypeRefusal(p.dtype) : noFp8Path(id, p.dtype) };
  }
  if (p.attentionChunk !== undefined && (pass === 'backward' || !s.attentionChunk)) return noAttentionChunk(pass, id);
  const lowPrec = pass === 'forward' && isFp8(p.dtype) ? s.fp8 : undefined;
  const modifier = lacking(p, s.lacks) ?? lacking(p, lowPrec?.lacks);
  if (modifier) return modifier;
  if (s.headDims?.equal && p.d !== p.dv) return { field: 'dv', message: s.headDims.equal(p.d, p.dv) };
  if (lowPrec && p.d !== p.dv && !lowPrec.headDimPairs.some(([d, dv]) => d === p.d && dv === p.dv))
    return { field: 'dv', message: lowPrec.pairRefusal(p.d, p.dv) };
  if (s.headDims?.max !== undefined && p.d > s.headDims.max) return { field: 'd', message: s.headDims.maxRefusal(p.d) };
  return null;
}

/** Throws the ProblemError `s` declares for `p`: what a kernel's entry calls before its first step. */
export function requireSupported(id: string, s: Supports, pass: 'forward' | 'backward', p: AttentionProblem): void {
  const r = supportsRefusal(id, s, pass, p);
  if (r) throw new ProblemError(r.field, r.message);
}

/** The refusal algorithm `d` declares for `p` on `pass` (forward with no switches set), its missing backward included. */
export function declaredRefusal(
  d: { readonly id: string; readonly backward?: unknown; readonly supports: Supports },
  pass: 'forward' | 'backward',
  p: AttentionProblem,
): DeclaredRefusal | null {
  if (pass === 'backward' && !d.backward) return noBackwardPass(d.id);
  return supportsRefusal(d.id, d.supports, pass, p);
}

/** The refusal of the backward pass of algorithm `id`, which has none. */
export function noBackwardPass(id: string): DeclaredRefusal {
  return {
    field: 'pass',
    message: `${id} has no backward pass in FlashScope (standard, fa1, fa2, fa3 and fa4 have one); choose the forward pass or one of those`,
  };
}
