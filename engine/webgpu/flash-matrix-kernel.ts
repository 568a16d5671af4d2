// The tensor-core path: the same FA2 forward pass with both matmuls on subgroup matrices
// (chromium-experimental-subgroup-matrix; on NVIDIA, Dawn lowers them to Vulkan cooperative
// matrices, i.e. mma instructions). f16 operands, f32 accumulation.
//
// A workgroup is W subgroups; subgroup w owns query rows [w·M, w·M + M) of a BM = W·M tile.
// Per K/V tile of BN keys:
//   1. all threads stage K (BN×DP) and V (BN×DVP) in workgroup memory as f16;
//   2. each subgroup computes its M×BN block of S = Q Kᵀ with M×N×K matrix multiply-adds
//      (Q from the resident Q tile, Kᵀ read column-major straight out of the K tile) and
//      stores it (f32) to workgroup memory;
//   3. the online softmax runs on plain lanes (sg/M lanes per row, one shuffle to combine):
//      masks/modifiers, new row max, P = exp(S − m) stored as f16, and O's rows rescaled;
//   4. each subgroup loads its O block as result matrices, adds P V, stores it back.
// O lives in workgroup memory (f32) rather than in matrix registers because a subgroup
// matrix cannot be scaled row by row; that round trip per tile is this path's main cost
// besides the scalar softmax.
//
// Workgroup memory: Q BM·DP·2 + K BN·DP·2 + V BN·DVP·2 + S BM·BN·4 + P BM·BN·2 + O BM·DVP·4 bytes.

import { PARAMS_WGSL, SCORE_WGSL } from './params.ts';
import type { MatrixConfig, WebGpuContext } from './device.ts';

export interface MatrixKernelConfig {
  m: number;
  n: number;
  k: number;
  /** Subgroups per workgroup. */
  warps: number;
  /** Subgroup size the kernel is written for. */
  sg: number;
  /**
   * Several subgroups per workgroup need the subgroup_id builtin (WGSL language features
   * subgroup_id + subgroup_uniformity): subgroup-matrix loads and stores must take uniform
   * offsets, and only subgroup_id is subgroup-uniform; lid / sg is not, to the analysis.
   */
  subgroupId: boolean;
  /**
   * Benchmark-only ablations for profiling (the result is wrong with either): 'softmax'
   * replaces the scalar online softmax by a plain copy S → P; 'loads' stages K/V from global
   * memory for the first tile only. The time they save is the time those phases cost.
   */
  ablate?: 'softmax' | 'loads';
  bn: number;
  d: number;
  dv: number;
}

export function matrixLayout(c: MatrixKernelConfig) {
  const bm = c.warps * c.m;
  const dp = Math.ceil(c.d / c.k) * c.k;
  const dvp = Math.ceil(c.dv / c.n) * c.n;
  const bytes = bm * dp * 2 + c.bn * dp * 2 + c.bn * dvp * 2 + bm * c.bn * 4 + bm * c.bn * 2 + bm * dvp * 4;
  return { bm, dp, dvp, bytes, threads: c.warps * c.sg, lanesPerRow: c.sg / c.m };
}

export function chooseMatrixTile(
  ctx: Pick<WebGpuContext, 'limits' | 'matrixConfigs' | 'subgroupMinSize' | 'subgroupMaxSize' | 'wgslFeatures'>,
  d: number,
  dv: number,
  allowSubgroupId = true,
): MatrixKernelConfig {
  const subgroupId = allowSubgroupId && ctx.wgslFeatures.includes('subgroup_id') && ctx.wgslFeatures.includes('subgroup_uniformity');
  const sg = ctx.subgroupMinSize === ctx.subgroupMaxSize ? ctx.subgroupMinSize : Math.max(ctx.subgroupMinSize, 32);
  const cfgs = [...ctx.matrixConfigs].sort((a: MatrixConfig, b: MatrixConfig) => b.M * b.N * b.K - a.M * a.N * a.K);
  for (const mc of cfgs) {
    if (sg % mc.M !== 0) continue;
    for (const [warps, bn] of [[4, 64], [4, 32], [2, 64], [2, 32], [1, 64], [1, 32], [1, 16]]) {
      if (bn % mc.N !== 0 || bn % mc.K !== 0 || (warps > 1 && !subgroupId)) continue;
      const c: MatrixKernelConfig = { m: mc.M, n: mc.N, k: mc.K, warps, sg, bn, d, dv, subgroupId };
      const L = matrixLayout(c);
      if (L.threads <= ctx.limits.maxInvocations && L.bytes <= ctx.limits.maxWorkgroupStorage) return c;
    }
  }
  throw new Error(`no subgroup-matrix tile fits this adapter's limits for d=${d}, dv=${dv}`);
}

/** Stages BN rows of a K or V tile into workgroup memory (4 elements per load when the head dim allows). */
function stage(src: string, dst: string, n: string, np: string, base: string, vec: boolean): string {
  return vec
    ? `    for (var idx = lid; idx < BN * ${np} / 4u; idx += NT) {
      let r = idx / (${np} / 4u); let col = (idx % (${np} / 4u)) * 4u;
      var x = vec4<f16>(0.0);
      if (j0 + r < params.nk && col < ${n}) { x = ${src}[(${base} + (j0 + r) * ${n} + col) / 4u]; }
      for (var t = 0u; t < 4u; t++) { ${dst}[r * ${np} + col + t] = x[t]; }
    }`
    : `    for (var idx = lid; idx < BN * ${np}; idx += NT) {
      let r = idx / ${np}; let col = idx % ${np};
      var x = f16(0.0);
      if (j0 + r < params.nk && col < ${n}) { x = ${src}[${base} + (j0 + r) * ${n} + col]; }
      ${dst}[idx] = x;
    }`;
}

// Ablation: P = S as f16, no masks, no max, no rescale (timing only).
const ABLATED_SOFTMAX = /* wgsl */ `
    for (var c = 0u; c < SCOLS; c++) {
      let col = part * SCOLS + c;
      ps[srow * BN + col] = f16(ss[srow * BN + col]);
    }
    l += 1.0;
`;

export function matrixKernelWgsl(c: MatrixKernelConfig): string {
  const L = matrixLayout(c);
  const { m: M, n: N, k: K, bn: BN } = c;
  const LPR = L.lanesPerRow;
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  return /* wgsl */ `
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
${c.subgroupId ? 'requires subgroup_id, subgroup_uniformity;' : ''}
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f16>;
@group(0) @binding(2) var<storage, read> k: array<${c.d % 4 === 0 ? 'vec4<f16>' : 'f16'}>;
@group(0) @binding(3) var<storage, read> v: array<${c.dv % 4 === 0 ? 'vec4<f16>' : 'f16'}>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}

const BM = ${L.bm}u; const BN = ${BN}u; const D = ${c.d}u; const DP = ${L.dp}u;
const DV = ${c.dv}u; const DVP = ${L.dvp}u; const NT = ${L.threads}u; const SG = ${c.sg}u;
const LPR = ${LPR}u;               // lanes per query row in the softmax step
const SCOLS = BN / LPR;            // S columns per lane
const OCOLS = DVP / LPR;           // O columns per lane

var<workgroup> qs: array<f16, ${L.bm * L.dp}>;
var<workgroup> ks: array<f16, ${BN * L.dp}>;
var<workgroup> vs: array<f16, ${BN * L.dvp}>;
var<workgroup> ss: array<f32, ${L.bm * BN}>;
var<workgroup> ps: array<f16, ${L.bm * BN}>;
var<workgroup> os: array<f32, ${L.bm * L.dvp}>;

@compute @workgroup_size(${L.threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32${c.subgroupId ? ', @builtin(subgroup_id) sgid: u32' : ''}) {
  let warp = ${c.subgroupId ? 'sgid' : '0u'};
  let lane = lid % SG;
  let row0 = (nwg.x - 1u - wid.x) * BM;
  let bh = wid.y;
  let h = bh % params.hq; let b = bh / params.hq;
  let bhk = b * params.hk + h / (params.hq / params.hk);
  let qbase = bh * params.nq * D;
  let kbase = bhk * params.nk * D;
  let vbase = bhk * params.nk * DV;

  for (var idx = lid; idx < BM * DP; idx += NT) {
    let r = idx / DP; let col = idx % DP;
    var x = f16(0.0);
    if (row0 + r < params.nq && col < D) { x = q[qbase + (row0 + r) * D + col]; }
    qs[idx] = x;
  }
  for (var idx = lid; idx < BM * DVP; idx += NT) { os[idx] = 0.0; }

  // Softmax-step ownership: this lane handles row (warp·M + lane / LPR), column slice lane % LPR.
  let srow = warp * ${M}u + lane / LPR;
  let part = lane % LPR;
  let grow = row0 + srow;
  let sink = sink_logit(h);
  var m = sink;
  var l = select(0.0, 1.0, sink > NEG_INF && part == 0u);

  let kr = block_key_range(row0, min(row0 + BM, params.nq));
  for (var j0 = (kr.x / BN) * BN; j0 < kr.y; j0 += BN) {
    workgroupBarrier();
    ${c.ablate === 'loads' ? 'if (j0 == (kr.x / BN) * BN) {' : ''}
${stage('k', 'ks', 'D', 'DP', 'kbase', c.d % 4 === 0)}
${stage('v', 'vs', 'DV', 'DVP', 'vbase', c.dv % 4 === 0)}
    ${c.ablate === 'loads' ? '}' : ''}
    workgroupBarrier();
    // S block of this subgroup: M rows × BN keys.
    for (var nb = 0u; nb < BN; nb += ${N}u) {
      var acc = ${result}();
      for (var kk = 0u; kk < DP; kk += ${K}u) {
        let a = subgroupMatrixLoad<${left}>(&qs, warp * ${M}u * DP + kk, false, DP);
        let kt = subgroupMatrixLoad<${right}>(&ks, nb * DP + kk, true, DP);
        acc = subgroupMatrixMultiplyAccumulate(a, kt, acc);
      }
      subgroupMatrixStore(&ss, warp * ${M}u * BN + nb, acc, false, BN);
    }
    workgroupBarrier();
${c.ablate === 'softmax' ? ABLATED_SOFTMAX : `    // Online softmax on plain lanes.
    var mx = NEG_INF;
    for (var c = 0u; c < SCOLS; c++) {
      let col = part * SCOLS + c;
      let x = score_mod(h, grow, j0 + col, ss[srow * BN + col]);
      ss[srow * BN + col] = x;
      mx = max(mx, x);
    }
    for (var off = 1u; off < LPR; off <<= 1u) { mx = max(mx, subgroupShuffleXor(mx, off)); }
    let mn = max(m, mx);
    let alpha = exp(m - mn);
    var sum = 0.0;
    for (var c = 0u; c < SCOLS; c++) {
      let col = part * SCOLS + c;
      let x = ss[srow * BN + col];
      var p = 0.0;
      if (x > NEG_INF) { p = exp(x - mn); }
      sum += p;
      ps[srow * BN + col] = f16(p);
    }
    l = l * alpha + sum;
    m = mn;
    // Rows whose max did not move need no rescale (alpha == 1): after the first tiles, most.
    if (alpha != 1.0) {
      for (var c = 0u; c < OCOLS; c++) { os[srow * DVP + part * OCOLS + c] *= alpha; }
    }
`}    workgroupBarrier();
    // O block += P V.
    for (var cb = 0u; cb < DVP; cb += ${N}u) {
      var acc = subgroupMatrixLoad<${result}>(&os, warp * ${M}u * DVP + cb, false, DVP);
      for (var kb = 0u; kb < BN; kb += ${K}u) {
        let pm = subgroupMatrixLoad<${left}>(&ps, warp * ${M}u * BN + kb, false, BN);
        let vm = subgroupMatrixLoad<${right}>(&vs, kb * DVP + cb, false, DVP);
        acc = subgroupMatrixMultiplyAccumulate(pm, vm, acc);
      }
      subgroupMatrixStore(&os, warp * ${M}u * DVP + cb, acc, false, DVP);
    }
  }
  workgroupBarrier();
  for (var off = 1u; off < LPR; off <<= 1u) { l += subgroupShuffleXor(l, off); }
  if (grow < params.nq) {
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var c = 0u; c < OCOLS; c++) {
      let col = part * OCOLS + c;
      if (col < DV) { o[(bh * params.nq + grow) * DV + col] = os[srow * DVP + col] * inv; }
    }
    if (part == 0u) { lse[bh * params.nq + grow] = select(neg_inf_runtime(), m + log(l), l > 0.0); }
  }
}
`;
}
