// The attention backward on subgroup matrices (tensor cores): FA2's Algorithm 2 with f16
// operands and f32 accumulation, in four kernels, in the order they run.
//
//   0–1. bwdm_kv  per (batch, key head): max |K| and max ‖V_j‖ — the bound dQ's fixed point needs
//   2. bwdm_rows  per query row: D_i = dO_i · O_i, LSE in log2 units, the row's fixed-point
//                 factor; zeroes the row's dQ accumulator
//   3. bwdm_main  one workgroup per block of BN keys, walking the query tiles (K/V outer):
//                 S, dP, P, dS recomputed per tile; dK and dV accumulate in registers;
//                 each tile's dQ contribution is added into the accumulator in HBM
//   4. bwdm_dq    dQ = accumulator / factor, back to f32
//
// Why dQ is fixed point. FA2 adds every column block's dQ_i partial into an fp32 buffer with
// atomicAdd; FA3 with TMA reduce-adds, ordered by a semaphore when asked to be deterministic.
// WGSL has atomics on i32 and u32 only. An i32 atomicAdd is as cheap as the float one (a RED
// in L2) and integer addition is associative, so the sum does not depend on which workgroup
// adds first: deterministic without FA3's ordering, at no cost. What it needs is a scale per
// row that no partial sum can overflow. Every partial is a sum of dS_ij · K_j[e] with
// |dS_ij| ≤ P_ij · |dP_ij − D_i| · τ ≤ P_ij · τ (‖dO_i‖ max_j ‖V_j‖ + |D_i|) (Cauchy–Schwarz;
// ∂s/∂(q·k) ≤ τ with a softcap too) and Σ_j P_ij ≤ 1, so
//   |dQ_i[e]| and every partial ≤ B_i = τ · max|K| · (‖dO_i‖ · max_j ‖V_j‖ + |D_i|).
// The factor is 2^(29 − ⌈log2 B_i⌉): partials stay below 2^29 (room for rounding and the f16
// rounding of dS), and each add rounds to B_i · 2^−30, which over Nk / BN adds is far below
// the f16 rounding of dS itself. The bound is cheap (kernels 1–2 read K, V, O, dO once).
//
// One workgroup holds W subgroups; subgroup w owns keys [w·T, w·T + T) of the block (T = 16,
// the matrix side) and keeps, for the whole pass, in registers: its K and V rows as left
// matrices (for Sᵀ = K Qᵀ and dPᵀ = V dOᵀ), the K columns it needs for its share of dQ as right
// matrices, and its dK and dV accumulators. Per query tile of BM rows, staged in workgroup
// memory (Q, dO, and per row LSE, D and the factor):
//   B. Sᵀ and dPᵀ of its T keys × BM rows, stored f32 to its stripe;
//   D. on plain lanes: P = exp2(s·log2e − LSE·log2e), masks, dS = P (dP − D) ∂s/∂(q·k), written f16;
//   F. dV += Pᵀ dO, dK += dSᵀ Q (its stripe as the left matrix); dQ (BM × d) = dS K split into
//      T × T blocks dealt round-robin to the subgroups (rows of dS from every stripe); each
//      block is stored f32 and added into the accumulator, row factor applied: at d = 128 from
//      the Sᵀ/dPᵀ stripes right after the next barrier, at d ≤ 64 from a buffer of its own
//      during the next tile's step B (overlapAdds: which is faster differs, measured).
// Four barriers per tile; the next tile's Q and dO are fetched into registers while a tile
// computes, as the forward does with K and V.
//
// As in the forward (flash-matrix-kernel.ts, header), the offsets of the matrix loads whose
// results feed accumulators used only later (the P, dS, dO and Q loads of step F) are run-time
// values: the driver has been seen to move untested matrix loads across barriers.

import { PARAMS, scoreHelpers } from './backward-kernels.ts';
import type { WebGpuContext } from './device.ts';

export interface MatrixBackwardShape {
  d: number;
  dv: number;
  /** Query heads per key head (GQA/MQA): dK and dV sum over them. */
  group: number;
  softcap: boolean;
  alibi: boolean;
}

export interface MatrixBackwardConfig extends MatrixBackwardShape {
  /** Side of the square f16 × f16 → f32 matrix shape (16 on NVIDIA). */
  t: number;
  sg: number;
  /** Subgroups per workgroup; BN = warps · t keys. */
  warps: number;
  /** Query rows per tile. */
  bm: number;
  stagger: boolean;
  overlapAdds: boolean;
}

/** What a caller (the benchmark's grid) may prefer. */
export interface MatrixBackwardPrefs {
  warps?: number;
  bm?: number;
  /** Walk the query tiles from a start spread over the key blocks (default true); false: all from the first. */
  stagger?: boolean;
  /**
   * dQ blocks parked in a buffer of their own (PSW unpadded to make room) and added during the
   * next tile's Sᵀ/dPᵀ MMAs instead of between two barriers. Default at head dims up to 64,
   * where it measured faster; at d = 128 it measured slower, so wider heads keep the dQ blocks
   * in the Sᵀ/dPᵀ stripes (BENCHMARKS.md, "WebGPU backward on subgroup matrices").
   */
  overlapAdds?: boolean;
  /** The benchmark's studies edit the main kernel's WGSL (engine/bench/backward-studies.ts): wrong gradients on purpose. */
  rewriteMain?: (wgsl: string) => string;
}

/** Fixed-point headroom: partials stay below 2^FX_BITS of i32's 2^31. */
export const FX_BITS = 29;

export function matrixBackwardLayout(c: MatrixBackwardConfig) {
  const T = c.t;
  const bn = c.warps * T;
  const dp = Math.ceil(c.d / T) * T;
  const dvp = Math.ceil(c.dv / T) * T;
  const qsw = dp + 8; // staged Q row stride (halves): 16 bytes of padding per row
  const osw = dvp + 8; // staged dO row stride
  const ssw = c.bm + 4; // Sᵀ / dPᵀ stripe row stride (floats)
  const psw = c.bm + (c.overlapAdds ? 0 : 8); // Pᵀ / dSᵀ row stride (halves); unpadded to make room for dqs
  const cb = dp / T; // dQ column blocks
  const blocks = (c.bm / T) * cb; // dQ T × T blocks per tile
  const perWarp = Math.ceil(blocks / c.warps);
  // The distinct dQ column blocks a subgroup's u-th block falls in: (w + W·u) mod CB, whose
  // repeats do not depend on w. kr registers are loaded once per distinct value.
  const colOf = Array.from({ length: perWarp }, (_, u) => (c.warps * u) % cb);
  const distinct = [...new Set(colOf)];
  const halves = c.bm * qsw + c.bm * osw + 2 * bn * psw;
  const dqs = c.overlapAdds ? c.bm * dp : 0; // the tile's dQ, [row][dim], when it has a buffer of its own
  const floats = 2 * bn * ssw + 2 * 4 * c.bm + dqs;
  const bytes = halves * 2 + floats * 4;
  // Each subgroup parks its dQ blocks in its own Sᵀ and dPᵀ stripes (T·SSW floats each).
  const scratchBlocks = c.overlapAdds ? Infinity : 2 * Math.floor(ssw / T);
  return { bn, dp, dvp, qsw, osw, ssw, psw, cb, blocks, perWarp, colOf, distinct, bytes, threads: c.warps * c.sg, scratchBlocks };
}

/** Tried in this order: (subgroups, query rows per tile). */
const SHAPES: [number, number][] = [
  [8, 16],
  [4, 16],
  [4, 32],
  [2, 16],
  [1, 16],
];

/** The adapter's square f16 matrix shape, or undefined: this path then is not offered. */
export function squareMatrixSide(ctx: Pick<WebGpuContext, 'matrixConfigs' | 'subgroupMinSize' | 'subgroupMaxSize'>): number | undefined {
  const sg = ctx.subgroupMinSize === ctx.subgroupMaxSize ? ctx.subgroupMinSize : Math.max(ctx.subgroupMinSize, 32);
  const sq = ctx.matrixConfigs.filter((m) => m.M === m.N && m.N === m.K && sg % m.M === 0).sort((a, b) => b.M - a.M);
  return sq[0]?.M;
}

export function chooseMatrixBackward(
  ctx: Pick<WebGpuContext, 'limits' | 'matrixConfigs' | 'subgroupMinSize' | 'subgroupMaxSize' | 'wgslFeatures'>,
  shape: MatrixBackwardShape,
  prefer: MatrixBackwardPrefs = {},
): MatrixBackwardConfig {
  const t = squareMatrixSide(ctx);
  if (!t) throw new Error('the subgroup-matrix backward needs a square f16 matrix shape, which this adapter does not offer');
  const sg = ctx.subgroupMinSize === ctx.subgroupMaxSize ? ctx.subgroupMinSize : Math.max(ctx.subgroupMinSize, 32);
  const subgroupId = ctx.wgslFeatures.includes('subgroup_id') && ctx.wgslFeatures.includes('subgroup_uniformity');
  const shapes = prefer.warps && prefer.bm ? [[prefer.warps, prefer.bm] as [number, number], ...SHAPES] : SHAPES;
  for (const [warps, bm] of shapes) {
    if ((warps > 1 && !subgroupId) || bm % t !== 0) continue;
    const c: MatrixBackwardConfig = {
      ...shape,
      t,
      sg,
      warps,
      bm,
      stagger: prefer.stagger ?? true,
      overlapAdds: prefer.overlapAdds ?? Math.ceil(shape.d / t) * t <= 64,
    };
    const L = matrixBackwardLayout(c);
    if ((t * bm) % sg !== 0 || L.perWarp > L.scratchBlocks) continue;
    if (L.threads <= ctx.limits.maxInvocations && L.bytes <= ctx.limits.maxWorkgroupStorage) return c;
  }
  throw new Error(`no subgroup-matrix backward tile fits this adapter's limits for d=${shape.d}, dv=${shape.dv}`);
}

const ENABLES = /* wgsl */ `
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;`;

/**
 * Kernel 0: zero the per-head maxima that kernel 1 raises with atomicMax. One workgroup.
 */
export function bwdmClearWgsl(): string {
  return /* wgsl */ `
${PARAMS}
@group(0) @binding(1) var<storage, read_write> kvs: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
  for (var i = lid; i < prm.batch * prm.hk * 2u; i += 256u) { kvs[i] = 0u; }
}
`;
}

/**
 * Kernel 1: per (batch, key head) max |K| and max_j ‖V_j‖², raised by atomicMax on the bit
 * patterns (non-negative floats order as unsigned integers). One subgroup per key, its lanes
 * reading consecutive elements; 8 keys per workgroup. Grid [ceil(Nk / 8), batch · Hk].
 */
export function bwdmKvWgsl(d: number, dv: number): string {
  return /* wgsl */ `
enable f16;
enable subgroups;
${PARAMS}
@group(0) @binding(1) var<storage, read> k: array<f16>;
@group(0) @binding(2) var<storage, read> v: array<f16>;
@group(0) @binding(3) var<storage, read_write> kvs: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let j = wg.x * (256u / sgs) + lid / sgs;
  var kmax = 0.0;
  var vv = 0.0;
  if (j < prm.nk) {
    let row = wg.y * prm.nk + j;
    for (var e = lane; e < ${d}u; e += sgs) { kmax = max(kmax, abs(f32(k[row * ${d}u + e]))); }
    for (var e = lane; e < ${dv}u; e += sgs) { let x = f32(v[row * ${dv}u + e]); vv += x * x; }
  }
  kmax = subgroupMax(kmax);
  vv = subgroupAdd(vv);
  if (lane == 0u && j < prm.nk) {
    atomicMax(&kvs[wg.y * 2u], bitcast<u32>(kmax));
    atomicMax(&kvs[wg.y * 2u + 1u], bitcast<u32>(vv));
  }
}
`;
}

/**
 * Kernel 2: per query row, (LSE·log2 e, D, factor, 0) into `rows`, and the row's dQ
 * accumulator zeroed. LSE arrives finite (the host writes 3e38 for rows that see no key).
 * One subgroup per row, 256 / subgroup-size rows per workgroup; grid folded into 2-D.
 */
export function bwdmRowsWgsl(d: number, dv: number, group: number): string {
  return /* wgsl */ `
enable f16;
enable subgroups;
${PARAMS}
@group(0) @binding(1) var<storage, read> o: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f16>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read> kvs: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> rows: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> dqacc: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let r = (wg.x + wg.y * 65535u) * (256u / sgs) + lid / sgs;
  // No early return before the subgroup sums: they need the whole subgroup (uniform control flow).
  let live = r < prm.batch * prm.hq * prm.nq;
  var dsum = 0.0;
  var dn = 0.0;
  for (var c = lane; live && c < ${dv}u; c += sgs) {
    let g = f32(dout[r * ${dv}u + c]);
    dsum += o[r * ${dv}u + c] * g;
    dn += g * g;
  }
  dsum = subgroupAdd(dsum);
  dn = subgroupAdd(dn);
  if (!live) { return; }
  for (var c = lane; c < ${d}u; c += sgs) { dqacc[r * ${d}u + c] = 0; }
  if (lane != 0u) { return; }
  let bh = r / prm.nq;
  let b = bh / prm.hq;
  let h = bh % prm.hq;
  let st = kvs[b * prm.hk + h / ${group}u];
  let bound = st.x * abs(prm.scale) * (sqrt(dn) * sqrt(st.y) + abs(dsum));
  let e = ceil(log2(max(bound, 1.0e-30)));
  let factor = exp2(clamp(${FX_BITS}.0 - e, -126.0, 126.0));
  let l = lse[r];
  rows[r] = vec4<f32>(select(l * 1.4426950408889634, 3.0e38, l >= 1.0e38), dsum, factor, 0.0);
}
`;
}

/** Kernel 4: dQ = accumulator / factor. Grid [ceil(rows · d / 256) folded into 2-D]; 256 threads. */
export function bwdmDqWgsl(d: number): string {
  return /* wgsl */ `
${PARAMS}
@group(0) @binding(1) var<storage, read> rows: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dqacc: array<i32>;
@group(0) @binding(3) var<storage, read_write> dq: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = gid.x + gid.y * 65535u * 256u;
  if (idx >= prm.batch * prm.hq * prm.nq * ${d}u) { return; }
  dq[idx] = f32(dqacc[idx]) / rows[idx / ${d}u].z;
}
`;
}

const lines = (n: number, f: (i: number) => string, sep = '\n') => Array.from({ length: n }, (_, i) => f(i)).join(sep);

/** visible() without branches: both bounds tested with non-short-circuit & and |. */
const VISIBLE_BF = /* wgsl */ `
fn visible_bf(i: i32, j: i32) -> bool {
  let rel = j - (i + prm.diag);
  return ((prm.left < 0) | (rel >= -prm.left)) & ((prm.right < 0) | (rel <= prm.right));
}`;

/**
 * Step D for one element, from the scores' dot (Sᵀ), dpv (dPᵀ), the row's rs (LSE·log2 e, D),
 * i, j, the head h and c2 = τ·log2 e: P and dS as p and dsv. Plain problems fold τ·log2 e into
 * one multiply; branchFree uses visible_bf and non-short-circuit tests.
 */
function stepDElement(shape: Pick<MatrixBackwardShape, 'softcap' | 'alibi'>, branchFree: boolean): string {
  const ok = branchFree
    ? '(j < prm.nk) & (i < prm.nq) & visible_bf(i32(i), i32(j))'
    : 'j < prm.nk && i < prm.nq && visible(i32(i), i32(j))';
  return !shape.softcap && !shape.alibi
    ? `let x = dot * c2 - rs.x;
        let ok = ${ok};
        let p = select(0.0, exp2(x), ok);
        let dsv = p * (dpv - rs.y) * prm.scale;`
    : `let ok = ${ok};
        let sc = score(h, i32(i), i32(j), dot);
        let p = select(0.0, exp2(sc.x * LOG2E - rs.x), ok);
        let dsv = p * (dpv - rs.y) * sc.y;`;
}

/**
 * A tile's Q or dO rows (BM × width, zeros past Nq and width), fetched into registers as
 * vec4<f16> groups (fetch) and written to workgroup memory at the next tile's top (store).
 */
function tileStaging(bm: number, threads: number, name: string, buf: string, width: number, padded: number, stride: string) {
  const total = (bm * padded) / 4;
  const per = Math.ceil(total / threads);
  const at = (t: number) => `let idx = lid + ${t * threads}u; let rr = idx / ${padded / 4}u; let col = (idx % ${padded / 4}u) * 4u;`;
  const decl = lines(per, (t) => `var ${name}${t} = vec4<f16>(0.0);`, ' ');
  const fetch = (row0: string, base: string) =>
    lines(
      per,
      (t) => `{ ${at(t)}
      ${name}${t} = vec4<f16>(0.0);
      if (idx < ${total}u && ${row0} + rr < prm.nq && col < ${width}u) {
        let a = (${base} + ${row0} + rr) * ${width}u + col;
        ${name}${t} = ${width % 4 === 0 ? `${buf}4[a / 4u]` : `vec4<f16>(${[0, 1, 2, 3].map((e) => `select(f16(0.0), ${buf}[min(a + ${e}u, (${base} + ${row0} + rr) * ${width}u + ${width - 1}u)], col + ${e}u < ${width}u)`).join(', ')})`};
      } }`,
      '\n      ',
    );
  // Four scalar stores spelled out: a vector indexed by a loop variable may not stay in registers.
  const store = (arr: string, base = '') =>
    lines(
      per,
      (t) =>
        `{ ${at(t)} if (idx < ${total}u) { let o = ${base}rr * ${stride} + col; ${['x', 'y', 'z', 'w'].map((e, n) => `${arr}[o + ${n}u] = ${name}${t}.${e};`).join(' ')} } }`,
      '\n      ',
    );
  return { decl, fetch, store };
}

/**
 * Kernel 3. Grid [ceil(Nk / BN), batch · Hk]. Bindings: 1 Q, 2 K, 3 V, 4 dO (f16), 5 rows,
 * 6 dQ accumulator (atomic i32), 7 dK, 8 dV (f32), 9 ALiBi slopes.
 */
export function bwdmMainWgsl(c: MatrixBackwardConfig): string {
  const L = matrixBackwardLayout(c);
  const T = c.t;
  const W = c.warps;
  const DT = L.dp / T; // K / Q / dK column blocks
  const VT = L.dvp / T; // V / dO / dV column blocks
  const RB = c.bm / T; // row blocks of a query tile
  const KB = L.bn / T; // key blocks of the workgroup
  const left = `subgroup_matrix_left<f16, ${T}, ${T}>`;
  const right = `subgroup_matrix_right<f16, ${T}, ${T}>`;
  const result = `subgroup_matrix_result<f32, ${T}, ${T}>`;
  const rounds = L.bn / c.bm; // K/V staging rounds at the start, BM rows each through qs / dos
  // dQ blocks as two partial sums (even and odd key blocks) where the scratch holds two per block.
  const split = !c.overlapAdds && KB > 1 && L.perWarp <= L.scratchBlocks / 2;
  const ov = c.overlapAdds;

  // A tile's per-row (LSE·log2 e, D, factor), fetched a tile ahead like Q and dO (a global
  // read between two barriers would hold the whole workgroup for its latency every tile).
  const rowFetch = (row0: string, base: string) =>
    `if (lid < BM) { let i = ${row0} + lid; prow = select(vec4<f32>(3.0e38, 0.0, 0.0, 0.0), rows[${base} + min(i, prm.nq - 1u)], i < prm.nq); }`;
  // The workgroup's dQ adds: chunk k of the tile's BM × DP terms, one term per thread.
  const addChunks = Math.ceil((c.bm * L.dp) / L.threads);
  const qStage = tileStaging(c.bm, L.threads, 'pq', 'q', c.d, L.dp, 'QSW');
  const oStage = tileStaging(c.bm, L.threads, 'po', 'dout', c.dv, L.dvp, 'OSW');

  // K (or V) rows j0 + [first, first + BM) of this workgroup into qs (dos), zeros past Nk and d.
  const stageKv = (arr: string, buf: string, width: number, padded: number, stride: string, first: number) => `
    for (var idx = lid; idx < ${c.bm * padded}u; idx += NT) {
      let rr = idx / ${padded}u; let col = idx % ${padded}u;
      let j = j0 + ${first}u + rr;
      var x = f16(0.0);
      if (j < prm.nk && col < ${width}u) { x = ${buf}[(kvb + j) * ${width}u + col]; }
      ${arr}[rr * ${stride} + col] = x;
    }`;
  // Right matrices of K for dQ: kr{g}_{kb} = K[kb·T.., cb·T..] for the g-th distinct column offset.
  const krName = (u: number, kb: number) => `kr${L.distinct.indexOf(L.colOf[u])}_${kb}`;
  const startup = lines(rounds, (r) => {
    const first = r * c.bm;
    const kbs = Array.from({ length: KB }, (_, kb) => kb).filter((kb) => kb * T >= first && kb * T < first + c.bm);
    return `  // Staging round ${r}: keys [${first}, ${first + c.bm}) of the block.
${stageKv('qs', 'k', c.d, L.dp, 'QSW', first)}
${stageKv('dos', 'v', c.dv, L.dvp, 'OSW', first)}
  workgroupBarrier();
  if (w * ${T}u / BM == ${r}u) {
    let off = w * ${T}u - ${first}u;
${lines(DT, (i) => `    kl${i} = subgroupMatrixLoad<${left}, row_major>(&qs, off * QSW + ${i * T}u, QSW);`)}
${lines(VT, (i) => `    vl${i} = subgroupMatrixLoad<${left}, row_major>(&dos, off * OSW + ${i * T}u, OSW);`)}
  }
${kbs.map((kb) => lines(L.distinct.length, (g) => `  kr${g}_${kb} = subgroupMatrixLoad<${right}, row_major>(&qs, ${kb * T - first}u * QSW + kcol${g} * ${T}u, QSW);`)).join('\n')}
  workgroupBarrier();`;
  });

  // Step D spelled out element by element, the lane's query row hoisted (a lane keeps its row
  // when the subgroup size is a multiple of BM), mask tests without branches: measured faster
  // than a loop (BENCHMARKS.md, "WebGPU backward on subgroup matrices").
  const dx = c.sg % c.bm === 0;
  const elementwise = stepDElement(c, dx);

  return /* wgsl */ `${ENABLES}
${W > 1 ? 'requires subgroup_id, subgroup_uniformity;' : ''}
${PARAMS}
@group(0) @binding(1) var<storage, read> ${c.d % 4 === 0 ? 'q4: array<vec4<f16>>' : 'q: array<f16>'};
@group(0) @binding(2) var<storage, read> k: array<f16>;
@group(0) @binding(3) var<storage, read> v: array<f16>;
@group(0) @binding(4) var<storage, read> ${c.dv % 4 === 0 ? 'dout4: array<vec4<f16>>' : 'dout: array<f16>'};
@group(0) @binding(5) var<storage, read> rows: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> dqacc: array<atomic<i32>>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dvout: array<f32>;
${c.alibi ? '@group(0) @binding(9) var<storage, read> slopes: array<f32>;' : ''}
${scoreHelpers(c)}
${dx ? VISIBLE_BF : ''}
const T = ${T}u; const BN = ${L.bn}u; const BM = ${c.bm}u; const D = ${c.d}u; const DV = ${c.dv}u;
const NT = ${L.threads}u; const SG = ${c.sg}u;
const QSW = ${L.qsw}u; const OSW = ${L.osw}u; const SSW = ${L.ssw}u; const PSW = ${L.psw}u;
const LOG2E = 1.4426950408889634;

var<workgroup> qs: array<f16, ${c.bm * L.qsw}>;     // Q tile [row][dim]; K rows at the start
var<workgroup> dos: array<f16, ${c.bm * L.osw}>;    // dO tile [row][dim]; V rows at the start
var<workgroup> sts: array<f32, ${L.bn * L.ssw}>;    // Sᵀ stripes [key][row]; dQ blocks after step D
var<workgroup> dps: array<f32, ${L.bn * L.ssw}>;    // dPᵀ stripes [key][row]; dQ blocks after step D
var<workgroup> pts: array<f16, ${L.bn * L.psw}>;    // Pᵀ [key][row]
var<workgroup> dss: array<f16, ${L.bn * L.psw}>;    // dSᵀ [key][row]
var<workgroup> rst: array<vec4<f32>, ${2 * c.bm}>;  // per row (LSE·log2 e, D, factor), two tiles
${ov ? `var<workgroup> dqs: array<f32, ${c.bm * L.dp}>;   // the last tile's dQ [row][dim], added during the next tile's MMAs` : ''}

// The dQ blocks of the tile whose rows start at grow0 (global row index), parked by every
// subgroup, added into the accumulator with the rows' factors (rst slot par) by the whole
// workgroup: each subgroup takes 32 consecutive dims of a row (128 contiguous bytes, as few
// L2 sectors per atomic instruction as a row allows).${split ? ' Each block is the sum of two\n// partials (even and odd key blocks: two short MMA chains instead of one long one).' : ''}
${
  ov
    ? `// Branch-free (masked elements add 0 to a row of their own tile), so that it can share a
// basic block with the next tile's MMAs. Before the first tile dqs holds zeros.
fn add_dq(lid: u32, grow0: u32, tile_row0: u32, par: u32) {
${lines(
  addChunks,
  (k) => `  {
    let idx = min(lid + ${k * L.threads}u, ${c.bm * L.dp - 1}u);
    let r = idx / ${L.dp}u; let col = idx % ${L.dp}u;
    let ok = ${(k + 1) * L.threads > c.bm * L.dp ? `lid + ${k * L.threads}u < ${c.bm * L.dp}u && ` : ''}tile_row0 + r < prm.nq && col < D;
    let rr = select(0u, r, ok); let cc = select(0u, col, ok);
    atomicAdd(&dqacc[(grow0 + rr) * D + cc], select(0, i32(round(dqs[idx] * rst[par * BM + r].z)), ok));
  }`,
)}
}`
    : `fn add_dq(lid: u32, grow0: u32, tile_row0: u32, par: u32) {
${lines(
  addChunks,
  (k) => `  {
    let idx = lid + ${k * L.threads}u; let r = idx / ${L.dp}u; let col = idx % ${L.dp}u;
    let blk = (r / T) * ${L.cb}u + col / T;
    let owner = blk % ${W}u; let u = blk / ${W}u;
    let at = owner * T * SSW + (r % T) * T + col % T;
    ${
      split
        ? 'let x = sts[at + u * T * T] + dps[at + u * T * T];'
        : `let x = select(dps[at + (u - ${L.scratchBlocks / 2}u) * T * T], sts[at + u * T * T], u < ${L.scratchBlocks / 2}u);`
    }
    if (${(k + 1) * L.threads > c.bm * L.dp ? `idx < ${c.bm * L.dp}u && ` : ''}tile_row0 + r < prm.nq && col < D) {
      atomicAdd(&dqacc[(grow0 + r) * D + col], i32(round(x * rst[par * BM + r].z)));
    }
  }`,
)}
}`
}

@compute @workgroup_size(${L.threads})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32${W > 1 ? ', @builtin(subgroup_id) sgid: u32' : ''}) {
  let w = ${W > 1 ? 'sgid' : '0u'};
  let b = wg.y / prm.hk;
  let hk = wg.y % prm.hk;
  let j0 = wg.x * BN;
  let kvb = (b * prm.hk + hk) * prm.nk;
  let c2 = prm.scale * LOG2E;

  // K and V of this subgroup's keys as left matrices, K columns for its dQ blocks as right
  // matrices: loaded once, BM rows at a time through qs and dos.
${lines(DT, (i) => `  var kl${i} = ${left}();`)}
${lines(VT, (i) => `  var vl${i} = ${left}();`)}
${lines(L.distinct.length, (g) => `  let kcol${g} = (w + ${L.distinct[g]}u) % ${L.cb}u;\n${lines(KB, (kb) => `  var kr${g}_${kb} = ${right}();`)}`)}
${startup}
${lines(DT, (i) => `  var dk${i} = ${result}();`)}
${lines(VT, (i) => `  var dv${i} = ${result}();`)}

  // Query rows any key of the block can see: the band around the diagonal, clipped.
  let jLast = i32(min(j0 + BN, prm.nk)) - 1;
  var iLo = 0;
  if (prm.right >= 0) { iLo = max(0, i32(j0) - prm.diag - prm.right); }
  var iHi = i32(prm.nq);
  if (prm.left >= 0) { iHi = min(iHi, jLast - prm.diag + prm.left + 1); }
  let ntiles = u32(max(0, (iHi - iLo + i32(BM) - 1) / i32(BM)));
  let total = ntiles * ${c.group}u;
  // Key blocks of one head walk the query tiles from starts spread over them (stagger), so
  // that they do not all add into the same dQ rows at the same moment.
  let rot = ${c.stagger ? '(wg.x * ntiles) / ((prm.nk + BN - 1u) / BN)' : '0u'};

  ${qStage.decl} ${oStage.decl}
  var prow = vec4<f32>(3.0e38, 0.0, 0.0, 0.0);   // lanes lid < BM: the next tile's row of (LSE·log2 e, D, factor)
  var pend_row = 0u;     // global row of the pending dQ tile's first row
  var pend_tile = 0u;    // its first row within the head
  var pending = false;
  if (total > 0u) {
    let h = hk * ${c.group}u;
    let rowBase = (b * prm.hq + h) * prm.nq;
    let f0 = u32(iLo) + (rot % ntiles) * BM;
    pend_row = rowBase + f0;
    pend_tile = f0;
    ${qStage.fetch('f0', 'rowBase')}
    ${oStage.fetch('f0', 'rowBase')}
    ${rowFetch('f0', 'rowBase')}
  }
  for (var t = 0u; t < total; t++) {
    let g = t / ntiles;
    let h = hk * ${c.group}u + g;
    let i0 = u32(iLo) + ((t + rot) % ntiles) * BM;
    let rowBase = (b * prm.hq + h) * prm.nq;
    let par = t & 1u;
    workgroupBarrier();            // every read of the last tile's Q, dO, Pᵀ, dSᵀ done; its dQ blocks stored
    ${ov ? '' : 'if (pending) { add_dq(lid, pend_row, pend_tile, 1u - par); }'}
    ${qStage.store('qs')}
    ${oStage.store('dos')}
    if (lid < BM) { rst[par * BM + lid] = prow; }
    if (t + 1u < total) {
      let gn = (t + 1u) / ntiles;
      let nBase = (b * prm.hq + hk * ${c.group}u + gn) * prm.nq;
      let n0 = u32(iLo) + ((t + 1u + rot) % ntiles) * BM;
      ${qStage.fetch('n0', 'nBase')}
      ${oStage.fetch('n0', 'nBase')}
      ${rowFetch('n0', 'nBase')}
    }
    workgroupBarrier();            // the tile staged; the dQ blocks added

    // B. Sᵀ = K Qᵀ and dPᵀ = V dOᵀ for this subgroup's keys.
${lines(
  RB,
  (rb) => `    {
      var s = ${result}();
      var dp = ${result}();
${(() => {
  // The two chains written interleaved (Sᵀ, dPᵀ, Sᵀ, …): measured about 1% faster than one after the other.
  const sl = Array.from(
    { length: DT },
    (_, i) =>
      `      s = subgroupMatrixMultiplyAccumulate(kl${i}, subgroupMatrixLoad<${right}, col_major>(&qs, ${rb * T}u * QSW + ${i * T}u, QSW), s);`,
  );
  const dl = Array.from(
    { length: VT },
    (_, i) =>
      `      dp = subgroupMatrixMultiplyAccumulate(vl${i}, subgroupMatrixLoad<${right}, col_major>(&dos, ${rb * T}u * OSW + ${i * T}u, OSW), dp);`,
  );
  const out: string[] = [];
  for (let i = 0; i < Math.max(DT, VT); i++) out.push(...(sl[i] ? [sl[i]] : []), ...(dl[i] ? [dl[i]] : []));
  return out.join('\n');
})()}
${ov && rb === 0 ? `      add_dq(lid, pend_row, pend_tile, 1u - par);   // the last tile's dQ, while these MMAs run` : ''}
      subgroupMatrixStore<row_major>(&sts, w * T * SSW + ${rb * T}u, s, SSW);
      subgroupMatrixStore<row_major>(&dps, w * T * SSW + ${rb * T}u, dp, SSW);
    }`,
)}
    workgroupBarrier();            // Sᵀ, dPᵀ stripes visible

    // D. P and dS on plain lanes, T keys × BM rows of this subgroup's stripe.
${
  dx
    ? `    {
      let r = lane % BM; let kk0 = lane / BM;
      let i = i0 + r;
      let rs = rst[par * BM + r];
${lines(
  (T * c.bm) / c.sg,
  (
    ue,
  ) => `      { let kk = kk0 + ${(ue * c.sg) / c.bm}u; let j = j0 + w * T + kk; let at = (w * T + kk) * SSW + r; let dot = sts[at]; let dpv = dps[at];
        ${elementwise}
        pts[(w * T + kk) * PSW + r] = f16(p); dss[(w * T + kk) * PSW + r] = f16(dsv); }`,
)}
    }`
    : `    for (var ue = 0u; ue < ${(T * c.bm) / c.sg}u; ue++) {
      let e = lane + ue * SG;
      let kk = e / BM; let r = e % BM;
      let j = j0 + w * T + kk;
      let i = i0 + r;
      let rs = rst[par * BM + r];
      let at = (w * T + kk) * SSW + r;
      let dot = sts[at];
      let dpv = dps[at];
      ${elementwise}
      pts[(w * T + kk) * PSW + r] = f16(p);
      dss[(w * T + kk) * PSW + r] = f16(dsv);
    }`
}
    workgroupBarrier();            // Pᵀ, dSᵀ visible

    // F. dV += Pᵀ dO and dK += dSᵀ Q over the tile's rows (kb a run-time loop: see the header).
    for (var kb = 0u; kb < BM; kb += T) {
      let pl = subgroupMatrixLoad<${left}, row_major>(&pts, w * T * PSW + kb, PSW);
      let dl = subgroupMatrixLoad<${left}, row_major>(&dss, w * T * PSW + kb, PSW);
${lines(VT, (i) => `      dv${i} = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<${right}, row_major>(&dos, kb * OSW + ${i * T}u, OSW), dv${i});`)}
${lines(DT, (i) => `      dk${i} = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<${right}, row_major>(&qs, kb * QSW + ${i * T}u, QSW), dk${i});`)}
    }
    // dQ blocks of this tile: dS (rows of every stripe) times K's columns, parked in this
    // subgroup's own stripes until the next barrier.
${lines(
  L.perWarp,
  (u) => `    {
      let blk = w + ${W * u}u;
      if (blk < ${L.blocks}u) {
        let rb = blk / ${L.cb}u;${ov ? ` let cbk = blk % ${L.cb}u;` : ''}
        var acc = ${result}();
${
  split
    ? `        var acc2 = ${result}();
`
    : ''
}${lines(KB, (kb) => `        ${split && kb % 2 ? 'acc2' : 'acc'} = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<${left}, col_major>(&dss, ${kb * T}u * PSW + rb * T, PSW), ${krName(u, kb)}, ${split && kb % 2 ? 'acc2' : 'acc'});`)}
${
  ov
    ? `        subgroupMatrixStore<row_major>(&dqs, rb * T * ${L.dp}u + cbk * T, acc, ${L.dp}u);`
    : split
      ? `        subgroupMatrixStore<row_major>(&sts, w * T * SSW + ${u * T * T}u, acc, T);
        subgroupMatrixStore<row_major>(&dps, w * T * SSW + ${u * T * T}u, acc2, T);`
      : `        subgroupMatrixStore<row_major>(&${u < L.scratchBlocks / 2 ? 'sts' : 'dps'}, w * T * SSW + ${(u % (L.scratchBlocks / 2)) * T * T}u, acc, T);`
}
      }
    }`,
)}
    pending = true;
    pend_row = rowBase + i0;
    pend_tile = i0;
  }
  workgroupBarrier();
  if (pending) { add_dq(lid, pend_row, pend_tile, (total - 1u) & 1u); }

  // dK and dV out, one T × T block at a time through this subgroup's Sᵀ stripe.
  let key0 = j0 + w * T;
${[...lines(DT, (i) => `dk|${i}`).split('\n'), ...lines(VT, (i) => `dv|${i}`).split('\n')]
  .map((s) => {
    const [kind, i] = s.split('|');
    const [out, width] = kind === 'dk' ? ['dk', 'D'] : ['dvout', 'DV'];
    return `  workgroupBarrier();
  subgroupMatrixStore<row_major>(&sts, w * T * SSW, ${kind}${i}, T);
  workgroupBarrier();
  for (var e = lane; e < T * T; e += SG) {
    let j = key0 + e / T; let col = ${Number(i) * T}u + e % T;
    if (j < prm.nk && col < ${width}) { ${out}[(kvb + j) * ${width} + col] = sts[w * T * SSW + e]; }
  }`;
  })
  .join('\n')}
}
`;
}
