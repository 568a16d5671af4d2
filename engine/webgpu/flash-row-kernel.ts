// The row-per-thread FlashAttention forward kernel in WGSL (f32 math; f32 or f16 storage).
//
// Where flash-kernel.ts spreads a 4×4 block of S over every thread and so has to pass P
// between threads through workgroup memory, this kernel gives each query row to TPR
// neighbouring lanes (TPR = 1 without subgroups; 2 or 4 with them, for wide heads) and
// keeps everything about that row in those lanes' registers for the whole pass: the row
// of Q, the row of O, the running max m and sum l. Each lane holds every TPR-th vec4 of the
// row (lane p: vec4s p, p + TPR, …), so the lanes of a row read neighbouring 16-byte words
// of workgroup memory and never collide in a bank.
//
// Per K/V chunk of BC keys (staged in workgroup memory by the whole workgroup, read by all
// rows at once: one broadcast per vec4), in sub-chunks of SC keys:
//   s_j   = q · k_j             (TPR > 1: partial dots combined with subgroupShuffleXor)
//   s_j   = score(s_j)          (the mask tests only on tiles that touch a mask edge)
//   m'    = max(m, max_j s_j);  when it grows, O and l are rescaled by exp(m − m')
//   p_j   = exp(s_j − m'),  l += Σ p_j,  O += Σ p_j v_j
// and one normalization O / l at the end, LSE = m + log l. No thread ever waits for another
// except around the K/V staging (two barriers per chunk).
//
// The generator unrolls every loop over registers: the per-row arrays become named values,
// so the shader compiler cannot demote them to local memory (dynamic indices into per-thread
// arrays measured several times slower: BENCHMARKS.md, "WebGPU backend, forward").
//
// Resource budget: workgroup memory BC·(DP + DVP)·4 bytes; registers per lane
// RPT·(DP + DVP)/TPR (Q and O slices) + RPT·SC (scores) + 2·RPT (m, l) floats.

import { castPWgsl } from './fp8-cast.ts';
import { PARAMS_WGSL, scoreWgsl, type ScoreSpec } from './params.ts';
import { GRID_ORDER_WGSL } from './grid-order.ts';
import { withSequenceGeometry } from './sequence-geometry.ts';
import { DENSE_ADDRESS, VARLEN_ADDRESS, VARLEN_BINDING_WGSL, varlenPrologue } from './varlen-layout.ts';

export interface RowKernelConfig {
  /** Storage type of Q, K, V (math is f32 either way). */
  elem: 'f32' | 'f16';
  /** Lanes per query row (1, 2 or 4; > 1 needs subgroups of at least that size). */
  tpr: number;
  /** Query rows per lane group. */
  rpt: number;
  /** Threads per workgroup. */
  threads: number;
  /** Keys per staged K/V chunk. */
  bc: number;
  /** Keys per unrolled sub-chunk (one max/rescale step). */
  sc: number;
  d: number;
  dv: number;
  score: ScoreSpec;
  /** A packed variable-length batch (varlen-layout.ts) instead of [B, H, N, d]. */
  varlen?: boolean;
  /** Block-sparse: the block list's WGSL (block-list.ts) at this kernel's BM × BC tiles. */
  blockList?: string;
  /** FA3's FP8 P cast (fp8-cast.ts) with this static factor before P·V; absent: P stays f32. */
  pCast?: number;
}

export function rowLayout(c: RowKernelConfig) {
  const w = 4 * c.tpr; // a row's head dims are dealt out in vec4s to TPR lanes
  const dp = Math.ceil(c.d / w) * w;
  const dvp = Math.ceil(c.dv / w) * w;
  const bm = (c.threads / c.tpr) * c.rpt;
  const bytes = c.bc * (dp + dvp) * 4;
  const regs = (c.rpt * (dp + dvp)) / c.tpr + c.rpt * c.sc + 2 * c.rpt;
  return { dp, dvp, bm, bytes, regs, qv: dp / w, ov: dvp / w };
}

export function rowKernelWgsl(c: RowKernelConfig): string {
  const L = rowLayout(c);
  const E = c.elem;
  const T = c.tpr;
  const D4 = L.dp / 4;
  const DV4 = L.dvp / 4;
  const A = c.varlen ? VARLEN_ADDRESS : DENSE_ADDRESS;
  const R = Array.from({ length: c.rpt }, (_, r) => r);
  const J = Array.from({ length: c.sc }, (_, j) => j);
  const QV = Array.from({ length: L.qv }, (_, i) => i);
  const OV = Array.from({ length: L.ov }, (_, i) => i);
  const each = <X>(xs: X[], f: (x: X) => string, sep = '\n') => xs.map(f).join(sep);
  // Global reads of 4 consecutive elements: one vec4 load where the head dim allows it.
  const vecQK = c.d % 4 === 0;
  const vecV = c.dv % 4 === 0;
  const read4 = (buf: string, base: string, col: string, width: string, vec: boolean) =>
    vec
      ? `select(vec4<f32>(0.0), vec4<f32>(${buf}[(${base} + min(${col}, ${width} - 4u)) / 4u]), ${col} < ${width})`
      : `vec4<f32>(${[0, 1, 2, 3].map((t) => `select(0.0, f32(${buf}[${base} + min(${col} + ${t}u, ${width} - 1u)]), ${col} + ${t}u < ${width})`).join(', ')})`;
  // One sub-chunk: scores, softmax update, P·V. `score` is score_full or score_edge.
  const subChunk = (score: string) => `
        ${each(R, (r) => each(J, (j) => `var s${r}_${j} = 0.0;`, ' '))}
        ${each(QV, (i) =>
          each(
            J,
            (j) => `{ let kv = ks[jb + ${j}u][${i * T}u${T > 1 ? ' + part' : ''}];
          ${each(R, (r) => `s${r}_${j} = fma(q${r}_${i}.x, kv.x, fma(q${r}_${i}.y, kv.y, fma(q${r}_${i}.z, kv.z, fma(q${r}_${i}.w, kv.w, s${r}_${j}))));`, ' ')} }`,
          ),
        )}
        ${
          T > 1
            ? each(R, (r) =>
                each(J, (j) =>
                  [1, 2]
                    .filter((o) => o < T)
                    .map((o) => `s${r}_${j} += subgroupShuffleXor(s${r}_${j}, ${o}u);`)
                    .join(' '),
                ),
              )
            : ''
        }
        ${each(
          R,
          (r) => `{
          let row = row0 + grp * ${c.rpt}u + ${r}u;
          ${each(J, (j) => `s${r}_${j} = ${score}(h, row, j0 + jb + ${j}u, s${r}_${j});`, ' ')}
          let mx = max(m${r}, ${J.reduce((acc, j) => (acc ? `max(${acc}, s${r}_${j})` : `s${r}_${j}`), '')});
          if (mx > m${r}) {
            let alpha = exp(m${r} - mx);
            ${each(OV, (i) => `o${r}_${i} *= alpha;`, ' ')}
            l${r} *= alpha;
            m${r} = mx;
          }
          ${
            score === 'score_full'
              ? each(J, (j) => `s${r}_${j} = exp(s${r}_${j} - m${r});`, ' ')
              : // masked scores are NEG_INF; while a row has seen nothing else m is NEG_INF too
                each(J, (j) => `s${r}_${j} = select(0.0, exp(s${r}_${j} - m${r}), s${r}_${j} > NEG_INF);`, ' ')
          }
          l${r} += ${J.map((j) => `s${r}_${j}`).join(' + ')};
          ${c.pCast ? each(J, (j) => `s${r}_${j} = cast_p(s${r}_${j});`, ' ') : ''}
        }`,
        )}
        ${each(
          J,
          (j) => `{
          ${each(OV, (i) => `{ let vv = vs[jb + ${j}u][${i * T}u${T > 1 ? ' + part' : ''}]; ${each(R, (r) => `o${r}_${i} = fma(vec4<f32>(s${r}_${j}), vv, o${r}_${i});`, ' ')} }`)}
        }`,
        )}`;

  const wgsl = /* wgsl */ `
${E === 'f16' ? 'enable f16;' : ''}
${T > 1 ? 'enable subgroups;' : ''}
${PARAMS_WGSL}
${GRID_ORDER_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<${vecQK ? `vec4<${E}>` : E}>;
@group(0) @binding(2) var<storage, read> k: array<${vecQK ? `vec4<${E}>` : E}>;
@group(0) @binding(3) var<storage, read> v: array<${vecV ? `vec4<${E}>` : E}>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;${c.varlen ? VARLEN_BINDING_WGSL : ''}${c.blockList ?? ''}
${scoreWgsl(c.score)}
${c.pCast ? castPWgsl(c.pCast) : ''}

const BM = ${L.bm}u; const BC = ${c.bc}u; const SC = ${c.sc}u; const NT = ${c.threads}u;
const D = ${c.d}u; const DV = ${c.dv}u;

// K and V chunks, [key][vec4 of head dims]. Two-dimensional so that, under the bounds
// checks browsers add to every runtime index, the hot loop's inner index is a constant
// (no check) and only the key index is clamped.
var<workgroup> ks: array<array<vec4<f32>, ${D4}>, ${c.bc}>;
var<workgroup> vs: array<array<vec4<f32>, ${DV4}>, ${c.bc}>;

@compute @workgroup_size(${c.threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let part = lid % ${T}u;          // which vec4s of the row this lane holds
  let grp = lid / ${T}u;           // lane group = RPT query rows
${
  c.varlen
    ? varlenPrologue('BM')
    : `  // Longest tiles first (bottom query blocks see the most keys under a causal mask), in
  // groups of params.head_group heads: grid-order.ts.
  let tile = grid_tile(wid, nwg);
  let row0 = tile.x * BM;
  let bh = tile.y; // (batch, query head) row within this dispatch's window (binding-windows.ts)
  let h = (bh + params.head0) % params.hq;${c.score.user ? '\n  mask_row = bh + params.head0;' : ''}
  let bhk = kv_head(bh);
  let qbase = bh * params.nq * D;
  let kbase = bhk * params.nk * D;
  let vbase = bhk * params.nk * DV;`
}
  let sink = sink_logit(h);

  ${each(
    R,
    (r) => `
  let qrow${r} = min(row0 + grp * ${c.rpt}u + ${r}u, params.nq - 1u); // rows past Nq compute a copy of the last row and write nothing
  ${each(QV, (i) => `let q${r}_${i} = ${read4('q', `qbase + qrow${r} * ${A.qs}`, `${4 * i * T}u + part * 4u`, 'D', vecQK)};`, '\n  ')}
  ${each(OV, (i) => `var o${r}_${i} = vec4<f32>(0.0);`, ' ')}
  var m${r} = sink;
  var l${r} = select(0.0, 1.0, sink > NEG_INF); // the sink's exp(sink − m) = 1`,
  )}

${
  c.blockList
    ? `  // Block-sparse: only the K/V tiles the block mask lists for this Q tile (block-list.ts).
  let bbase = block_base(bh + params.head0, tile.x);
  let bcount = block_list[bbase];
  for (var bt = 0u; bt < bcount; bt++) {
    let bentry = block_list[bbase + 2u + bt];
    let j0 = (bentry & ~BLOCK_FULL_FLAG) * BC;`
    : `  let kr = block_key_range(row0, min(row0 + BM, params.nq));
  for (var j0 = (kr.x / BC) * BC; j0 < kr.y; j0 += BC) {`
}
    workgroupBarrier();              // every row is done with the previous chunk
    for (var idx = lid; idx < BC * ${D4}u; idx += NT) {
      let key = j0 + idx / ${D4}u; let col = (idx % ${D4}u) * 4u;
      var x = vec4<f32>(0.0);
      if (key < params.nk) { x = ${read4('k', `kbase + key * ${A.ks}`, 'col', 'D', vecQK)}; }
      ks[idx / ${D4}u][idx % ${D4}u] = x;
    }
    for (var idx = lid; idx < BC * ${DV4}u; idx += NT) {
      let key = j0 + idx / ${DV4}u; let col = (idx % ${DV4}u) * 4u;
      var x = vec4<f32>(0.0);
      if (key < params.nk) { x = ${read4('v', `vbase + key * ${A.vs}`, 'col', 'DV', vecV)}; }
      vs[idx / ${DV4}u][idx % ${DV4}u] = x;
    }
    workgroupBarrier();
    // Tiles clear of every mask edge and of Nk skip the per-score mask tests.
    let full = ${c.blockList ? '(bentry & BLOCK_FULL_FLAG) != 0u' : 'tile_visible(row0, min(row0 + BM, params.nq), j0, j0 + BC)'};
    for (var jb = 0u; jb < BC; jb += SC) {
      if (full) {${subChunk('score_full')}
      } else {${subChunk('score_edge')}
      }
    }
  }

  ${each(
    R,
    (r) => `{
    let row = row0 + grp * ${c.rpt}u + ${r}u;
    if (row < params.nq) {
      let inv = select(0.0, 1.0 / l${r}, l${r} > 0.0);
      let obase = ${A.oRow('row')};
      ${each(
        OV,
        (i) => `{ let col = ${4 * i * T}u + part * 4u; let x = o${r}_${i} * inv;
        for (var t = 0u; t < 4u; t++) { if (col + t < DV) { o[obase + col + t] = x[t]; } } }`,
      )}
      if (part == 0u) { lse[${A.lse('row')}] = select(neg_inf_runtime(), m${r} + log(l${r}), l${r} > 0.0); }
    }
  }`,
  )}
}
`;
  return c.varlen ? withSequenceGeometry(wgsl) : wgsl;
}

/**
 * The row kernel's configuration for a problem, or undefined where the 4×4-tiled kernel
 * (flash-kernel.ts) is the better choice: up to d = 64 the row kernel (with subgroups, 2 rows
 * per 2 lanes and sub-chunks of 8 keys) measured faster than the tiled one; wider heads use
 * the tiled kernel unless a caller asks for lanes per row (BENCHMARKS.md, "WebGPU backend, forward").
 */
export function chooseRowConfig(
  limits: { maxWorkgroupStorage: number; maxInvocations: number },
  { subgroupMin, ...base }: Pick<RowKernelConfig, 'elem' | 'd' | 'dv' | 'score'> & { subgroupMin: number },
  prefer: Partial<Pick<RowKernelConfig, 'tpr' | 'rpt' | 'threads' | 'bc' | 'sc'>> = {},
): RowKernelConfig | undefined {
  if (prefer.tpr === undefined && Math.max(base.d, base.dv) > 64) return undefined;
  const pair = subgroupMin >= 2; // two lanes per row pair need shuffles
  const tpr = prefer.tpr ?? (pair ? 2 : 1);
  const rpt = prefer.rpt ?? (prefer.tpr === undefined && pair ? 2 : 1);
  if (tpr > 1 && subgroupMin < tpr) return undefined;
  for (const threads of [prefer.threads ?? 128, 128, 64]) {
    for (const bc of [prefer.bc ?? 32, 32, 16]) {
      const sc = Math.min(prefer.sc ?? 8, bc);
      if (bc % sc !== 0 || threads > limits.maxInvocations) continue;
      const c: RowKernelConfig = { ...base, tpr, rpt, threads, bc, sc };
      const L = rowLayout(c);
      // Registers: Q and O slices, scores, m and l; past ~168 floats the compiler spills.
      if (L.bytes <= limits.maxWorkgroupStorage && L.regs <= 168) return c;
    }
  }
  return undefined;
}
