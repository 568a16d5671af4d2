// The attention backward on WebGPU, f32: three kernels, in the order they run.
//
//   1. bwd_dot   D_i = dO_i · O_i                          (one thread per query row)
//   2. bwd_dkdv  dV_j = Σ_i P_ij dO_i,  dK_j = τ Σ_i dS_ij Q_i (one thread per key; rows staged)
//   3. bwd_dq    dQ_i = τ Σ_j dS_ij K_j                      (one thread per query row; keys staged)
//
// with P_ij = exp(s_ij − LSE_i) recomputed from the forward's LSE (the sink, if any, is
// inside it), dP_ij = dO_i · V_j and dS_ij = P_ij (dP_ij − D_i).
//
// Why dQ gets a kernel of its own. FA2 and FA3 walk K/V blocks in the outer loop and add
// every block's dQ contribution into an fp32 buffer with atomics (FA3: TMA reduce-add).
// WGSL has atomics only on i32/u32: a float add would be a compare-and-swap loop on the
// bit pattern, one per element per K/V block, all contending on the same row block. The
// second kernel instead walks keys in its inner loop and keeps dQ_i in registers, paying a
// second recomputation of S, P and dP (2 more of the 7 matmul-sized products) for adds
// that never collide and a result that does not depend on scheduling: this backward is
// deterministic by construction, what FA3 buys with its ordered semaphore.
//
// Score model (engine/core/scores.ts): s = c·tanh(τ q·k / c) when a softcap c is set, else
// τ q·k; minus slope_h·|j − (i + Nk − Nq)| with ALiBi; keys outside the causal/window band
// around the bottom-right diagonal are skipped, and whole K/V (or query) chunks outside it
// are never staged. With the softcap, dS flows through tanh: ∂s/∂(q·k) = τ (1 − tanh²).

export interface BackwardKernelShape {
  d: number;
  dv: number;
  /** Query heads per key head (GQA/MQA): the dK/dV kernel sums over them. */
  group: number;
  softcap: boolean;
  alibi: boolean;
}

/** Threads (keys or rows) per workgroup, and rows (keys) staged per chunk. */
export const BWD_THREADS = 64;
export const BWD_CHUNK = 16;

// Uniforms shared by the backward kernels, f32 and subgroup-matrix (std140-like: 12 u32/f32 slots).
export const PARAMS = /* wgsl */ `
struct P {
  nq: u32, nk: u32, hq: u32, hk: u32,
  scale: f32, softcap: f32, left: i32, right: i32,
  diag: i32, batch: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> prm: P;
`;

// What the dK/dV and dQ kernels both read (bindings 7 and 8 are their outputs, 9 the ALiBi slopes).
const GRAD_INPUTS = /* wgsl */ `
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> dsum: array<f32>;
`;

/** Visibility and the ALiBi bias, shared by the kernels (right < 0: unbounded; causal is folded into right on the host). */
export function scoreHelpers(shape: Pick<BackwardKernelShape, 'softcap' | 'alibi'>): string {
  return /* wgsl */ `
fn visible(i: i32, j: i32) -> bool {
  let rel = j - (i + prm.diag);
  if (prm.left >= 0 && rel < -prm.left) { return false; }
  if (prm.right >= 0 && rel > prm.right) { return false; }
  return true;
}
// s from the raw dot product, and ∂s/∂dot for the chain rule.
fn score(h: u32, i: i32, j: i32, dotqk: f32) -> vec2<f32> {
  var s = prm.scale * dotqk;
  var ds = prm.scale;
  ${shape.softcap ? 'let t = tanh(s / prm.softcap); s = prm.softcap * t; ds = prm.scale * (1.0 - t * t);' : ''}
  ${shape.alibi ? 's = s - slopes[h] * abs(f32(j - (i + prm.diag)));' : ''}
  return vec2<f32>(s, ds);
}
`;
}

/**
 * WGSL that copies `rows` rows of `width` floats, starting at row `first` of the block whose
 * row 0 is `base`, from `src` into workgroup array `dst`; rows at or past `count` read as 0.
 */
function stageRows(dst: string, src: string, width: number, rows: number, first: string, base: string, count: string): string {
  return /* wgsl */ `
      for (var t = lid; t < ${rows * width}u; t += ${BWD_THREADS}u) {
        let rr = ${first} + t / ${width}u;
        ${dst}[t] = select(0.0, ${src}[(${base} + min(rr, ${count} - 1u)) * ${width}u + t % ${width}u], rr < ${count});
      }`;
}

export function bwdDotWgsl(dv: number): string {
  return /* wgsl */ `
${PARAMS}
@group(0) @binding(1) var<storage, read> o: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> dsum: array<f32>;

@compute @workgroup_size(${BWD_THREADS})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let rows = prm.batch * prm.hq * prm.nq;
  let r = gid.x + gid.y * 65535u * ${BWD_THREADS}u;
  if (r >= rows) { return; }
  var acc = 0.0;
  for (var c = 0u; c < ${dv}u; c++) { acc += o[r * ${dv}u + c] * dout[r * ${dv}u + c]; }
  dsum[r] = acc;
}
`;
}

/**
 * dK, dV: one thread per key j of one (batch, key head); the query rows of every head of
 * the group pass through workgroup memory BWD_CHUNK at a time, each read by all 64 keys.
 * Grid: [ceil(Nk / 64), batch · Hk].
 */
export function bwdDkDvWgsl(shape: BackwardKernelShape): string {
  const { d, dv, group } = shape;
  const R = BWD_CHUNK;
  return /* wgsl */ `
${PARAMS}
${GRAD_INPUTS}@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dvout: array<f32>;
@group(0) @binding(9) var<storage, read> slopes: array<f32>;
${scoreHelpers(shape)}
var<workgroup> sq: array<f32, ${R * d}>;
var<workgroup> sdo: array<f32, ${R * dv}>;
var<workgroup> slse: array<f32, ${R}>;
var<workgroup> sd: array<f32, ${R}>;

@compute @workgroup_size(${BWD_THREADS})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wg.y / prm.hk;
  let hk = wg.y % prm.hk;
  let j0 = wg.x * ${BWD_THREADS}u;
  let j = j0 + lid;
  let live = j < prm.nk;
  let jc = min(j, prm.nk - 1u);
  let kbase = ((b * prm.hk + hk) * prm.nk + jc);
  var kj: array<f32, ${d}>;
  var vj: array<f32, ${dv}>;
  var dkj: array<f32, ${d}>;
  var dvj: array<f32, ${dv}>;
  for (var e = 0u; e < ${d}u; e++) { kj[e] = k[kbase * ${d}u + e]; dkj[e] = 0.0; }
  for (var e = 0u; e < ${dv}u; e++) { vj[e] = v[kbase * ${dv}u + e]; dvj[e] = 0.0; }
  // Rows that can see any key of this block: the band around the diagonal, clipped.
  let jLast = i32(min(j0 + ${BWD_THREADS}u, prm.nk)) - 1;
  var iLo = 0;
  if (prm.right >= 0) { iLo = max(0, i32(j0) - prm.diag - prm.right); }
  var iHi = i32(prm.nq);
  if (prm.left >= 0) { iHi = min(iHi, jLast - prm.diag + prm.left + 1); }
  for (var g = 0u; g < ${group}u; g++) {
    let h = hk * ${group}u + g;
    let rowBase = (b * prm.hq + h) * prm.nq;
    for (var i0 = iLo; i0 < iHi; i0 += ${R}) {
      // Stage R rows of Q and dO, their LSE and D (zeros past the end: never visible).
${stageRows('sq', 'q', d, R, 'u32(i0)', 'rowBase', 'prm.nq')}
${stageRows('sdo', 'dout', dv, R, 'u32(i0)', 'rowBase', 'prm.nq')}
      if (lid < ${R}u) {
        let ii = u32(i0) + lid;
        slse[lid] = select(3.0e38, lse[rowBase + min(ii, prm.nq - 1u)], ii < prm.nq);
        sd[lid] = select(0.0, dsum[rowBase + min(ii, prm.nq - 1u)], ii < prm.nq);
      }
      workgroupBarrier();
      if (live) {
        for (var r = 0u; r < ${R}u; r++) {
          let i = i0 + i32(r);
          if (i >= i32(prm.nq) || !visible(i, i32(j))) { continue; }
          var qk = 0.0;
          for (var e = 0u; e < ${d}u; e++) { qk += sq[r * ${d}u + e] * kj[e]; }
          let sc = score(h, i, i32(j), qk);
          let p = exp(sc.x - slse[r]);
          var dp = 0.0;
          for (var e = 0u; e < ${dv}u; e++) {
            let g_o = sdo[r * ${dv}u + e];
            dvj[e] += p * g_o;
            dp += g_o * vj[e];
          }
          let dsc = p * (dp - sd[r]) * sc.y;
          for (var e = 0u; e < ${d}u; e++) { dkj[e] += dsc * sq[r * ${d}u + e]; }
        }
      }
      workgroupBarrier();
    }
  }
  if (live) {
    for (var e = 0u; e < ${d}u; e++) { dk[kbase * ${d}u + e] = dkj[e]; }
    for (var e = 0u; e < ${dv}u; e++) { dvout[kbase * ${dv}u + e] = dvj[e]; }
  }
}
`;
}

/**
 * dQ: one thread per query row of one (batch, head); keys and values pass through
 * workgroup memory BWD_CHUNK at a time. Grid: [ceil(Nq / 64), batch · Hq].
 */
export function bwdDqWgsl(shape: BackwardKernelShape): string {
  const { d, dv, group } = shape;
  const C = BWD_CHUNK;
  return /* wgsl */ `
${PARAMS}
${GRAD_INPUTS}@group(0) @binding(7) var<storage, read_write> dq: array<f32>;
@group(0) @binding(9) var<storage, read> slopes: array<f32>;
${scoreHelpers(shape)}
var<workgroup> sk: array<f32, ${C * d}>;
var<workgroup> sv: array<f32, ${C * dv}>;

@compute @workgroup_size(${BWD_THREADS})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wg.y / prm.hq;
  let h = wg.y % prm.hq;
  let hk = h / ${group}u;
  let i0 = wg.x * ${BWD_THREADS}u;
  let i = i0 + lid;
  let live = i < prm.nq;
  let row = (b * prm.hq + h) * prm.nq + min(i, prm.nq - 1u);
  var qi: array<f32, ${d}>;
  var doi: array<f32, ${dv}>;
  var dqi: array<f32, ${d}>;
  for (var e = 0u; e < ${d}u; e++) { qi[e] = q[row * ${d}u + e]; dqi[e] = 0.0; }
  for (var e = 0u; e < ${dv}u; e++) { doi[e] = dout[row * ${dv}u + e]; }
  let li = lse[row];
  let di = dsum[row];
  // Keys any row of this block can see.
  let iLast = i32(min(i0 + ${BWD_THREADS}u, prm.nq)) - 1;
  var jLo = 0;
  if (prm.left >= 0) { jLo = max(0, i32(i0) + prm.diag - prm.left); }
  var jHi = i32(prm.nk);
  if (prm.right >= 0) { jHi = min(jHi, iLast + prm.diag + prm.right + 1); }
  let kvBase = (b * prm.hk + hk) * prm.nk;
  for (var j0 = jLo; j0 < jHi; j0 += ${C}) {
${stageRows('sk', 'k', d, C, 'u32(j0)', 'kvBase', 'prm.nk')}
${stageRows('sv', 'v', dv, C, 'u32(j0)', 'kvBase', 'prm.nk')}
    workgroupBarrier();
    if (live) {
      for (var c = 0u; c < ${C}u; c++) {
        let j = j0 + i32(c);
        if (j >= i32(prm.nk) || !visible(i32(i), j)) { continue; }
        var qk = 0.0;
        for (var e = 0u; e < ${d}u; e++) { qk += qi[e] * sk[c * ${d}u + e]; }
        let sc = score(h, i32(i), j, qk);
        let p = exp(sc.x - li);
        var dp = 0.0;
        for (var e = 0u; e < ${dv}u; e++) { dp += doi[e] * sv[c * ${dv}u + e]; }
        let dsc = p * (dp - di) * sc.y;
        for (var e = 0u; e < ${d}u; e++) { dqi[e] += dsc * sk[c * ${d}u + e]; }
      }
    }
    workgroupBarrier();
  }
  if (live) {
    for (var e = 0u; e < ${d}u; e++) { dq[row * ${d}u + e] = dqi[e]; }
  }
}
`;
}
