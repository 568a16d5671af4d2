// A checked MaskNode compiled into a tree of closures: no text is ever evaluated, only the
// whitelisted node kinds below, each a small JavaScript function over the index variables.

import type { MaskNode } from './mask-language.ts';

/** The values a mask reads: one query/key pair of one (batch, head), and the score for score_mod. */
export interface MaskEnv {
  b: number;
  h: number;
  q: number;
  kv: number;
  score: number;
}

type Num = (e: MaskEnv) => number;
type Bool = (e: MaskEnv) => boolean;

/** Thrown when an aux array is read outside its entries. */
export class MaskRangeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MaskRangeError';
  }
}

export interface MaskBindings {
  nq: number;
  nk: number;
  aux: ReadonlyMap<string, ArrayLike<number>>;
}

function num(n: MaskNode, x: MaskBindings): Num {
  switch (n.k) {
    case 'lit': {
      const v = Number(n.v);
      return () => v;
    }
    case 'var':
      switch (n.name) {
        case 'b':
          return (e) => e.b;
        case 'h':
          return (e) => e.h;
        case 'q_idx':
          return (e) => e.q;
        case 'kv_idx':
          return (e) => e.kv;
        case 'score':
          return (e) => e.score;
        case 'nq': {
          const v = x.nq;
          return () => v;
        }
        case 'nk': {
          const v = x.nk;
          return () => v;
        }
      }
      break;
    case 'aux': {
      const arr = x.aux.get(n.name);
      if (arr === undefined) throw new MaskRangeError(`aux array '${n.name}' was not given`);
      const index = num(n.index, x);
      const name = n.name;
      return (e) => {
        const i = index(e);
        if (!(i >= 0 && i < arr.length)) throw new MaskRangeError(`${name}[${i}] is outside ${name}'s ${arr.length} entries`);
        return arr[i];
      };
    }
    case 'call': {
      const [a, b, c] = n.args.map((arg) => (arg.t === 'bool' ? undefined : num(arg, x)));
      switch (n.fn) {
        case 'min':
          return (e) => Math.min(a!(e), b!(e));
        case 'max':
          return (e) => Math.max(a!(e), b!(e));
        case 'abs':
          return (e) => Math.abs(a!(e));
        case 'floor':
          return (e) => Math.floor(a!(e));
        case 'ceil':
          return (e) => Math.ceil(a!(e));
        case 'sqrt':
          return (e) => Math.sqrt(a!(e));
        case 'tanh':
          return (e) => Math.tanh(a!(e));
        case 'exp':
          return (e) => Math.exp(a!(e));
        case 'log':
          return (e) => Math.log(a!(e));
        case 'clamp':
          return (e) => Math.min(Math.max(a!(e), b!(e)), c!(e));
        case 'where': {
          const test = bool(n.args[0], x);
          return (e) => (test(e) ? b!(e) : c!(e));
        }
      }
      break;
    }
    case 'unary': {
      const a = num(n.arg, x);
      return (e) => -a(e);
    }
    case 'bin': {
      const l = num(n.l, x);
      const r = num(n.r, x);
      switch (n.op) {
        case '+':
          return (e) => l(e) + r(e);
        case '-':
          return (e) => l(e) - r(e);
        case '*':
          return (e) => l(e) * r(e);
        case '/':
          return (e) => l(e) / r(e);
        case '%':
          return (e) => l(e) % r(e);
      }
      break;
    }
    case 'cond': {
      const test = bool(n.test, x);
      const a = num(n.yes, x);
      const b = num(n.no, x);
      return (e) => (test(e) ? a(e) : b(e));
    }
  }
  throw new Error(`internal: ${n.k} node of type ${n.t} is not numeric`);
}

function bool(n: MaskNode, x: MaskBindings): Bool {
  switch (n.k) {
    case 'lit': {
      const v = n.v === true;
      return () => v;
    }
    case 'unary': {
      const a = bool(n.arg, x);
      return (e) => !a(e);
    }
    case 'bin': {
      if (n.op === '&&' || n.op === '||') {
        const l = bool(n.l, x);
        const r = bool(n.r, x);
        return n.op === '&&' ? (e) => l(e) && r(e) : (e) => l(e) || r(e);
      }
      if ((n.op === '==' || n.op === '!=') && n.l.t === 'bool') {
        const l = bool(n.l, x);
        const r = bool(n.r, x);
        return n.op === '==' ? (e) => l(e) === r(e) : (e) => l(e) !== r(e);
      }
      const l = num(n.l, x);
      const r = num(n.r, x);
      switch (n.op) {
        case '<':
          return (e) => l(e) < r(e);
        case '<=':
          return (e) => l(e) <= r(e);
        case '>':
          return (e) => l(e) > r(e);
        case '>=':
          return (e) => l(e) >= r(e);
        case '==':
          return (e) => l(e) === r(e);
        case '!=':
          return (e) => l(e) !== r(e);
      }
      break;
    }
    case 'cond':
    case 'call': {
      const test = bool(n.k === 'cond' ? n.test : n.args[0], x);
      const a = bool(n.k === 'cond' ? n.yes : n.args[1], x);
      const b = bool(n.k === 'cond' ? n.no : n.args[2], x);
      return (e) => (test(e) ? a(e) : b(e));
    }
  }
  throw new Error(`internal: ${n.k} node of type ${n.t} is not true/false`);
}

/** A mask_mod as a function: true keeps the pair. */
export function compileMaskMod(n: MaskNode, x: MaskBindings): (b: number, h: number, q: number, kv: number) => boolean {
  const f = bool(n, x);
  const env: MaskEnv = { b: 0, h: 0, q: 0, kv: 0, score: 0 };
  return (b, h, q, kv) => {
    env.b = b;
    env.h = h;
    env.q = q;
    env.kv = kv;
    return f(env);
  };
}

/** A score_mod as a function of the scaled score. */
export function compileScoreMod(n: MaskNode, x: MaskBindings): (b: number, h: number, q: number, kv: number, score: number) => number {
  const f = num(n, x);
  const env: MaskEnv = { b: 0, h: 0, q: 0, kv: 0, score: 0 };
  return (b, h, q, kv, score) => {
    env.b = b;
    env.h = h;
    env.q = q;
    env.kv = kv;
    env.score = score;
    return f(env);
  };
}
