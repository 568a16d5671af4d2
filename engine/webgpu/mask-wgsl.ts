// A checked mask_mod / score_mod tree (engine/core/mask-language.ts) emitted as WGSL functions.
// Only the tree is read: every name, operator and function becomes a fixed WGSL spelling
// chosen here, numbers are re-printed from their values, and aux arrays become offsets into
// one storage buffer — no text a person typed reaches the shader.
//
//   fn user_mask(b: i32, h: i32, q_idx: i32, kv_idx: i32) -> bool
//   fn user_score(score: f32, b: i32, h: i32, q_idx: i32, kv_idx: i32) -> f32
//
// int nodes are i32, num nodes f32, bool nodes bool. Integer `floor(a / b)` is emitted as an
// integer floor division (exact where f32 division of large indices is not).

import type { CheckedMask } from '../core/mask-spec.ts';
import type { MaskNode } from '../core/mask-language.ts';

/** What a kernel needs to run a checked mask: its WGSL and the aux words to bind. */
export interface MaskWgsl {
  /** The helper functions, user_mask and/or user_score; reads `mask_aux` and `mask_row`. */
  code: string;
  hasMask: boolean;
  hasScore: boolean;
  /** The functions read `mask_aux` (binding 8): only then is it declared and bound. */
  readsAux: boolean;
  /** Aux arrays packed as 32-bit words: i32 for whole-number arrays, f32 bits for the others. */
  auxWords: Uint32Array;
}

/** The binding of the aux words in the forward kernels. */
export const MASK_AUX_BINDING = 8;
const MASK_AUX_BINDING_WGSL = `@group(0) @binding(${MASK_AUX_BINDING}) var<storage, read> mask_aux: array<u32>;`;

/** Largest magnitude an f32 literal may have. */
const F32_MAX = 3.4028234663852886e38;

export class MaskWgslError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MaskWgslError';
  }
}

interface AuxSlot {
  offset: number;
  length: number;
  int: boolean;
}

function f32Literal(v: number): string {
  if (!Number.isFinite(v) || Math.abs(v) > F32_MAX) throw new MaskWgslError(`the number ${v} does not fit the GPU's 32-bit floats`);
  const s = Math.fround(v).toExponential();
  return `f32(${s})`;
}

function intLiteral(v: number): string {
  return v < 0 ? `(${v}i)` : `${v}i`;
}

class Emitter {
  readsAux = false;
  constructor(readonly slots: ReadonlyMap<string, AuxSlot>) {}

  /** The node as an f32 expression (int nodes converted). */
  asF32(n: MaskNode): string {
    const e = this.expr(n);
    return n.t === 'int' ? `f32(${e})` : e;
  }

  /** The node in its own type. */
  expr(n: MaskNode): string {
    switch (n.k) {
      case 'lit':
        if (n.t === 'bool') return n.v ? 'true' : 'false';
        return n.t === 'int' ? intLiteral(Number(n.v)) : f32Literal(Number(n.v));
      case 'var':
        switch (n.name) {
          case 'b':
            return 'b';
          case 'h':
            return 'h';
          case 'q_idx':
            return 'q_idx';
          case 'kv_idx':
            return 'kv_idx';
          case 'nq':
            return 'i32(params.nq)';
          case 'nk':
            return 'i32(params.nk)';
          case 'score':
            return 'score';
        }
        break;
      case 'aux': {
        const slot = this.slots.get(n.name);
        if (!slot) throw new MaskWgslError(`aux array '${n.name}' was not given`);
        this.readsAux = true;
        // Reads outside the array are clamped to its ends (a kernel cannot throw).
        const word = `mask_aux[${slot.offset}u + u32(clamp(${this.expr(n.index)}, 0i, ${slot.length - 1}i))]`;
        return slot.int ? `bitcast<i32>(${word})` : `bitcast<f32>(${word})`;
      }
      case 'call':
        return this.call(n);
      case 'unary':
        return n.op === '!' ? `!(${this.expr(n.arg)})` : `-(${this.expr(n.arg)})`;
      case 'bin':
        return this.bin(n);
      case 'cond':
        return this.select(n.t, n.test, n.yes, n.no);
    }
    throw new MaskWgslError('internal: a node the emitter does not know');
  }

  private typed(t: MaskNode['t'], n: MaskNode): string {
    return t === 'num' ? this.asF32(n) : this.expr(n);
  }

  private select(t: MaskNode['t'], test: MaskNode, yes: MaskNode, no: MaskNode): string {
    return `select(${this.typed(t, no)}, ${this.typed(t, yes)}, ${this.expr(test)})`;
  }

  private call(n: Extract<MaskNode, { k: 'call' }>): string {
    const [a, b, c] = n.args;
    switch (n.fn) {
      case 'where':
        return this.select(n.t, a, b, c);
      case 'min':
      case 'max':
        return `${n.fn}(${this.typed(n.t, a)}, ${this.typed(n.t, b)})`;
      case 'abs':
        return `abs(${this.expr(a)})`;
      case 'clamp':
        // min(max(x, lo), hi), as the CPU evaluates it (WGSL's clamp is undefined for lo > hi).
        return `min(max(${this.typed(n.t, a)}, ${this.typed(n.t, b)}), ${this.typed(n.t, c)})`;
      case 'floor':
      case 'ceil': {
        if (a.t === 'int') return this.expr(a);
        if (a.k === 'bin' && a.op === '/' && a.l.t === 'int' && a.r.t === 'int') {
          return `mask_${n.fn}_div(${this.expr(a.l)}, ${this.expr(a.r)})`;
        }
        return `i32(${n.fn}(${this.expr(a)}))`;
      }
      case 'sqrt':
      case 'tanh':
      case 'exp':
      case 'log':
        return `${n.fn}(${this.asF32(a)})`;
    }
  }

  private bin(n: Extract<MaskNode, { k: 'bin' }>): string {
    const { l, r, op } = n;
    if (op === '&&' || op === '||') return `(${this.expr(l)} ${op} ${this.expr(r)})`;
    if (l.t === 'bool') return `(${this.expr(l)} ${op} ${this.expr(r)})`;
    // Comparisons and arithmetic: i32 when both sides are whole numbers (and not '/'), else f32.
    const ints = l.t === 'int' && r.t === 'int' && op !== '/';
    const L = ints ? this.expr(l) : this.asF32(l);
    const R = ints ? this.expr(r) : this.asF32(r);
    if (op === '%' && ints) return `mask_rem(${L}, ${R})`;
    if (op === '%') return `mask_frem(${L}, ${R})`;
    return `(${L} ${op} ${R})`;
  }
}

// Integer helpers with the CPU's meaning: floor/ceil of an exact quotient, a remainder with the
// dividend's sign, and x % 0 / x / 0 never trapping (the CPU's NaN compares false; here 0 keeps
// comparisons defined — masks that divide by zero are a user error either way).
const MASK_HELPERS_WGSL = /* wgsl */ `
fn mask_floor_div(a: i32, b: i32) -> i32 {
  if (b == 0i) { return 0i; }
  let q = a / b;
  return select(q, q - 1i, (a % b != 0i) && ((a < 0i) != (b < 0i)));
}
fn mask_ceil_div(a: i32, b: i32) -> i32 {
  if (b == 0i) { return 0i; }
  let q = a / b;
  return select(q, q + 1i, (a % b != 0i) && ((a < 0i) == (b < 0i)));
}
fn mask_rem(a: i32, b: i32) -> i32 { return select(a % b, 0i, b == 0i); }
fn mask_frem(a: f32, b: f32) -> f32 { return a - b * trunc(a / b); }
// (batch, query head) row of the invocation, set by the kernel before any score.
var<private> mask_row: u32;
fn mask_b() -> i32 { return i32(mask_row / params.hq); }
`;

/**
 * The WGSL of a checked mask, with its aux arrays packed in name order. Kernels bind
 * `mask_aux` (at least one word) and set `mask_row = bh + params.head0` before scoring.
 */
export function maskWgsl(m: CheckedMask): MaskWgsl {
  const slots = new Map<string, AuxSlot>();
  const words: number[] = [];
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (const name of [...m.aux.keys()].sort()) {
    const values = m.aux.get(name)!;
    const int = m.auxTypes.get(name) === 'int';
    slots.set(name, { offset: words.length, length: Math.max(1, values.length), int });
    for (const v of values) {
      if (int) words.push(v >>> 0);
      else {
        f[0] = v;
        words.push(u[0]);
      }
    }
    if (values.length === 0) words.push(0);
  }
  if (words.length === 0) words.push(0);
  const em = new Emitter(slots);
  const parts = [MASK_HELPERS_WGSL];
  if (m.maskAst) {
    parts.push(`fn user_mask(b: i32, h: i32, q_idx: i32, kv_idx: i32) -> bool {\n  return ${em.expr(m.maskAst)};\n}`);
  }
  if (m.scoreAst) {
    parts.push(`fn user_score(score: f32, b: i32, h: i32, q_idx: i32, kv_idx: i32) -> f32 {\n  return ${em.asF32(m.scoreAst)};\n}`);
  }
  if (em.readsAux) parts.unshift(MASK_AUX_BINDING_WGSL);
  return {
    code: parts.join('\n'),
    hasMask: m.maskAst !== undefined,
    hasScore: m.scoreAst !== undefined,
    readsAux: em.readsAux,
    auxWords: Uint32Array.from(words),
  };
}

/** The binding declaration of the aux words (binding 8 of the forward kernels). */
