// Flash-decoding for Nq = 1 (and other short query blocks): with one query row per head
// the flash kernel would launch only B·H workgroups — far too few to fill a GPU — so the
// keys are split into `splits` chunks, each workgroup produces a partial O and LSE for its
// chunk, and a second kernel combines the partials with their LSEs:
//   M = max_s lse_s,  L = Σ_s exp(lse_s − M) (+ exp(sink − M)),  O = Σ_s exp(lse_s − M)·O_s / L.
//
// Split kernel: NT threads; scores of NT keys at a time (one key per thread), reduced over
// the whole workgroup through workgroup memory (not a subgroup: a chunk of keys wider than
// a subgroup must still be reduced in full), then threads switch to head-dim columns for
// P·V. Workgroup memory: q row (d) + p (NT) + reduction (NT) floats.

import { PARAMS_WGSL, SCORE_WGSL } from './params.ts';

export const DECODE_THREADS = 128;

export function decodeSplitKernelWgsl(d: number, dv: number): string {
  const NT = DECODE_THREADS;
  const COLS = Math.ceil(dv / NT);
  return /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> opart: array<f32>;   // [bh][split][row][dv]
@group(0) @binding(5) var<storage, read_write> lpart: array<f32>;   // [bh][split][row]
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}
const D = ${d}u; const DV = ${dv}u; const NT = ${NT}u;
var<workgroup> qs: array<f32, ${d}>;
var<workgroup> ps: array<f32, ${NT}>;
var<workgroup> red: array<f32, ${NT}>;

fn reduce(lid: u32, x: f32, is_max: bool) -> f32 {
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

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let split = wid.x; let bh = wid.y;
  let h = bh % params.hq;
  let bhk = kv_head(bh);
  let k_lo = split * params.split_len;
  let k_hi = min(params.nk, k_lo + params.split_len);
  for (var row = 0u; row < params.nq; row++) {
    workgroupBarrier();
    for (var c = lid; c < D; c += NT) { qs[c] = q[(bh * params.nq + row) * D + c]; }
    workgroupBarrier();
    let kr = block_key_range(row, row + 1u);
    let lo = max(k_lo, kr.x); let hi = min(k_hi, kr.y);
    var m = NEG_INF; var l = 0.0;
    var acc: array<f32, ${COLS}>; // zeroed per row: the loop below fills it
    for (var t = 0u; t < ${COLS}u; t++) { acc[t] = 0.0; }
    for (var j0 = lo; j0 < hi; j0 += NT) {
      let j = j0 + lid;
      var sc = NEG_INF;
      if (j < hi) {
        var dot = 0.0;
        let kb = (bhk * params.nk + j) * D;
        for (var c = 0u; c < D; c++) { dot += qs[c] * k[kb + c]; }
        sc = score_mod(h, row, j, dot);
      }
      let mn = max(m, reduce(lid, sc, true));
      let alpha = exp(m - mn);
      var p = 0.0;
      if (sc > NEG_INF) { p = exp(sc - mn); }
      ps[lid] = p;
      l = l * alpha + reduce(lid, p, false);   // the barrier inside also publishes ps
      m = mn;
      let n = min(NT, hi - j0);
      for (var t = 0u; t < ${COLS}u; t++) {
        let c = lid + t * NT;
        if (c < DV) {
          var x = acc[t] * alpha;
          for (var jj = 0u; jj < n; jj++) { x += ps[jj] * v[(bhk * params.nk + j0 + jj) * DV + c]; }
          acc[t] = x;
        }
      }
    }
    let part = (bh * params.splits + split) * params.nq + row;
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var t = 0u; t < ${COLS}u; t++) {
      let c = lid + t * NT;
      if (c < DV) { opart[part * DV + c] = acc[t] * inv; }
    }
    if (lid == 0u) { lpart[part] = select(NEG_INF, m + log(l), l > 0.0); }
  }
}
`;
}

export function decodeCombineKernelWgsl(d: number, dv: number): string {
  return /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> opart: array<f32>;
@group(0) @binding(2) var<storage, read> lpart: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}
const DV = ${dv}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x; let bh = wid.y;
  let h = bh % params.hq;
  let sink = sink_logit(h);
  var mx = sink;
  for (var s = 0u; s < params.splits; s++) { mx = max(mx, lpart[(bh * params.splits + s) * params.nq + row]); }
  var l = 0.0;
  if (sink > NEG_INF) { l = exp(sink - mx); }
  for (var s = 0u; s < params.splits; s++) {
    let x = lpart[(bh * params.splits + s) * params.nq + row];
    if (x > NEG_INF) { l += exp(x - mx); }
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var c = lid; c < DV; c += 64u) {
    var acc = 0.0;
    for (var s = 0u; s < params.splits; s++) {
      let part = (bh * params.splits + s) * params.nq + row;
      let x = lpart[part];
      if (x > NEG_INF) { acc += exp(x - mx) * opart[part * DV + c]; }
    }
    o[(bh * params.nq + row) * DV + c] = acc * inv;
  }
  if (lid == 0u) { lse[bh * params.nq + row] = select(neg_inf_runtime(), mx + log(l), l > 0.0); }
}
`;
}
