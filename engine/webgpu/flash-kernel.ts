// The 4×4-tiled FlashAttention-2-style forward kernel in WGSL, for the f32, f16-storage and
// subgroup paths on heads wider than 64 (narrower heads run flash-row-kernel.ts, measured
// 1.3–1.5× faster there; the tensor-core path lives in flash-matrix-kernel.ts).
//
// One workgroup owns a BM-row Q tile of one (batch, query head). It walks the K/V tiles of
// BN keys that its rows can see (tiles wholly hidden by the causal/window mask are skipped),
// keeping the running row max m and the per-thread partial row sum l in registers (FA2:
// l is only reduced across threads once, at the end, because every thread of a row applies
// the same rescale factor). O is rescaled in registers and normalized once at the end;
// LSE = m + log(l) is written for the backward pass / the split-K combine.
//
// Threads form a TY × TX grid (TY = BM/4, TX = BN/4); each owns a 4×4 block of S (rows
// ty*4.., keys tx*4..) and a 4 × DVP/TX slice of O. Q and K reach workgroup memory in
// chunks of DK head-dims, stored transposed so that one vec4 read gives 4 rows (or 4 keys);
// P goes through workgroup memory (transposed, PT[key][row]) because the thread that owns
// a row of O needs the whole row of P. V follows in chunks of JC keys.
//
// Resource budget (elements of the storage type E, 4 or 2 bytes):
//   stage = max(DK·(BM+BN), JC·DVP)   Q/K chunks, then V chunks (never live at once)
//   PT    = BN·BM
//   red   = BM·TX·4 bytes             row-max / row-sum exchange (only where subgroup
//                                      shuffles cannot cover the TX threads of a row)
// registers per thread: 16 (S) + 4·DVP/TX (O) + 8 (m, l) floats.

import { castPWgsl } from './fp8-cast.ts';
import type { MaskWgsl } from './mask-wgsl.ts';
import { PARAMS_WGSL, scoreModWgsl } from './params.ts';
import { GRID_ORDER_WGSL } from './grid-order.ts';
import { withSequenceGeometry } from './sequence-geometry.ts';
import { DENSE_ADDRESS, VARLEN_ADDRESS, VARLEN_BINDING_WGSL, varlenPrologue } from './varlen-layout.ts';

export interface FlashTile {
  /** Query rows per workgroup (multiple of 4). */
  bm: number;
  /** Keys per K/V tile (multiple of 4). */
  bn: number;
  /** Head-dim chunk for QK^T. */
  dk: number;
  /** Key chunk for PV. */
  jc: number;
}

export interface FlashKernelConfig extends FlashTile {
  elem: 'f32' | 'f16';
  /** 0: row reductions through workgroup memory; n > 0: subgroup shuffles over groups of n lanes (the adapter's minimum subgroup size). */
  subgroup: number;
  d: number;
  dv: number;
  /** A packed variable-length batch (varlen-layout.ts) instead of [B, H, N, d]. */
  varlen?: boolean;
  /** FA3's FP8 P cast (fp8-cast.ts) with this static factor before P·V; absent: P stays f32. */
  pCast?: number;
  /** The problem's mask_mod / score_mod (mask-wgsl.ts), tested on every score. */
  user?: MaskWgsl;
  /** Block-sparse: the block list's WGSL (block-list.ts) at this kernel's BM × BN tiles. */
  blockList?: string;
}

export function flashLayout(c: FlashKernelConfig) {
  const tx = c.bn / 4;
  const ty = c.bm / 4;
  const dp = Math.ceil(c.d / c.dk) * c.dk;
  const dvp = Math.ceil(c.dv / (4 * tx)) * 4 * tx;
  const stage = Math.max(c.dk * (c.bm + c.bn), c.jc * dvp);
  const lanes = c.subgroup > 0 ? Math.min(c.subgroup, tx) : 1;
  const groups = tx / lanes; // partials per row that still go through workgroup memory
  const eb = c.elem === 'f16' ? 2 : 4;
  const bytes = (stage + c.bn * c.bm) * eb + (groups > 1 ? c.bm * groups * 4 : 0);
  return { tx, ty, threads: tx * ty, dp, dvp, stage, lanes, groups, bytes };
}

/** The row reduction of `v` (one value per owned row i) over the TX threads of the row. */
function rowReduce(c: FlashKernelConfig, op: 'max' | '+', v: string): string {
  const L = flashLayout(c);
  const comb = (a: string, b: string) => (op === 'max' ? `max(${a}, ${b})` : `(${a} + ${b})`);
  const lines: string[] = [];
  for (let off = 1; off < L.lanes; off *= 2) {
    lines.push(`for (var i = 0u; i < 4u; i++) { ${v}[i] = ${comb(`${v}[i]`, `subgroupShuffleXor(${v}[i], ${off}u)`)}; }`);
  }
  if (L.groups > 1) {
    lines.push(
      `for (var i = 0u; i < 4u; i++) { red[(ty * 4u + i) * ${L.groups}u + tx / ${L.lanes}u] = ${v}[i]; }`,
      `workgroupBarrier();`,
      `for (var i = 0u; i < 4u; i++) {`,
      `  var acc = red[(ty * 4u + i) * ${L.groups}u];`,
      `  for (var g = 1u; g < ${L.groups}u; g++) { acc = ${comb('acc', `red[(ty * 4u + i) * ${L.groups}u + g]`)}; }`,
      `  ${v}[i] = acc;`,
      `}`,
      `workgroupBarrier();`,
    );
  }
  return lines.join('\n    ');
}

export function flashKernelWgsl(c: FlashKernelConfig): string {
  const L = flashLayout(c);
  const A = c.varlen ? VARLEN_ADDRESS : DENSE_ADDRESS;
  const E = c.elem;
  const BM4 = c.bm / 4;
  const BN4 = c.bn / 4;
  const DV4 = L.dvp / 4;
  const RO4 = L.dvp / (4 * L.tx); // vec4 groups of O columns per thread
  // Head dims that are multiples of 4 read Q/K (and V) from global memory 4 elements per
  // load: a quarter of the index arithmetic and load instructions of the scalar staging.
  const vq = c.d % 4 === 0 && c.dk % 4 === 0;
  const vv = c.dv % 4 === 0;
  const VQ = vq ? `vec4<${E}>` : E;
  const VV = vv ? `vec4<${E}>` : E;
  const stageQK = vq
    ? `
      for (var idx = lid; idx < BM * DK / 4u; idx += NT) {
        let r = idx / (DK / 4u); let kk = (idx % (DK / 4u)) * 4u;
        let row = row0 + r; let col = k0 + kk;
        var x = vec4<${E}>(0.0);
        if (row < params.nq && col < D) { x = q[(qbase + row * ${A.qs} + col) / 4u]; }
        for (var t = 0u; t < 4u; t++) { stage[((kk + t) * BM + r) / 4u][r % 4u] = x[t]; }
      }
      for (var idx = lid; idx < BN * DK / 4u; idx += NT) {
        let r = idx / (DK / 4u); let kk = (idx % (DK / 4u)) * 4u;
        let key = j0 + r; let col = k0 + kk;
        var x = vec4<${E}>(0.0);
        if (key < params.nk && col < D) { x = k[(kbase + key * ${A.ks} + col) / 4u]; }
        for (var t = 0u; t < 4u; t++) { stage[(DK * BM + (kk + t) * BN + r) / 4u][r % 4u] = x[t]; }
      }`
    : `
      for (var idx = lid; idx < BM * DK; idx += NT) {
        let r = idx / DK; let kk = idx % DK;
        let row = row0 + r; let col = k0 + kk;
        var x = ${E}(0.0);
        if (row < params.nq && col < D) { x = q[qbase + row * ${A.qs} + col]; }
        stage[(kk * BM + r) / 4u][r % 4u] = x;
      }
      for (var idx = lid; idx < BN * DK; idx += NT) {
        let r = idx / DK; let kk = idx % DK;
        let key = j0 + r; let col = k0 + kk;
        var x = ${E}(0.0);
        if (key < params.nk && col < D) { x = k[kbase + key * ${A.ks} + col]; }
        stage[(DK * BM + kk * BN + r) / 4u][r % 4u] = x;
      }`;
  const stageV = vv
    ? `
      for (var idx = lid; idx < JC * ${DV4}u; idx += NT) {
        let r = idx / ${DV4}u; let col = (idx % ${DV4}u) * 4u;
        let key = j0 + jc + r;
        var x = vec4<${E}>(0.0);
        if (key < params.nk && col < DV) { x = v[(vbase + key * ${A.vs} + col) / 4u]; }
        stage[idx] = x;
      }`
    : `
      for (var idx = lid; idx < JC * ${DV4}u * 4u; idx += NT) {
        let r = idx / (${DV4}u * 4u); let col = idx % (${DV4}u * 4u);
        let key = j0 + jc + r;
        var x = ${E}(0.0);
        if (key < params.nk && col < DV) { x = v[vbase + key * ${A.vs} + col]; }
        stage[(r * ${DV4}u * 4u + col) / 4u][col % 4u] = x;
      }`;
  const wgsl = /* wgsl */ `
${E === 'f16' ? 'enable f16;' : ''}
${c.subgroup > 0 ? 'enable subgroups;' : ''}
${PARAMS_WGSL}
${GRID_ORDER_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<${VQ}>;
@group(0) @binding(2) var<storage, read> k: array<${VQ}>;
@group(0) @binding(3) var<storage, read> v: array<${VV}>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;${c.varlen ? VARLEN_BINDING_WGSL : ''}${c.blockList ?? ''}
${scoreModWgsl(c.user)}
${c.pCast ? castPWgsl(c.pCast) : ''}

const BM = ${c.bm}u; const BN = ${c.bn}u; const DK = ${c.dk}u; const JC = ${c.jc}u;
const D = ${c.d}u; const DP = ${L.dp}u; const DV = ${c.dv}u;
const TX = ${L.tx}u; const NT = ${L.threads}u;

// Q/K chunks as QsT[k][row] then KsT[k][key] (offset DK·BM); later V chunks Vs[key][col].
var<workgroup> stage: array<vec4<${E}>, ${L.stage / 4}>;
var<workgroup> pt: array<vec4<${E}>, ${(c.bn * c.bm) / 4}>; // PT[key][row]
${L.groups > 1 ? `var<workgroup> red: array<f32, ${c.bm * L.groups}>;` : ''}

@compute @workgroup_size(${L.threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tx = lid % TX;
  let ty = lid / TX;
${
  c.varlen
    ? varlenPrologue('BM')
    : `  // Longest tiles first (bottom query blocks see the most keys under a causal mask), in
  // groups of params.head_group heads: grid-order.ts.
  let tile = grid_tile(wid, nwg);
  let row0 = tile.x * BM;
  let bh = tile.y; // (batch, query head) row within this dispatch's window (binding-windows.ts)
  let h = (bh + params.head0) % params.hq;  // the query head (params.head0: the window's first row)${c.user ? '\n  mask_row = bh + params.head0;' : ''}
  let bhk = kv_head(bh);
  let qbase = bh * params.nq * D;
  let kbase = bhk * params.nk * D;
  let vbase = bhk * params.nk * DV;`
}

  var m: vec4<f32>;
  var l = vec4<f32>(0.0);
  let sink = sink_logit(h);
  m = vec4<f32>(sink);
  if (sink > NEG_INF && tx == 0u) { l = vec4<f32>(1.0); } // the sink's exp(sink - m) = 1, counted once per row
  var acc: array<array<vec4<f32>, ${RO4}>, 4>;

${
  c.blockList
    ? `  // Block-sparse: only the K/V tiles the block mask lists for this Q tile (block-list.ts).
  let bbase = block_base(bh + params.head0, tile.x);
  let bcount = block_list[bbase];
  for (var bt = 0u; bt < bcount; bt++) {
    let bentry = block_list[bbase + 2u + bt];
    let j0 = (bentry & ~BLOCK_FULL_FLAG) * BN;
    let full = (bentry & BLOCK_FULL_FLAG) != 0u; // a full tile runs no mask tests`
    : `  let kr = block_key_range(row0, min(row0 + BM, params.nq));
  for (var j0 = (kr.x / BN) * BN; j0 < kr.y; j0 += BN) {`
}
    // ---- S = Q K^T for this tile, DK head-dims at a time ----
    // Explicitly zeroed: a bare var declaration inside a loop is not reliably re-zeroed per iteration.
    var s = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var k0 = 0u; k0 < DP; k0 += DK) {
      workgroupBarrier();
${stageQK}
      workgroupBarrier();
      for (var kk = 0u; kk < DK; kk++) {
        let a = vec4<f32>(stage[kk * ${BM4}u + ty]);
        let bk = vec4<f32>(stage[(DK * BM) / 4u + kk * ${BN4}u + tx]);
        s[0] += a[0] * bk; s[1] += a[1] * bk; s[2] += a[2] * bk; s[3] += a[3] * bk;
      }
    }
    // ---- masks and modifiers, then the online softmax update ----
    var mx = vec4<f32>(NEG_INF);
    for (var i = 0u; i < 4u; i++) {
      let row = row0 + ty * 4u + i;
      for (var c = 0u; c < 4u; c++) {
        ${
          c.blockList
            ? `var x: f32;
        if (full) { x = score_unmasked(h, row, j0 + tx * 4u + c, s[i][c]); } else { x = score_mod(h, row, j0 + tx * 4u + c, s[i][c]); }`
            : 'let x = score_mod(h, row, j0 + tx * 4u + c, s[i][c]);'
        }
        s[i][c] = x;
        mx[i] = max(mx[i], x);
      }
    }
    ${rowReduce(c, 'max', 'mx')}
    for (var i = 0u; i < 4u; i++) {
      let mn = max(m[i], mx[i]);
      let alpha = exp(m[i] - mn);
      var p = vec4<f32>(0.0);
      for (var c = 0u; c < 4u; c++) {
        if (s[i][c] > NEG_INF) { p[c] = exp(s[i][c] - mn); }
      }
      l[i] = l[i] * alpha + p[0] + p[1] + p[2] + p[3];
      s[i] = ${c.pCast ? 'vec4<f32>(cast_p(p[0]), cast_p(p[1]), cast_p(p[2]), cast_p(p[3]))' : 'p'};
      m[i] = mn;
      for (var g = 0u; g < ${RO4}u; g++) { acc[i][g] *= alpha; }
    }
    for (var c = 0u; c < 4u; c++) {
      pt[(tx * 4u + c) * ${BM4}u + ty] = vec4<${E}>(vec4<f32>(s[0][c], s[1][c], s[2][c], s[3][c]));
    }
    // ---- O += P V, JC keys at a time ----
    for (var jc = 0u; jc < BN; jc += JC) {
      workgroupBarrier();
${stageV}
      workgroupBarrier();
      for (var jj = 0u; jj < JC; jj++) {
        let pv = vec4<f32>(pt[(jc + jj) * ${BM4}u + ty]);
        for (var g = 0u; g < ${RO4}u; g++) {
          let vv = vec4<f32>(stage[jj * ${DV4}u + g * TX + tx]);
          acc[0][g] += pv[0] * vv; acc[1][g] += pv[1] * vv; acc[2][g] += pv[2] * vv; acc[3][g] += pv[3] * vv;
        }
      }
    }
  }
  // ---- one normalization at the end; LSE for the row ----
  workgroupBarrier();
  ${rowReduce(c, '+', 'l')}
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + ty * 4u + i;
    if (row >= params.nq) { continue; }
    let inv = select(0.0, 1.0 / l[i], l[i] > 0.0);
    let obase = ${A.oRow('row')};
    for (var g = 0u; g < ${RO4}u; g++) {
      let col = (g * TX + tx) * 4u;
      for (var c = 0u; c < 4u; c++) {
        if (col + c < DV) { o[obase + col + c] = acc[i][g][c] * inv; }
      }
    }
    if (tx == 0u) {
      lse[${A.lse('row')}] = select(neg_inf_runtime(), m[i] + log(l[i]), l[i] > 0.0);
    }
  }
}
`;
  return c.varlen ? withSequenceGeometry(wgsl) : wgsl;
}
