// Standard attention on WebGPU, the baseline the flash kernels are measured against:
// S = mod(Q K^T) is written to GPU memory, a row softmax turns it into P in place (and
// writes LSE), and O = P V reads it back. Three kernels, N×N floats of traffic per head
// each way: the memory cost FlashAttention removes. Heads are processed in groups whose
// S fits one storage binding; when even one head's S does not fit, the host refuses.
//
// The two matmuls share the register tiling of flash-kernel.ts: 64×64 output tiles,
// 16×16 threads each owning 4×4 outputs, operands staged through workgroup memory
// transposed in chunks of 16 (2 × 16·64·4 B = 8 KiB of workgroup memory).

import { PARAMS_WGSL, SCORE_WGSL } from './params.ts';

const HEADER = (d: number, dv: number) => /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}
const D = ${d}u; const DV = ${dv}u;
`;

/** S[g][i][j] = score_mod(q_i · k_j) for the head group starting at params.head0. */
export function scoresKernelWgsl(d: number, dv: number): string {
  return /* wgsl */ `
${HEADER(d, dv)}
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read_write> s: array<f32>;
var<workgroup> at: array<vec4<f32>, 256>; // QsT[16][64]
var<workgroup> bt: array<vec4<f32>, 256>; // KsT[16][64]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 16u; let ty = lid / 16u;
  let row0 = wid.y * 64u; let col0 = wid.x * 64u;
  let g = wid.z;                                  // head within the group
  let bh = params.head0 + g;
  let h = bh % params.hq;
  let bhk = kv_head(bh);
  var acc: array<vec4<f32>, 4>;
  for (var k0 = 0u; k0 < D; k0 += 16u) {
    workgroupBarrier();
    for (var idx = lid; idx < 1024u; idx += 256u) {
      let r = idx / 16u; let kk = idx % 16u;
      var x = 0.0; var y = 0.0;
      if (row0 + r < params.nq && k0 + kk < D) { x = q[(bh * params.nq + row0 + r) * D + k0 + kk]; }
      if (col0 + r < params.nk && k0 + kk < D) { y = k[(bhk * params.nk + col0 + r) * D + k0 + kk]; }
      at[(kk * 64u + r) / 4u][r % 4u] = x;
      bt[(kk * 64u + r) / 4u][r % 4u] = y;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      let a = at[kk * 16u + ty]; let bk = bt[kk * 16u + tx];
      acc[0] += a[0] * bk; acc[1] += a[1] * bk; acc[2] += a[2] * bk; acc[3] += a[3] * bk;
    }
  }
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + ty * 4u + i;
    if (row >= params.nq) { continue; }
    for (var c = 0u; c < 4u; c++) {
      let col = col0 + tx * 4u + c;
      if (col < params.nk) { s[(g * params.nq + row) * params.nk + col] = score_mod(h, row, col, acc[i][c]); }
    }
  }
}
`;
}

/** One workgroup per row: P = softmax(S row) in place (sink in the denominator), LSE out. */
export function softmaxKernelWgsl(d: number, dv: number): string {
  return /* wgsl */ `
${HEADER(d, dv)}
@group(0) @binding(3) var<storage, read_write> s: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
var<workgroup> red: array<f32, 256>;

fn reduce(lid: u32, x: f32, is_max: bool) -> f32 {
  red[lid] = x;
  workgroupBarrier();
  for (var off = 128u; off > 0u; off >>= 1u) {
    if (lid < off) { red[lid] = select(red[lid] + red[lid + off], max(red[lid], red[lid + off]), is_max); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x; let g = wid.y;
  let bh = params.head0 + g;
  let h = bh % params.hq;
  let base = (g * params.nq + row) * params.nk;
  let sink = sink_logit(h);
  var mx = NEG_INF;
  for (var j = lid; j < params.nk; j += 256u) { mx = max(mx, s[base + j]); }
  let m = reduce(lid, max(mx, sink), true);
  var sum = 0.0;
  for (var j = lid; j < params.nk; j += 256u) {
    let x = s[base + j];
    if (x > NEG_INF) { sum += exp(x - m); }
  }
  var l = reduce(lid, sum, false);
  if (sink > NEG_INF) { l += exp(sink - m); }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var j = lid; j < params.nk; j += 256u) {
    let x = s[base + j];
    s[base + j] = select(0.0, exp(x - m) * inv, x > NEG_INF);
  }
  if (lid == 0u) { lse[params.lse0 + bh * params.nq + row] = select(neg_inf_runtime(), m + log(l), l > 0.0); }
}
`;
}

/** O[i][c] = Σ_j P[i][j] V[j][c] for the head group. */
export function pvKernelWgsl(d: number, dv: number): string {
  return /* wgsl */ `
${HEADER(d, dv)}
@group(0) @binding(3) var<storage, read_write> s: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
var<workgroup> at: array<vec4<f32>, 256>; // PT[16 keys][64 rows]
var<workgroup> bt: array<vec4<f32>, 256>; // Vs[16 keys][64 cols]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 16u; let ty = lid / 16u;
  let row0 = wid.y * 64u; let col0 = wid.x * 64u;
  let g = wid.z;
  let bh = params.head0 + g;
  let h = bh % params.hq;
  let bhk = kv_head(bh);
  var acc: array<vec4<f32>, 4>;
  for (var j0 = 0u; j0 < params.nk; j0 += 16u) {
    workgroupBarrier();
    for (var idx = lid; idx < 1024u; idx += 256u) {
      let r = idx / 16u; let jj = idx % 16u;       // P: 64 rows × 16 keys
      var x = 0.0;
      if (row0 + r < params.nq && j0 + jj < params.nk) { x = s[(g * params.nq + row0 + r) * params.nk + j0 + jj]; }
      at[(jj * 64u + r) / 4u][r % 4u] = x;
      let vj = idx / 64u; let vc = idx % 64u;      // V: 16 keys × 64 cols
      var y = 0.0;
      if (j0 + vj < params.nk && col0 + vc < DV) { y = v[(bhk * params.nk + j0 + vj) * DV + col0 + vc]; }
      bt[(vj * 64u + vc) / 4u][vc % 4u] = y;
    }
    workgroupBarrier();
    for (var jj = 0u; jj < 16u; jj++) {
      let a = at[jj * 16u + ty]; let bv = bt[jj * 16u + tx];
      acc[0] += a[0] * bv; acc[1] += a[1] * bv; acc[2] += a[2] * bv; acc[3] += a[3] * bv;
    }
  }
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + ty * 4u + i;
    if (row >= params.nq) { continue; }
    for (var c = 0u; c < 4u; c++) {
      let col = col0 + tx * 4u + c;
      if (col < DV) { o[(bh * params.nq + row) * DV + col] = acc[i][c]; }
    }
  }
}
`;
}
