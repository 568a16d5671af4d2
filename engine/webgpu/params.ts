// The problem as the WGSL kernels see it: one uniform block of shape and mask parameters,
// plus a small storage array of per-head ALiBi slopes and sink logits. Every kernel
// (flash, subgroup-matrix, standard, decode) reads the same layout, so the modifier
// semantics live in one place on the GPU side just as engine/core/scores.ts does on the CPU side.

import { checkMaskSpec } from '../core/mask-spec.ts';
import { alibiSlopes, softmaxScale, type AttentionProblem } from '../core/problem.ts';
import { maskWgsl, type MaskWgsl } from './mask-wgsl.ts';

/** 20 words: kept a multiple of 16 bytes for uniform-buffer layout rules. */
export const PARAMS_WORDS = 20;

/** WGSL declaration matching packParams(). */
export const PARAMS_WGSL = /* wgsl */ `
struct Params {
  nq: u32, nk: u32, hq: u32, hk: u32,
  batch: u32, diag: i32, left: i32, right: i32,
  causal: u32, scale: f32, softcap: f32, flags: u32,
  splits: u32, split_len: u32, head0: u32, // head0: the dispatch's first (batch, query head) row
  lse0: u32, // where this dispatch's LSE starts in its binding (windows: bound from the 256-byte step below)
  head_group: u32, pad1: u32, pad2: u32, pad3: u32, // head_group: flash tiles' launch order (grid-order.ts)
}
const FLAG_ALIBI = 1u;
const FLAG_SINKS = 2u;
`;

export function packParams(
  p: AttentionProblem,
  extra: { splits?: number; splitLen?: number; head0?: number; lse0?: number; headGroup?: number } = {},
): ArrayBuffer {
  const buf = new ArrayBuffer(PARAMS_WORDS * 4);
  const u = new Uint32Array(buf);
  const i = new Int32Array(buf);
  const f = new Float32Array(buf);
  u[0] = p.nq;
  u[1] = p.nk;
  u[2] = p.hq;
  u[3] = p.hk;
  u[4] = p.batch;
  i[5] = p.nk - p.nq;
  i[6] = p.window?.left ?? -1;
  i[7] = p.window?.right ?? -1;
  u[8] = p.causal ? 1 : 0;
  f[9] = softmaxScale(p);
  f[10] = p.softcap ?? 0;
  u[11] = (p.alibi !== undefined ? 1 : 0) | (p.sinks !== undefined ? 2 : 0);
  u[12] = extra.splits ?? 1;
  u[13] = extra.splitLen ?? p.nk;
  u[14] = extra.head0 ?? 0;
  u[15] = extra.lse0 ?? 0;
  u[16] = extra.headGroup ?? 1;
  return buf;
}

/** [slopes (hq) | sinks (hq)], zeros where the problem has none. */
export function packAux(p: AttentionProblem): Float32Array {
  const a = new Float32Array(2 * p.hq);
  const slopes = alibiSlopes(p);
  if (slopes) a.set(slopes, 0);
  if (p.sinks) a.set(p.sinks, p.hq);
  return a;
}

/**
 * WGSL helpers shared by all kernels: NEG_INF, key_visible (causal/window masks aligned
 * bottom-right), sink_logit, and block_key_range (the keys any row of a block can see:
 * whole tiles outside it are skipped).
 */
const SCORE_HELPERS_WGSL = /* wgsl */ `
const NEG_INF = -3.4028234663852886e38; // stands in for -inf: exp(NEG_INF - finite) == 0

// A true -inf for LSE of fully masked rows; built at run time because a constant
// expression may not evaluate to infinity in WGSL (OR-ing the sign bit, which -inf has, with
// a uniform keeps the value the same and the expression a run-time one).
fn neg_inf_runtime() -> f32 { return bitcast<f32>(0xff800000u | (params.flags & 0x80000000u)); }

fn key_visible(i: u32, j: u32) -> bool {
  let rel = i32(j) - (i32(i) + params.diag);
  if (params.causal != 0u && rel > 0) { return false; }
  if (params.left >= 0 && rel < -params.left) { return false; }
  if (params.right >= 0 && rel > params.right) { return false; }
  return true;
}

// The (batch, key head) that (batch, query head) bh reads K and V from: GQA/MQA share one
// key head among hq / hk query heads.
fn kv_head(bh: u32) -> u32 {
  let h = bh % params.hq;
  return (bh / params.hq) * params.hk + h / (params.hq / params.hk);
}

fn sink_logit(h: u32) -> f32 {
  if ((params.flags & FLAG_SINKS) != 0u) { return aux[params.hq + h]; }
  return NEG_INF;
}

fn block_key_range(r0: u32, r1: u32) -> vec2<u32> {
  var lo = 0i;
  var hi = i32(params.nk);
  if (params.left >= 0) { lo = max(lo, i32(r0) + params.diag - params.left); }
  var right = -1;
  if (params.causal != 0u) { right = 0; }
  if (params.right >= 0) { right = select(params.right, min(right, params.right), right >= 0); }
  if (right >= 0) { hi = min(hi, i32(r1) - 1 + params.diag + right + 1); }
  lo = clamp(lo, 0, i32(params.nk));
  hi = clamp(hi, lo, i32(params.nk));
  return vec2<u32>(u32(lo), u32(hi));
}
`;

/** The user's mask_mod / score_mod calls for (h, i, j) of the invocation's mask_row. */
const USER_ARGS = 'mask_b(), i32(h), i32(i), i32(j)';

/** Declarations a kernel adds for a user mask: its functions (and aux binding). */
function userWgsl(u: MaskWgsl | undefined): string {
  return u ? `\n${u.code}` : '';
}

/**
 * The helpers plus `score_mod`, engine/core/scores.ts's modifyScore in WGSL with every modifier
 * tested at run time: the masks (masked logits become NEG_INF), then scale, softcap, ALiBi and
 * the user's score_mod (score_unmasked, which full tiles call alone). For kernels compiled without knowing the problem's
 * built-in modifiers (a user mask is compiled in).
 */
export function scoreModWgsl(user?: MaskWgsl): string {
  return /* wgsl */ `${SCORE_HELPERS_WGSL}${userWgsl(user)}
fn score_mod(h: u32, i: u32, j: u32, dot: f32) -> f32 {
  if (j >= params.nk || !key_visible(i, j)${user?.hasMask ? ` || !user_mask(${USER_ARGS})` : ''}) { return NEG_INF; }
  return score_unmasked(h, i, j, dot);
}

// score_mod on a key known to exist and be visible (a block list's full tile): no mask tests.
fn score_unmasked(h: u32, i: u32, j: u32, dot: f32) -> f32 {
  var s = dot * params.scale;
  if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
  if ((params.flags & FLAG_ALIBI) != 0u) {
    s -= aux[h] * f32(abs(i32(j) - (i32(i) + params.diag)));
  }${
    user?.hasScore
      ? `
  s = user_score(s, ${USER_ARGS});`
      : ''
  }
  return s;
}
`;
}

export const SCORE_WGSL = scoreModWgsl();

/**
 * Which score modifiers a problem uses, known when its kernel is compiled. Kernels built
 * from scoreWgsl() leave out the code of every modifier the problem does not use: per score
 * that is the difference between one multiply and a dozen tests of uniforms.
 */
export interface ScoreSpec {
  masked: boolean; // causal or sliding window
  softcap: boolean;
  alibi: boolean;
  /** The problem's mask_mod / score_mod, compiled from its tree (mask-wgsl.ts). */
  user?: MaskWgsl;
}

export function scoreSpec(p: AttentionProblem): ScoreSpec {
  const spec: ScoreSpec = { masked: p.causal || p.window !== undefined, softcap: (p.softcap ?? 0) > 0, alibi: p.alibi !== undefined };
  const user = userMaskWgsl(p);
  return user ? { ...spec, user } : spec;
}

/** The problem's mask as WGSL, or undefined when it has none. */
export function userMaskWgsl(p: AttentionProblem): MaskWgsl | undefined {
  if (p.mask === undefined) return undefined;
  const checked = checkMaskSpec(p.mask);
  return checked.maskAst || checked.scoreAst ? maskWgsl(checked) : undefined;
}

/**
 * The helpers plus two score functions specialised to the problem's modifiers:
 *   score_full(h, i, j, dot): for tiles where tile_visible() holds (every key exists and
 *     every (row, key) pair is visible): scale, softcap, ALiBi — no mask tests at all;
 *   score_edge(h, i, j, dot): any tile: the mask tests of score_mod, then the same.
 * Both give exactly score_mod's value; only the work differs.
 */
export function scoreWgsl(s: ScoreSpec): string {
  const mods = [
    'var s = dot * params.scale;',
    s.softcap ? 's = params.softcap * tanh(s / params.softcap);' : '',
    s.alibi ? 's -= aux[h] * f32(abs(i32(j) - (i32(i) + params.diag)));' : '',
    s.user?.hasScore ? `s = user_score(s, ${USER_ARGS});` : '',
    'return s;',
  ]
    .filter(Boolean)
    .join('\n  ');
  const userMask = s.user?.hasMask === true;
  return /* wgsl */ `${SCORE_HELPERS_WGSL}${userWgsl(s.user)}
fn score_full(h: u32, i: u32, j: u32, dot: f32) -> f32 {
  ${mods}
}

fn score_edge(h: u32, i: u32, j: u32, dot: f32) -> f32 {
  if (j >= params.nk${s.masked ? ' || !key_visible(i, j)' : ''}${userMask ? ` || !user_mask(${USER_ARGS})` : ''}) { return NEG_INF; }
  ${mods}
}

// Rows [r0, r1) against keys [j0, j1): true when every key exists and no pair is masked.
fn tile_visible(r0: u32, r1: u32, j0: u32, j1: u32) -> bool {
  if (j1 > params.nk${userMask ? ' || true' : ''}) { return false; } // a user mask is tested on every score (its block mask says otherwise)
${
  s.masked
    ? `  // The most constrained pairs: the first row's last key (causal / right edge) and
  // the last row's first key (left edge).
  let far = i32(j1) - 1 - (i32(r0) + params.diag);
  let near = i32(j0) - (i32(r1) - 1 + params.diag);
  if (params.causal != 0u && far > 0) { return false; }
  if (params.right >= 0 && far > params.right) { return false; }
  if (params.left >= 0 && near < -params.left) { return false; }`
    : ''
}
  return true;
}
`;
}
