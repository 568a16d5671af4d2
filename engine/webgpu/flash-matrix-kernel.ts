// The tensor-core path's register kernel: the FA2 forward pass with both matmuls on subgroup
// matrices (chromium-experimental-subgroup-matrix; on NVIDIA, Dawn lowers them to Vulkan
// cooperative matrices, i.e. mma instructions). f16 operands, f32 accumulation.
//
// A workgroup is W subgroups; subgroup w owns query rows [w·M, w·M + M) of a BM = W·M tile.
// Its Q rows live in registers as left matrices and its O rows as result matrices for the
// whole pass: neither goes back to workgroup memory per K/V tile. Per tile of BN keys:
//   1. each subgroup computes its M×BN stripe of S = Q Kᵀ, loading Kᵀ blocks straight from
//      the K buffer (the W subgroups of a workgroup share them through the caches), and
//      stores the stripe (f32) to its own region of workgroup memory;
//   2. the online softmax runs on plain lanes (SG/M lanes per row, shuffles to combine):
//      masks/modifiers, row max, P = exp(S − m) written as f16;
//   3. O += P V on the result matrices in registers, V blocks again straight from memory.
// A subgroup matrix cannot be scaled row by row, so O is rescaled lazily (FA4's trick): the
// row max m used for P only moves when the tile's max exceeds it by more than rescaleLog
// (P stays ≤ e^rescaleLog, far inside f16's range). Only then does the workgroup round-trip
// O through workgroup memory to scale its rows by exp(m_old − m_new): for typical inputs on
// the first tile and rarely after. The result is exact: O and l carry the same stale m, and
// O / l and LSE = m + log l do not depend on which m was used. On an H200 this laziness is
// worth 2.2× (BENCHMARKS.md: rescaling on every max increase, 4.86 vs 10.75 TFLOP/s).
//
// Matrix loads take no per-element bounds: a load that runs past the end of the K or V
// buffer came back wrong on the H200 (as if Dawn's robustness moved or dropped the whole
// load), so this kernel only takes shapes where no load does (registerKernelTakes); the
// others go to flash-matrix-shared-o-kernel.ts.
//
// Workgroup memory: the Q tile (f16, read into registers once), the f16 P stripes, the f32
// S stripes (also the O scratch for rescale and output) and BM f32 row factors.

import { PARAMS_WGSL, SCORE_WGSL } from './params.ts';
import type { MatrixConfig, WebGpuContext } from './device.ts';

/** What a caller (the benchmark's grid) may prefer; the rest comes from the adapter. */
export interface MatrixTilePrefs {
  /** "MxNxK" of one of the adapter's f16 configs. */
  shape?: string;
  warps?: number;
  bn?: number;
  /** Benchmark ablation: rescale threshold (0 = on every increase of a row max). */
  rescaleLog?: number;
  /** Benchmark diagnostics: run this kernel even where registerKernelTakes() says no. */
  force?: boolean;
}

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
  /** Row-max growth (natural log) that triggers a rescale of O. */
  rescaleLog: number;
  bn: number;
  d: number;
  dv: number;
}

/** Max growth (natural log units) of a row's logits before O and l are rescaled: P ≤ e^8 ≈ 2981. */
export const RESCALE_LOG = 8;

export function matrixLayout(c: MatrixKernelConfig) {
  const bm = c.warps * c.m;
  const dp = Math.ceil(c.d / c.k) * c.k;
  const dvp = Math.ceil(c.dv / c.n) * c.n;
  const sw = Math.max(c.bn, c.n); // row stride of the f32 stripes (O scratch is M×N)
  const bytes = bm * dp * 2 + bm * c.bn * 2 + bm * sw * 4 + bm * 4 + 4;
  return { bm, dp, dvp, sw, bytes, threads: c.warps * c.sg, lanesPerRow: c.sg / c.m };
}

/**
 * Shapes where no matrix load runs past a buffer (head dims a multiple of the matrix size, Nk
 * a multiple of BN) and whole Q tiles, as verified by the H200 self-test. The benchmark's
 * forced runs of this kernel (4 subgroups, BN = 64): d = 64 with Nq = 100 was correct,
 * Nk = 100 (error 0.69) and d = 40 (0.40) were not.
 */
export function registerKernelTakes(c: MatrixKernelConfig, nq: number, nk: number): boolean {
  const L = matrixLayout(c);
  return c.d === L.dp && c.dv === L.dvp && nq % L.bm === 0 && nk % c.bn === 0;
}

// Tried in this order; measured on an H200 at N = 4096 (BENCHMARKS.md): d = 64, 8×32 14.27
// TFLOP/s, 4×64 10.75; d = 128, 8×32 does not fit, 4×64 15.65, 4×32 16.29.
const DEFAULT_SHAPES: [number, number][] = [
  [8, 32],
  [4, 64],
  [4, 32],
  [2, 64],
  [2, 32],
  [1, 64],
  [1, 32],
  [1, 16],
];

export function chooseMatrixTile(
  ctx: Pick<WebGpuContext, 'limits' | 'matrixConfigs' | 'subgroupMinSize' | 'subgroupMaxSize' | 'wgslFeatures'>,
  d: number,
  dv: number,
  allowSubgroupId = true,
  prefer: MatrixTilePrefs = {},
): MatrixKernelConfig {
  const subgroupId = allowSubgroupId && ctx.wgslFeatures.includes('subgroup_id') && ctx.wgslFeatures.includes('subgroup_uniformity');
  const sg = ctx.subgroupMinSize === ctx.subgroupMaxSize ? ctx.subgroupMinSize : Math.max(ctx.subgroupMinSize, 32);
  let cfgs = [...ctx.matrixConfigs].sort((a: MatrixConfig, b: MatrixConfig) => b.M * b.N * b.K - a.M * a.N * a.K);
  if (prefer.shape) {
    const first = cfgs.filter((mc) => `${mc.M}x${mc.N}x${mc.K}` === prefer.shape);
    cfgs = [...first, ...cfgs.filter((mc) => !first.includes(mc))];
  }
  const shapes: [number, number][] = prefer.warps && prefer.bn ? [[prefer.warps, prefer.bn], ...DEFAULT_SHAPES] : DEFAULT_SHAPES;
  for (const mc of cfgs) {
    if (sg % mc.M !== 0) continue;
    for (const [warps, bn] of shapes) {
      if (bn % mc.N !== 0 || bn % mc.K !== 0 || (warps > 1 && !subgroupId)) continue;
      const c: MatrixKernelConfig = { m: mc.M, n: mc.N, k: mc.K, warps, sg, bn, d, dv, subgroupId, rescaleLog: prefer.rescaleLog ?? RESCALE_LOG };
      const L = matrixLayout(c);
      if (L.threads <= ctx.limits.maxInvocations && L.bytes <= ctx.limits.maxWorkgroupStorage) return c;
    }
  }
  throw new Error(`no subgroup-matrix tile fits this adapter's limits for d=${d}, dv=${dv}`);
}

export function matrixKernelWgsl(c: MatrixKernelConfig): string {
  const L = matrixLayout(c);
  const { m: M, n: N, k: K, bn: BN } = c;
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  const QT = L.dp / K; // Q left matrices per subgroup
  const OT = L.dvp / N; // O result matrices per subgroup
  const lines = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join('\n');
  // Kᵀ block (K deep × N keys) and V block (K keys × N columns) at key offset j0 + kr.
  const kLoad = (kr: string, kk: number) => `subgroupMatrixLoad<${right}>(&k, kbase + (j0 + ${kr}) * D + ${kk}u, true, D)`;
  const vLoad = (kr: string, cb: number) => `subgroupMatrixLoad<${right}>(&v, vbase + (j0 + ${kr}) * DV + ${cb}u, false, DV)`;
  // Scale the subgroup's M×N O block `i` by the per-row factors in rowf (through its S region).
  const scaleBlock = (i: number) => `      subgroupMatrixStore(&ss, sreg, o${i}, false, SW);
      workgroupBarrier();
      for (var e = lane; e < ${M * N}u; e += SG) {
        let r = e / ${N}u; let cc = e % ${N}u;
        ss[sreg + r * SW + cc] *= rowf[warp * ${M}u + r];
      }
      workgroupBarrier();
      o${i} = subgroupMatrixLoad<${result}>(&ss, sreg, false, SW);
      workgroupBarrier();`;
  return /* wgsl */ `
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
${c.subgroupId ? 'requires subgroup_id, subgroup_uniformity;' : ''}
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f16>;
@group(0) @binding(2) var<storage, read> k: array<f16>;
@group(0) @binding(3) var<storage, read> v: array<f16>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${SCORE_WGSL}

const BM = ${L.bm}u; const BN = ${BN}u; const D = ${c.d}u; const DP = ${L.dp}u;
const DV = ${c.dv}u; const DVP = ${L.dvp}u; const NT = ${L.threads}u; const SG = ${c.sg}u;
const SW = ${L.sw}u;               // row stride of the f32 S stripes
const LPR = ${L.lanesPerRow}u;     // lanes per query row in the softmax step
const SCOLS = BN / LPR;            // S columns per lane
const RESCALE_LOG = ${c.rescaleLog.toFixed(1)};

var<workgroup> qs: array<f16, ${L.bm * L.dp}>;
var<workgroup> ps: array<f16, ${L.bm * BN}>;
var<workgroup> ss: array<f32, ${L.bm * L.sw}>;
var<workgroup> rowf: array<f32, ${L.bm}>;
var<workgroup> rescale: u32;

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
  let sreg = warp * ${M}u * SW;    // this subgroup's S stripe / O scratch

  // Q tile through workgroup memory into registers (zeros past Nq and past D).
  for (var idx = lid; idx < BM * DP; idx += NT) {
    let r = idx / DP; let col = idx % DP;
    var x = f16(0.0);
    if (row0 + r < params.nq && col < D) { x = q[qbase + (row0 + r) * D + col]; }
    qs[idx] = x;
  }
  workgroupBarrier();
${lines(QT, (i) => `  let q${i} = subgroupMatrixLoad<${left}>(&qs, warp * ${M}u * DP + ${i * K}u, false, DP);`)}
${lines(OT, (i) => `  var o${i} = ${result}();`)}

  // Softmax-step ownership: this lane handles row (warp·M + lane / LPR), columns ≡ lane % LPR.
  let srow = warp * ${M}u + lane / LPR;
  let part = lane % LPR;
  let grow = row0 + srow;
  let sink = sink_logit(h);
  var m = sink;
  var l = select(0.0, 1.0, sink > NEG_INF && part == 0u);

  let kr = block_key_range(row0, min(row0 + BM, params.nq));
  for (var j0 = (kr.x / BN) * BN; j0 < kr.y; j0 += BN) {
    workgroupBarrier();             // the previous tile's P, V and S reads are done
    if (lid == 0u) { rescale = 0u; }
    // S stripe of this subgroup: M rows × BN keys.
    for (var nb = 0u; nb < BN; nb += ${N}u) {
      var acc = ${result}();
${lines(QT, (i) => `      acc = subgroupMatrixMultiplyAccumulate(q${i}, ${kLoad('nb', i * K)}, acc);`)}
      subgroupMatrixStore(&ss, sreg + nb, acc, false, SW);
    }
    workgroupBarrier();
    // Online softmax on plain lanes, with the lazy max.
    var mx = NEG_INF;
    for (var c = 0u; c < SCOLS; c++) {
      let col = c * LPR + part;
      let x = score_mod(h, grow, j0 + col, ss[srow * SW + col]);
      ss[srow * SW + col] = x;
      mx = max(mx, x);
    }
    for (var off = 1u; off < LPR; off <<= 1u) { mx = max(mx, subgroupShuffleXor(mx, off)); }
    var alpha = 1.0;
    if (mx > m + RESCALE_LOG) {
      alpha = exp(m - mx);
      m = mx;
      rescale = 1u;
    }
    var sum = 0.0;
    for (var c = 0u; c < SCOLS; c++) {
      let col = c * LPR + part;
      let x = ss[srow * SW + col];
      var p = 0.0;
      if (x > NEG_INF) { p = exp(x - m); }
      sum += p;
      ps[srow * BN + col] = f16(p);
    }
    l = l * alpha + sum;
    if (part == 0u) { rowf[srow] = alpha; }
    if (workgroupUniformLoad(&rescale) != 0u) {
${lines(OT, scaleBlock)}
    }
    // O += P V.
    for (var kb = 0u; kb < BN; kb += ${K}u) {
      let pm = subgroupMatrixLoad<${left}>(&ps, warp * ${M}u * BN + kb, false, BN);
${lines(OT, (i) => `      o${i} = subgroupMatrixMultiplyAccumulate(pm, ${vLoad('kb', i * N)}, o${i});`)}
    }
  }
  for (var off = 1u; off < LPR; off <<= 1u) { l += subgroupShuffleXor(l, off); }
  workgroupBarrier();
  if (part == 0u) { rowf[srow] = select(0.0, 1.0 / l, l > 0.0); }
  if (grow < params.nq && part == 0u) { lse[bh * params.nq + grow] = select(neg_inf_runtime(), m + log(l), l > 0.0); }
  workgroupBarrier();
${lines(OT, (i) => `  subgroupMatrixStore(&ss, sreg, o${i}, false, SW);
  workgroupBarrier();
  for (var e = lane; e < ${M * N}u; e += SG) {
    let r = e / ${N}u; let col = ${i * N}u + e % ${N}u;
    let gr = row0 + warp * ${M}u + r;
    if (gr < params.nq && col < DV) { o[(bh * params.nq + gr) * DV + col] = ss[sreg + r * SW + e % ${N}u] * rowf[warp * ${M}u + r]; }
  }
  workgroupBarrier();`)}
}
`;
}
