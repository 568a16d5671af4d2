// Flash-decoding for Nq = 1 (and other short query blocks): with one query row per head
// the flash kernel would launch only B·H workgroups — far too few to fill a GPU — so the
// keys are split into `splits` chunks, each workgroup produces a partial O and LSE for its
// chunk, and a second kernel combines the partials with their LSEs:
//   M = max_s lse_s,  L = Σ_s exp(lse_s − M) (+ exp(sink − M)),  O = Σ_s exp(lse_s − M)·O_s / L.
//
// Split kernel (a bandwidth-bound pass: K and V are read once, and each byte meets one or two
// FMAs). NT threads per split of at most SPLIT_MAX keys, in three phases per query row:
//   1. partial dot products, four lanes per key: each lane reads every fourth 16-byte column
//      group of the key's row, so a warp's load covers 64 contiguous bytes of each of 8 rows
//      (whole 32-byte sectors), and every lane keeps D/16 loads in flight;
//   2. one lane per key sums its four partials, applies the score modifiers, and the
//      workgroup reduces the split's max, then its sum of exp(s − max): two reductions per
//      split, not per key tile — the split's scores stay in workgroup memory;
//   3. P·V with 16-byte columns: DV/4 lanes cover one V row (a coalesced read), NT/(DV/4)
//      key groups run side by side, four keys per group in flight, and the groups' partial
//      sums meet in workgroup memory.
// Q, K and V are f16 in u32 words (unpack2x16float: core WGSL, no shader-f16), as the group
// kernel reads them (decode-group-kernel.ts); the arithmetic is f32.
// Workgroup memory: q row (D floats), partial dots (4·SPLIT_MAX), scores (SPLIT_MAX),
// reduction (NT): 21 KiB for d ≤ 128.

import { PARAMS_WGSL, SCORE_WGSL } from './params.ts';

/** A workgroup's sum or max of one f32 per lane, through `red` (NT floats, NT a power of two): both decode kernels use it. */
export const WORKGROUP_REDUCE_WGSL = /* wgsl */ `fn reduce(lid: u32, x: f32, is_max: bool) -> f32 {
  red[lid] = x;
  workgroupBarrier();
  for (var off = NT / 2u; off > 0u; off >>= 1u) {
    if (lid < off) { red[lid] = select(red[lid] + red[lid + off], max(red[lid], red[lid + off]), is_max); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
`;

export const DECODE_THREADS = 128;
/** Keys per split at most (the split's scores live in workgroup memory). */
export const DECODE_SPLIT_MAX = 1024;

/** WGSL for element i of an f16 tensor stored as u32 words. */
const halfAt = (buf: string, i: string) => `unpack2x16float(${buf}[(${i}) >> 1u])[(${i}) & 1u]`;

export function decodeSplitKernelWgsl(d: number, dv: number): string {
  const NT = DECODE_THREADS;
  const SMAX = DECODE_SPLIT_MAX;
  const D4 = Math.ceil(d / 4);
  const DV4 = Math.ceil(dv / 4);
  // Column slots per lane (heads wider than 4·NT) and key groups side by side in phase 3.
  const COLT = Math.ceil(DV4 / NT);
  const KG = COLT > 1 ? 1 : Math.floor(NT / DV4);
  const QPK = Math.ceil(D4 / 4); // column groups per lane in phase 1
  // Rows of K and V as 4-column groups (8 bytes: a vec2<u32> of f16 pairs); head dims that are
  // not multiples of 4 read element by element from u32 words.
  const load4 = (buf: string, width: number, row: string, c4: string) =>
    width % 4 === 0
      ? `unpack4(${buf}w[${row} * ${width / 4}u + ${c4}])`
      : `vec4<f32>(${[0, 1, 2, 3].map((e) => `select(0.0, ${halfAt(buf, `${row} * ${width}u + min(${c4} * 4u + ${e}u, ${width - 1}u)`)}, ${c4} * 4u + ${e}u < ${width}u)`).join(', ')})`;
  return /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> ${d % 4 === 0 ? 'kw: array<vec2<u32>>' : 'k: array<u32>'};
@group(0) @binding(3) var<storage, read> ${dv % 4 === 0 ? 'vw: array<vec2<u32>>' : 'v: array<u32>'};
@group(0) @binding(4) var<storage, read_write> opart: array<f32>;   // [bh][split][row][dv]
@group(0) @binding(5) var<storage, read_write> lpart: array<f32>;   // [bh][split][row]
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}
const D = ${d}u; const DV = ${dv}u; const NT = ${NT}u; const D4 = ${D4}u; const DV4 = ${DV4}u; const KG = ${KG}u;
var<workgroup> qs: array<vec4<f32>, ${D4}>;     // the query row, zeros past D
var<workgroup> part: array<vec4<f32>, ${SMAX}>; // phase 1: a key's four partial dots; phase 3: the key groups' sums
var<workgroup> sc: array<f32, ${SMAX}>;         // the split's scores, then P
var<workgroup> red: array<f32, ${NT}>;

fn unpack4(w: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }

${WORKGROUP_REDUCE_WGSL}
@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let split = wid.x; let bh = wid.y;
  let h = (bh + params.head0) % params.hq; // bh counts from the window's first row, params.head0
  let kbase = kv_head(bh) * params.nk;
  let k_lo = split * params.split_len;
  let k_hi = min(params.nk, k_lo + params.split_len);
  for (var row = 0u; row < params.nq; row++) {
    workgroupBarrier();
    for (var c4 = lid; c4 < D4; c4 += NT) {
      let qb = (bh * params.nq + row) * D + c4 * 4u;
      // past D the reads may run off the buffer; WebGPU keeps them in bounds, and select drops them
      qs[c4] = vec4<f32>(${[0, 1, 2, 3].map((e) => `select(0.0, ${halfAt('q', `qb + ${e}u`)}, c4 * 4u + ${e}u < D)`).join(', ')});
    }
    workgroupBarrier();
    let kr = block_key_range(row, row + 1u);
    let lo = max(k_lo, kr.x);
    let n = select(0u, min(k_hi, kr.y) - lo, min(k_hi, kr.y) > lo);
    // 1. partial dots: key (lid / 4) of each pass of NT / 4 keys, column groups ≡ lid (mod 4)
    let quarter = lid % 4u;
    for (var j = lid / 4u; j < n; j += NT / 4u) {
      let kr_ = kbase + lo + j;
      var acc = vec4<f32>(0.0);
      ${Array.from({ length: QPK }, (_, t) => {
        const c4 = `(quarter + ${4 * t}u)`;
        const body = `acc += ${load4('k', d, 'kr_', c4)} * qs[${c4}];`;
        return 4 * (t + 1) <= D4 ? body : `if (${c4} < D4) { ${body} }`;
      }).join('\n      ')}
      part[j][quarter] = acc.x + acc.y + acc.z + acc.w;
    }
    workgroupBarrier();
    // 2. scores, the split's max and sum
    var mloc = NEG_INF;
    for (var j = lid; j < n; j += NT) {
      let p4 = part[j];
      let s = score_mod(h, row, lo + j, p4.x + p4.y + p4.z + p4.w);
      sc[j] = s;
      mloc = max(mloc, s);
    }
    let m = reduce(lid, mloc, true);
    var lloc = 0.0;
    for (var j = lid; j < n; j += NT) {
      let p = select(0.0, exp(sc[j] - m), sc[j] > NEG_INF);
      sc[j] = p;
      lloc += p;
    }
    let l = reduce(lid, lloc, false); // its barriers also publish sc
    // 3. P·V: lane (g, c4) sums keys g, g + KG, … of column group c4, four loads in flight
    let g = lid / DV4;
    let inv = select(0.0, 1.0 / l, l > 0.0);
    let out = (bh * params.splits + split) * params.nq + row;
    for (var t = 0u; t < ${COLT}u; t++) {
      let c4 = select(lid % DV4, lid + t * NT, ${COLT}u > 1u);
      var o = vec4<f32>(0.0);
      if (g < KG && c4 < DV4) {
        let vb = kbase + lo;
        var j = g;
        for (; j + 3u * KG < n; j += 4u * KG) {
          let v0 = ${load4('v', dv, '(vb + j)', 'c4')};
          let v1 = ${load4('v', dv, '(vb + j + KG)', 'c4')};
          let v2 = ${load4('v', dv, '(vb + j + 2u * KG)', 'c4')};
          let v3 = ${load4('v', dv, '(vb + j + 3u * KG)', 'c4')};
          o += sc[j] * v0 + sc[j + KG] * v1 + sc[j + 2u * KG] * v2 + sc[j + 3u * KG] * v3;
        }
        for (; j < n; j += KG) { o += sc[j] * ${load4('v', dv, '(vb + j)', 'c4')}; }
      }
      workgroupBarrier(); // part's phase-1 reads are done (and the previous slot's sums)
      if (g < KG && c4 < DV4) { part[g * DV4 + lid % DV4] = o; }
      workgroupBarrier();
      if (lid < DV4 && c4 < DV4) {
        var sum = vec4<f32>(0.0);
        for (var gg = 0u; gg < KG; gg++) { sum += part[gg * DV4 + lid]; }
        let c = c4 * 4u;
        ${[0, 1, 2, 3].map((e) => `if (c + ${e}u < DV) { opart[out * DV + c + ${e}u] = sum[${e}] * inv; }`).join('\n        ')}
      }
    }
    if (lid == 0u) { lpart[out] = select(NEG_INF, m + log(l), l > 0.0); }
  }
}
`;
}

/** Lanes of the combine: one output column each (dv ≤ 128), the splits' max and sum shared among them. */
export const COMBINE_THREADS = 128;

/**
 * The LSE combine's body, one workgroup per output row. Its loops over the splits are latency
 * chains of L2 loads, so the lanes split the max and sum between them and each column's weighted
 * sum keeps four splits' loads in flight. The caller's prologue defines `sink` (a logit or
 * NEG_INF), `ns` (splits), `base` and `step` (split s's partial row: base + s · step), `orow`
 * (the output row) and `lse_at` (its LSE slot); `red` is the caller's workgroup array of
 * COMBINE_THREADS floats.
 */
export function lseCombineBodyWgsl(dv: number): string {
  const CT = COMBINE_THREADS;
  const reduce = (op: string) => `for (var off = ${CT / 2}u; off > 0u; off >>= 1u) {
    if (lid < off) { red[lid] = ${op}; }
    workgroupBarrier();
  }`;
  return /* wgsl */ `
  var mx = sink;
  for (var s = lid; s < ns; s += ${CT}u) { mx = max(mx, lpart[base + s * step]); }
  red[lid] = mx;
  workgroupBarrier();
  ${reduce('max(red[lid], red[lid + off])')}
  mx = red[0];
  workgroupBarrier();
  var l = 0.0;
  for (var s = lid; s < ns; s += ${CT}u) {
    let x = lpart[base + s * step];
    if (x > NEG_INF) { l += exp(x - mx); }
  }
  red[lid] = l;
  workgroupBarrier();
  ${reduce('red[lid] + red[lid + off]')}
  l = red[0];
  if (sink > NEG_INF) { l += exp(sink - mx); }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var c = lid; c < ${dv}u; c += ${CT}u) {
    var acc = vec4<f32>(0.0);
    var s = 0u;
    for (; s + 4u <= ns; s += 4u) {
      let p = base + s * step;
      let x = vec4<f32>(lpart[p], lpart[p + step], lpart[p + 2u * step], lpart[p + 3u * step]);
      let v = vec4<f32>(opart[p * ${dv}u + c], opart[(p + step) * ${dv}u + c], opart[(p + 2u * step) * ${dv}u + c], opart[(p + 3u * step) * ${dv}u + c]);
      acc += select(vec4<f32>(0.0), exp(x - mx) * v, x > vec4<f32>(NEG_INF));
    }
    for (; s < ns; s++) {
      let p = base + s * step;
      let x = lpart[p];
      if (x > NEG_INF) { acc.x += exp(x - mx) * opart[p * ${dv}u + c]; }
    }
    o[orow * ${dv}u + c] = (acc.x + acc.y + acc.z + acc.w) * inv;
  }
  if (lid == 0u) { lse[lse_at] = select(neg_inf_runtime(), mx + log(l), l > 0.0); }`;
}

/** The LSE combine of dense decoding, one workgroup per (row, head): partials [bh][split][row]. */
export function decodeCombineKernelWgsl(dv: number): string {
  return /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> opart: array<f32>;
@group(0) @binding(2) var<storage, read> lpart: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}
var<workgroup> red: array<f32, ${COMBINE_THREADS}>;

@compute @workgroup_size(${COMBINE_THREADS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x; let bh = wid.y;
  let h = (bh + params.head0) % params.hq; // bh counts from the window's first row, params.head0
  let sink = sink_logit(h);
  let ns = params.splits;
  let base = bh * ns * params.nq + row;
  let step = params.nq;
  let orow = bh * params.nq + row;
  let lse_at = params.lse0 + orow;
${lseCombineBodyWgsl(dv)}
}
`;
}
