// The key range a mask_mod leaves each query row, read off its tree: conjuncts that bound
// kv_idx by a linear function of q_idx (causal, windows, prefix limits) become per-row bounds,
// so a row's range is a few additions instead of one mask evaluation per key; whatever else
// the mask says stays a residual, evaluated only inside that range and in the original order.

import type { MaskNode } from './mask-language.ts';

/** kv_idx ≥ a·q_idx + c (lower) or kv_idx ≤ a·q_idx + c (upper), a and c whole numbers. */
export interface LinearBound {
  a: number;
  c: number;
}

export interface MaskRange {
  lower: LinearBound[];
  upper: LinearBound[];
  /** The rest of the mask, to evaluate where every bound holds; undefined when the bounds are the whole mask. */
  residual: MaskNode | undefined;
}

/** q·q_idx + kv·kv_idx + c, or undefined when the node is not linear in whole numbers. */
interface Linear {
  q: number;
  kv: number;
  c: number;
}

function linear(n: MaskNode, nq: number, nk: number): Linear | undefined {
  if (n.t !== 'int') return undefined;
  switch (n.k) {
    case 'lit':
      return typeof n.v === 'number' ? { q: 0, kv: 0, c: n.v } : undefined;
    case 'var':
      if (n.name === 'q_idx') return { q: 1, kv: 0, c: 0 };
      if (n.name === 'kv_idx') return { q: 0, kv: 1, c: 0 };
      if (n.name === 'nq') return { q: 0, kv: 0, c: nq };
      if (n.name === 'nk') return { q: 0, kv: 0, c: nk };
      return undefined;
    case 'unary': {
      const a = linear(n.arg, nq, nk);
      return a && n.op === '-' ? { q: -a.q, kv: -a.kv, c: -a.c } : undefined;
    }
    case 'bin': {
      const l = linear(n.l, nq, nk);
      const r = linear(n.r, nq, nk);
      if (!l || !r) return undefined;
      if (n.op === '+') return { q: l.q + r.q, kv: l.kv + r.kv, c: l.c + r.c };
      if (n.op === '-') return { q: l.q - r.q, kv: l.kv - r.kv, c: l.c - r.c };
      if (n.op !== '*') return undefined;
      // One side must be a constant for the product to stay linear.
      if (l.q === 0 && l.kv === 0) return { q: l.c * r.q, kv: l.c * r.kv, c: l.c * r.c };
      if (r.q === 0 && r.kv === 0) return { q: r.c * l.q, kv: r.c * l.kv, c: r.c * l.c };
      return undefined;
    }
    default:
      return undefined;
  }
}

const FLIP: Readonly<Record<string, string>> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '==': '==' };

/** The bounds one comparison puts on kv_idx, or undefined when it is not `kv_idx op a·q_idx + c`. */
function bounds(n: MaskNode, nq: number, nk: number): { lower?: LinearBound; upper?: LinearBound } | undefined {
  if (n.k !== 'bin' || FLIP[n.op] === undefined) return undefined;
  const l = linear(n.l, nq, nk);
  const r = linear(n.r, nq, nk);
  if (!l || !r) return undefined;
  // l − r op 0 with a coefficient of ±1 on kv_idx: kv_idx op' a·q_idx + c.
  const f = { q: l.q - r.q, kv: l.kv - r.kv, c: l.c - r.c };
  if (f.kv !== 1 && f.kv !== -1) return undefined;
  const op = f.kv === 1 ? n.op : FLIP[n.op];
  const a = -f.q * f.kv;
  const c = -f.c * f.kv;
  if (![a, c].every((v) => Number.isSafeInteger(v))) return undefined;
  switch (op) {
    case '<':
      return { upper: { a, c: c - 1 } };
    case '<=':
      return { upper: { a, c } };
    case '>':
      return { lower: { a, c: c + 1 } };
    case '>=':
      return { lower: { a, c } };
    default:
      return { lower: { a, c }, upper: { a, c } };
  }
}

function conjuncts(n: MaskNode, out: MaskNode[]): MaskNode[] {
  if (n.k === 'bin' && n.op === '&&') {
    conjuncts(n.l, out);
    conjuncts(n.r, out);
  } else out.push(n);
  return out;
}

function readsAux(n: MaskNode): boolean {
  switch (n.k) {
    case 'aux':
      return true;
    case 'call':
      return n.args.some(readsAux);
    case 'unary':
      return readsAux(n.arg);
    case 'bin':
      return readsAux(n.l) || readsAux(n.r);
    case 'cond':
      return readsAux(n.test) || readsAux(n.yes) || readsAux(n.no);
    default:
      return false;
  }
}

/**
 * Splits the conjunction of `masks` (all must hold) into bounds and a residual. Bounds are taken
 * only before the first conjunct that reads an aux array: that one can fail on an index out of
 * range, so it and everything after it keep their order in the residual and are evaluated on
 * exactly the pairs they were evaluated on before.
 */
export function maskRange(masks: MaskNode[], nq: number, nk: number): MaskRange {
  const all = masks.flatMap((m) => conjuncts(m, []));
  const firstAux = all.findIndex(readsAux);
  const lower: LinearBound[] = [];
  const upper: LinearBound[] = [];
  const rest: MaskNode[] = [];
  all.forEach((n, k) => {
    const b = firstAux >= 0 && k >= firstAux ? undefined : bounds(n, nq, nk);
    if (!b) rest.push(n);
    if (b?.lower) lower.push(b.lower);
    if (b?.upper) upper.push(b.upper);
  });
  const residual = rest.reduce<MaskNode | undefined>(
    (acc, n) => (acc === undefined ? n : { k: 'bin', t: 'bool', op: '&&', l: acc, r: n, at: acc.at }),
    undefined,
  );
  return { lower, upper, residual };
}
