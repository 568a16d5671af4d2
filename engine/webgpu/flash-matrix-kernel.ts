// The tensor-core path: the FA2 forward pass with both matmuls on subgroup matrices
// (chromium-experimental-subgroup-matrix; on NVIDIA, Dawn lowers them to Vulkan cooperative
// matrices, i.e. mma instructions). f16 operands, f32 accumulation.
//
// A workgroup is W subgroups; subgroup w owns query rows [w·M, w·M + M) of a BM = W·M tile.
// Its Q rows live in registers as left matrices (loaded once, see qFromBuffer) and its O rows
// as result matrices for the whole pass. Per tile of
// BN keys:
//   0. the workgroup writes the K and V tile it prefetched into registers during the previous
//      tile to workgroup memory (zeros past Nk, d, dv) and starts loading the next one (with
//      two workgroups per SM this moves into step 2: tileLoop below);
//   1. each subgroup computes its M×BN stripe of S = Q Kᵀ and stores it (f32) to its own
//      region of workgroup memory;
//   2. the online softmax runs on plain lanes (SG/M lanes per row, shuffles to combine),
//      holding the row's scores in registers between the max and the exponentials: score
//      modifiers (the mask tests only on tiles that touch a mask edge or Nk), row max,
//      P = exp2(S·log2 e − m) written as f16 (m kept in log2 units, as FA4 does);
//   3. O += P V on the result matrices in registers.
// Every matrix load reads workgroup memory inside its array, so any shape runs: Dawn
// predicates a matrix load on the whole matrix lying inside its array and returns zeros
// otherwise, which is what made loads straight from the Q/K/V buffers fail on ragged shapes
// (BENCHMARKS.md, run 2). Staged K/V is also what makes this kernel fast: run 6 measured
// 26.5 TFLOP/s loading K/V matrices from the buffers and 89.2 staging them (d = 64).
//
// How many workgroups an SM runs at once is set by workgroup memory, not registers: on the
// H200 (Dawn over Vulkan) an SM gives all its workgroups together no more than the 48 KiB
// one workgroup may have (BENCHMARKS.md, runs 30–35). So the tile is kept at or under half
// of that where the head dim allows (d = 64: 8 subgroups × 16 keys, 22.8 KB), and two
// workgroups share each SM: one's barriers and softmax run while the other's MMAs do.
// That took d = 64 from 87 to 105 TFLOP/s (causal 60 → 82), and the schedule it allows
// (tileLoop below) to 114 (causal 93). At d = 128 the half-size tile measured slower than
// one 8 × 32 workgroup per SM (107 against 125), so wide heads keep that.
//
// A subgroup matrix cannot be scaled row by row, so O is never rescaled (a stale max, as in
// FA4's lazy rescale, taken to its end). A row's max m moves freely until the row has its
// first P, while O is still zero and only l, a register, needs the factor. After that m stays,
// and P = exp(s − m) ≤ e^rescaleLog as long as no score passes m + rescaleLog; O / l and
// LSE = m + log l do not depend on which m was used, so the result is exact. A row whose
// scores do pass it sets a flag, and at the end of the pass the workgroup reads the flag once
// and, if set, runs the pass again with every row's m at the true row max (tracked through
// the first pass), which no score can exceed. Typical inputs never run twice (their row max
// is within e^rescaleLog of the first tile's); an input whose row maxima keep climbing costs
// up to twice. Before, the decision was made per tile — rescale O through workgroup memory
// when a max grew past the threshold — and making it workgroup-uniform took two barriers
// (workgroupUniformLoad) in every tile: 113.6 → 122.0 TFLOP/s at d = 64, 129.7 → 140.8 at
// d = 128, causal d = 128 80.6 → 108.4 (BENCHMARKS.md, run 53).
//
// Workgroup-memory rows are padded by 16 bytes (S: BN + 4 floats, P: BN + 8 halves, K/V:
// head dim + 8 halves): unpadded, the 16-, 32- and 64-key rows all start in the same bank and
// the softmax lanes, which read down a column, collide 16 ways.
//
// A trap, seen on the H200 (BENCHMARKS.md, runs 4 and 11–13): Dawn wraps every matrix load
// or store whose offset it cannot check at compile time in a run-time bounds test, and here
// those tests are what keep the P and V loads where the code puts them. With compile-time
// offsets (per-subgroup arrays, unrolled loops) or with Dawn's robustness off, the tests
// go, the kernel runs 10–15% faster, and its results are wrong: the driver evidently moves
// untested matrix loads across workgroup barriers (the P and V loads feed MMAs whose
// results are needed only a tile later). Making the loads' addresses depend on a value
// read at the barrier cured the loads that moved up but not those that moved down. So the
// P, V and S offsets stay run-time values; the K loads, whose results are used before the
// next barrier, have constant offsets.

import { PARAMS_WGSL, scoreWgsl, type ScoreSpec } from './params.ts';
import { GRID_ORDER_WGSL } from './grid-order.ts';
import { withSequenceGeometry } from './sequence-geometry.ts';
import { DENSE_ADDRESS, VARLEN_ADDRESS, VARLEN_BINDING_WGSL, varlenPrologue } from './varlen-layout.ts';
import type { MatrixConfig, WebGpuContext } from './device.ts';

/** What a caller (the benchmark's grid) may prefer; the rest comes from the adapter. */
export interface MatrixTilePrefs {
  /** "MxNxK" of one of the adapter's f16 configs. */
  shape?: string;
  warps?: number;
  bn?: number;
  /** Benchmark ablation: max growth allowed after a row's first P (0: any growth, so a second pass). */
  rescaleLog?: number;
  /** Benchmark study: row padding of the S stripes (floats) and P stripes (halves). */
  pad?: { s: number; p: number };
  /** Benchmark study: the K/V writes inside the softmax step (true) or at the top of the tile. */
  stagingInSoftmax?: boolean;
  /** Benchmark study: stage Q through workgroup memory (true) or load it from its buffer where that is right (false). */
  qStaged?: boolean;
  /** Benchmark study: a masked problem's key loop in three segments (the default for a tile alone on its SM) or one loop testing each tile. */
  segments?: boolean;
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
  /** Row-max growth (natural log) past which the workgroup runs its pass again from the true maxima. */
  rescaleLog: number;
  bn: number;
  d: number;
  dv: number;
  score: ScoreSpec;
  /** Row padding of the S stripes (floats) and P stripes (halves). */
  pad: { s: number; p: number };
  /** K/V tile writes inside the softmax step (two barriers per tile) or at its top (four). */
  stagingInSoftmax: boolean;
  /** A masked problem's key loop as edge / fully visible / edge segments (keyLoops in matrixKernelWgsl). */
  segments: boolean;
  /**
   * Q matrices loaded straight from the Q buffer instead of staged through the K array (which
   * then has to hold BM × K halves). Right only where Nq is a multiple of M and d of K: a
   * matrix load that reaches past the binding returns zeros, and with those divisibilities only
   * rows past Nq of the last head can (their results are discarded). Chosen for the tiles that
   * have an SM to themselves: at d = 128 it skips 8 staging rounds of two barriers each, 125 →
   * 129.5 TFLOP/s at N = 4096 (causal 74 → 80); the two-workgroup d = 64 tile measured 1–3%
   * slower with it at N ≥ 8192, so it stages Q (BENCHMARKS.md, runs 49–50). Staging Q through
   * the P array instead gave wrong Q, errors of order 1 (run 44): one more case of this
   * driver moving matrix loads (see the header).
   */
  qFromBuffer: boolean;
  /** A packed variable-length batch (varlen-layout.ts) instead of [B, H, N, d]; Q is then always staged. */
  varlen?: boolean;
}

/** The problem sizes that shape the kernel. */
export interface MatrixDims {
  d: number;
  dv: number;
  nq: number;
}

/** Max growth (natural log units) of a row's logits after its first P: P ≤ e^10 ≈ 22026, inside f16's 65504. */
export const RESCALE_LOG = 10;

/** 16 bytes of padding per S and P row (see the header). */
const PAD = { s: 4, p: 8 };

export function matrixLayout(c: MatrixKernelConfig) {
  const bm = c.warps * c.m;
  const dp = Math.ceil(c.d / c.k) * c.k;
  const dvp = Math.ceil(c.dv / c.n) * c.n;
  // f32 S stripe / O scratch row stride; the first padding column holds the row's factor
  // (1 / l), where a separate array would take 4 bytes per row more.
  const sw = Math.max(c.bn, c.n) + Math.max(1, c.pad.s);
  const pw = c.bn + c.pad.p; // f16 P row stride
  const ksw = dp + 8; // staged K row stride (halves)
  const vsw = dvp + 8; // staged V row stride (halves)
  const kHalves = c.qFromBuffer ? c.bn * ksw : Math.max(c.bn * ksw, bm * c.k); // the K array may also stage Q, K columns at a time
  const bytes = bm * pw * 2 + bm * sw * 4 + 4 + (kHalves + c.bn * vsw) * 2;
  const lanesPerRow = c.sg / c.m;
  return { bm, dp, dvp, sw, pw, ksw, vsw, kHalves, bytes, threads: c.warps * c.sg, lanesPerRow, scols: c.bn / lanesPerRow };
}

// Tried in this order (subgroups × BN). H200, N = 4096, K/V staged (BENCHMARKS.md, runs 6–7
// and 29–35):
// - 8×16, where it takes at most half the workgroup-memory limit (see the header): a 4×32
//   workgroup (23.8 KB) runs two per SM, the same padded to 27.9 KB one (run 30); at d = 64
//   8×16 (22.8 KB) gives 105 TFLOP/s against 87.7 for 8×32 (38.4 KB), causal 82 against 60
//   (runs 32–35). At d = 128 it takes 25.1 KB; even squeezed to 24.1 KB it measured 107
//   against 125 for 8×32 (run 35), so the half rule keeps it out there.
// - then d = 64: 8×32 83.9–89.2, 4×32 85.6–89.2, 4×64 43.2–45.1; d = 128: 8×32 123.4–127.1,
//   4×32 75.6–76.3 (4×64 does not fit at d = 128). A second K/V buffer, which saves the
//   barrier before each tile's staging writes, measured slower (run 8: 60.8 vs 83.9 at
//   d = 64), as did moving each tile's K and V writes to their own barriers (run 32), and a
//   phased loop with or without FA3-style ping-pong between two groups of subgroups (run 29).
const SHARED_SM_SHAPE: [number, number] = [8, 16];
const DEFAULT_SHAPES: [number, number][] = [
  [8, 32],
  [4, 32],
  [4, 64],
  [2, 32],
  [1, 32],
  [1, 16],
];

export function chooseMatrixTile(
  ctx: Pick<WebGpuContext, 'limits' | 'matrixConfigs' | 'subgroupMinSize' | 'subgroupMaxSize' | 'wgslFeatures'>,
  { d, dv, nq }: MatrixDims,
  score: ScoreSpec,
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
  const preferred: [number, number] | undefined = prefer.warps && prefer.bn ? [prefer.warps, prefer.bn] : undefined;
  const shapes = [preferred ?? SHARED_SM_SHAPE, ...DEFAULT_SHAPES];
  for (const mc of cfgs) {
    if (sg % mc.M !== 0) continue;
    for (const [i, [warps, bn]] of shapes.entries()) {
      if (bn % mc.N !== 0 || bn % mc.K !== 0 || (warps > 1 && !subgroupId)) continue;
      const sharedSm = i === 0 && !preferred;
      const qFromBuffer = !(prefer.qStaged ?? sharedSm) && nq % mc.M === 0 && d % mc.K === 0;
      const c: MatrixKernelConfig = { m: mc.M, n: mc.N, k: mc.K, warps, sg, bn, d, dv, subgroupId, score, pad: prefer.pad ?? PAD, rescaleLog: prefer.rescaleLog ?? RESCALE_LOG, stagingInSoftmax: prefer.stagingInSoftmax ?? true, segments: prefer.segments ?? !sharedSm, qFromBuffer };
      const L = matrixLayout(c);
      const limit = sharedSm ? ctx.limits.maxWorkgroupStorage / 2 : ctx.limits.maxWorkgroupStorage;
      if (L.threads <= ctx.limits.maxInvocations && L.bytes <= limit) return c;
    }
  }
  throw new Error(`no subgroup-matrix tile fits this adapter's limits for d=${d}, dv=${dv}`);
}

export function matrixKernelWgsl(c: MatrixKernelConfig): string {
  if (c.varlen && c.qFromBuffer) throw new Error('matrixKernelWgsl: a varlen kernel stages Q (its rows stop at sequence boundaries)');
  const L = matrixLayout(c);
  const A = c.varlen ? VARLEN_ADDRESS : DENSE_ADDRESS;
  const { m: M, n: N, k: K, bn: BN } = c;
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  const QT = L.dp / K; // Q left matrices per subgroup
  const OT = L.dvp / N; // O result matrices per subgroup
  const SC = Array.from({ length: L.scols }, (_, i) => i);
  const lines = (n: number, f: (i: number) => string, sep = '\n') => Array.from({ length: n }, (_, i) => f(i)).join(sep);
  const each = <X>(xs: X[], f: (x: X) => string, sep = '\n') => xs.map(f).join(sep);
  // The softmax step for one tile, with the full-tile or the edge score function. Up to 16
  // scores per lane stay in registers between the max and the exponentials; past that the
  // lane reads its scores twice.
  const inRegs = L.scols <= 16;
  // Scores in log2 units (FA4's exp2 domain): where the problem has no softcap or ALiBi,
  // scale·log2(e) folds into one multiply and P = exp2(x − m) is one add and one MUFU op.
  const plain = !c.score.softcap && !c.score.alibi;
  const score = (fn: string, i: number) => {
    const dot = `ss[srow * SW + ${i * L.lanesPerRow}u + part]`;
    if (fn === 'score_full') return plain ? `${dot} * c2` : `score_full(h, grow, j0 + ${i * L.lanesPerRow}u + part, ${dot}) * LOG2E`;
    return `to_log2(score_edge(h, grow, j0 + ${i * L.lanesPerRow}u + part, ${dot}))`;
  };
  const softmax = (fn: 'score_full' | 'score_edge') => `
      ${inRegs ? each(SC, (i) => `let x${i} = ${score(fn, i)};`, '\n      ') : ''}
      var mx = ${inRegs ? SC.reduce((acc, i) => (acc ? `max(${acc}, x${i})` : `x${i}`), '') : 'NEG_INF'};
      ${inRegs ? '' : each(SC, (i) => `mx = max(mx, ${score(fn, i)});`, '\n      ')}
      ${lines(Math.log2(L.lanesPerRow), (i) => `mx = max(mx, subgroupShuffleXor(mx, ${1 << i}u));`, ' ')}
      mtrue = max(mtrue, mx);
      if (mx > m + RESCALE_LOG2) {
        if (started) { again = true; } else { alpha = exp2(m - mx); m = mx; }
      }
      started = started || mx > NEG_INF;
      ${each(
        SC,
        (i) => {
          const x = inRegs ? `x${i}` : 'x';
          const open = inRegs ? '' : `{ let x = ${score(fn, i)}; `;
          const p = fn === 'score_full' ? `exp2(${x} - m)` : `select(0.0, exp2(${x} - m), ${x} > NEG_INF)`;
          return `${open}let p${i} = ${p}; ps[srow * PW + ${i * L.lanesPerRow}u + part] = f16(p${i}); sum += p${i};${inRegs ? '' : ' }'}`;
        },
        '\n      ',
      )}`;
  // K/V staging with a register prefetch: each thread loads its share of the next tile
  // (KPT + VPT groups of 4 halves) while the current one is computed and writes it to
  // workgroup memory at the top of the next iteration, so the global-load latency hides
  // behind the matmuls instead of stalling every tile (runs 5 → 6: 49.3 → 89.2 TFLOP/s, d = 64).
  // Head dims that are multiples of 4 read 8 bytes per load; others read element by element.
  const groups = (width: number, dpad: number, buf: string, base: string, name: string, jt: string, stride: string) => {
    const total = (BN * dpad) / 4;
    const per = Math.ceil(total / L.threads);
    const vec = width % 4 === 0;
    const fetch = Array.from({ length: per }, (_, t) => {
      const guard = (t + 1) * L.threads <= total ? '' : `idx < ${total}u && `;
      const read = vec
        ? `${buf}4[(${base} + (${jt} + key) * ${stride} + col) / 4u]`
        : `vec4<f16>(${[0, 1, 2, 3].map((e) => `select(f16(0.0), ${buf}[${base} + (${jt} + key) * ${stride} + min(col + ${e}u, ${width - 1}u)], col + ${e}u < ${width}u)`).join(', ')})`;
      return `{ let idx = lid + ${t * L.threads}u; let key = idx / ${dpad / 4}u; let col = (idx % ${dpad / 4}u) * 4u;
      ${name}${t} = vec4<f16>(0.0); if (${guard}${jt} + key < params.nk && col < ${width}u) { ${name}${t} = ${read}; } }`;
    });
    const store = (arr: string, stride: string) =>
      Array.from({ length: per }, (_, t) => {
        const guard = (t + 1) * L.threads <= total ? '' : `if (idx < ${total}u) `;
        return `{ let idx = lid + ${t * L.threads}u; let key = idx / ${dpad / 4}u; let col = (idx % ${dpad / 4}u) * 4u;
      ${guard}{ for (var e = 0u; e < 4u; e++) { ${arr}[key * ${stride} + col + e] = ${name}${t}[e]; } } }`;
      });
    return { decl: Array.from({ length: per }, (_, t) => `var ${name}${t}: vec4<f16>;`).join(' '), fetch: fetch.join('\n    '), store };
  };
  const kg = (jt: string) => groups(c.d, L.dp, 'k', 'kbase', 'pk', jt, A.ks === 'D' ? `${c.d}u` : A.ks);
  const vg = (jt: string) => groups(c.dv, L.dvp, 'v', 'vbase', 'pv', jt, A.vs === 'DV' ? `${c.dv}u` : A.vs);
  // The steps of one tile, shared by both schedules below.
  // S stripe of this subgroup: M rows × BN keys; one accumulator per block of N keys, the
  // blocks interleaved: independent MMA chains.
  const qkT = `${lines(BN / N, (b) => `    var acc${b} = ${result}();`)}
${lines(QT, (i) => lines(BN / N, (b) => `    acc${b} = subgroupMatrixMultiplyAccumulate(q${i}, subgroupMatrixLoad<${right}, col_major>(&ks, ${b * N}u * KSW + ${i * K}u, KSW), acc${b});`))}
${lines(BN / N, (b) => `    subgroupMatrixStore<row_major>(&ss, sreg + ${b * N}u, acc${b}, SW);`)}`;
  // Online softmax on plain lanes, with the lazy max; the mask tests only where needed:
  // 'either' tests each tile, 'full' and 'edge' are the loops of a masked problem's three
  // segments (keyLoops below), which know which kind of tile they hold.
  const onlineSoftmax = (kind: 'either' | 'full' | 'edge') => `    var alpha = 1.0;
    var sum = 0.0;
${
  kind === 'either'
    ? `    if (tile_visible(row0, min(row0 + BM, params.nq), j0, j0 + BN)) {${softmax('score_full')}
    } else {${softmax('score_edge')}
    }`
    : `    {${softmax(kind === 'full' ? 'score_full' : 'score_edge')}
    }`
}
    l = l * alpha + sum;`;
  // The loop over a block's key tiles around a body that takes the softmax kind. Without a mask,
  // one loop that tests each tile (only the last can be ragged). With one, three loops: the
  // edge tiles below the block's fully visible span (a window's left edge), the span, and the
  // edge tiles above it (the causal diagonal, a right edge, Nk), as FA2 separates its masking
  // steps. The span's loop is then the unmasked kernel's loop, with no branch in the softmax;
  // with the per-tile branch, causal d = 128 ran at 0.77–0.78 of non-causal, in segments at
  // 0.86–0.90 (BENCHMARKS.md, "WebGPU against CUDA on the H200"). The two-workgroup tile
  // (d = 64) keeps one loop: in segments its causal rate fell from 102 to 72 TFLOP/s, the
  // three copies of the loop evidently costing it its second workgroup per SM (measured, the
  // cause not: Dawn shows no register counts). The span's tile starts are worked out once per
  // block, next to block_key_range in the kernel's entry point.
  const segmented = c.score.masked && c.segments;
  const keyLoops = (body: (kind: 'either' | 'full' | 'edge') => string) =>
    segmented
      ? `  for (var j0 = jfirst; j0 < span.x; j0 += BN) {
${body('edge')}
  }
  for (var j0 = span.x; j0 < span.y; j0 += BN) {
${body('full')}
  }
  for (var j0 = span.y; j0 < kr.y; j0 += BN) {
${body('edge')}
  }`
      : `  for (var j0 = jfirst; j0 < kr.y; j0 += BN) {
${body('either')}
  }`;
  // O += P V. kb stays a run-time loop variable on purpose (see the header's trap).
  const pv = `    for (var kb = 0u; kb < BN; kb += ${K}u) {
      let pm = subgroupMatrixLoad<${left}, row_major>(&ps, wrow * PW + kb, PW);
${lines(OT, (i) => `      o${i} = subgroupMatrixMultiplyAccumulate(pm, subgroupMatrixLoad<${right}, row_major>(&vs, kb * VSW + ${i * N}u, VSW), o${i});`)}
    }`;
  // Two schedules of the same steps. In the first (stagingInSoftmax false) the K/V tile is
  // written between two barriers of its own at the top of each tile: four barriers per tile.
  // In the second, K(t+1) and V(t) are written during the softmax of tile t — QKᵀ(t), the last
  // reader of K(t), and P·V(t−1), the last reader of V(t−1), are both behind the S barrier,
  // and the P barrier makes both visible before they are read — so a tile has two. (Each had
  // one barrier point more while the rescale decision was made per tile: runs 36–40.) The
  // second lengthens the softmax step. A second workgroup on the SM covers that (8×16 at
  // d = 64: 104 → 114–115 TFLOP/s, run 36); one 8×32 workgroup alone on its SM gains from
  // it too (d = 128, N = 4096: 141.8 → 149.7, run 54), and under a mask once the masked tiles
  // have loops of their own (keyLoops: causal 123.0 → 129.5; with the per-tile test it lost,
  // 108.7 → 97.0, run 54), so every tile takes the second. The second schedule also runs P·V(t−1) at the
  // top of iteration t, next to QKᵀ(t) — five independent MMA chains between two barriers
  // instead of one chain of four, then four chains: causal 86 → 94 TFLOP/s at d = 64 (run 40).
  const tileLoop = c.stagingInSoftmax
    ? `  ${kg('jfirst').fetch}
  ${kg('jfirst').store('ks', 'KSW').join('\n  ')}
  ${kg('(jfirst + BN)').fetch}
  ${vg('jfirst').fetch}
  if (lid == 0u) { rerun = 0u; }
  // The first iteration's P·V (of no tile) must add nothing: P and V start as zeros.
  for (var i = lid; i < ${L.bm * L.pw}u; i += NT) { ps[i] = f16(0.0); }
  for (var i = lid; i < ${BN * L.vsw}u; i += NT) { vs[i] = f16(0.0); }
  workgroupBarrier();               // K(0), the zeros and the flag visible
${keyLoops(
  (kind) => `${pv}
${qkT}
    workgroupBarrier();             // S visible; every QKᵀ(t) and P·V(t−1) read done
    ${kg('j0').store('ks', 'KSW').join('\n    ')}
    ${vg('j0').store('vs', 'VSW').join('\n    ')}
    ${kg('(j0 + 2u * BN)').fetch}
    ${vg('(j0 + BN)').fetch}
${onlineSoftmax(kind)}
    workgroupBarrier();             // P(t), K(t+1) and V(t) visible`,
)}
${pv}`
    : `  ${kg('jfirst').fetch}
  ${vg('jfirst').fetch}
  if (lid == 0u) { rerun = 0u; }
${keyLoops(
  (kind) => `    workgroupBarrier();             // the previous tile's K, V, S and P reads are done
    ${kg('j0').store('ks', 'KSW').join('\n    ')}
    ${vg('j0').store('vs', 'VSW').join('\n    ')}
    workgroupBarrier();
    ${kg('(j0 + BN)').fetch}
    ${vg('(j0 + BN)').fetch}
${qkT}
    workgroupBarrier();
${onlineSoftmax(kind)}
    workgroupBarrier();             // P visible
${pv}`,
)}`;
  const vecK = c.d % 4 === 0;
  const vecV = c.dv % 4 === 0;
  const wgsl = /* wgsl */ `
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
${c.subgroupId ? 'requires subgroup_id, subgroup_uniformity;' : ''}
${PARAMS_WGSL}
${GRID_ORDER_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f16>;
@group(0) @binding(2) var<storage, read> ${vecK ? 'k4: array<vec4<f16>>' : 'k: array<f16>'};
@group(0) @binding(3) var<storage, read> ${vecV ? 'v4: array<vec4<f16>>' : 'v: array<f16>'};
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;${c.varlen ? VARLEN_BINDING_WGSL : ''}
${scoreWgsl(c.score)}

const BM = ${L.bm}u; const BN = ${BN}u; const D = ${c.d}u; const DV = ${c.dv}u;
const NT = ${L.threads}u; const SG = ${c.sg}u;
const SW = ${L.sw}u; const RF = ${Math.max(c.bn, c.n)}u; const PW = ${L.pw}u; const KSW = ${L.ksw}u; const VSW = ${L.vsw}u;
const LPR = ${L.lanesPerRow}u;     // lanes per query row in the softmax step
const LOG2E = 1.4426950408889634;
const RESCALE_LOG2 = ${(c.rescaleLog * Math.LOG2E).toFixed(6)}; // growth allowed after a row's first P, log2 units
// A score in log2 units; masked scores (NEG_INF) stay NEG_INF.
fn to_log2(x: f32) -> f32 { return select(NEG_INF, x * LOG2E, x > NEG_INF); }

var<workgroup> ps: array<f16, ${L.bm * L.pw}>;     // P stripes, [row][key]
var<workgroup> ss: array<f32, ${L.bm * L.sw}>;     // S stripes, [row][key]; O scratch; column RF: 1 / l
var<workgroup> rerun: u32;                         // some row's max grew past m + rescaleLog after its first P
var<workgroup> ks: array<f16, ${L.kHalves}>;        // K tile [key][dim]; first, Q columns where Q is staged
var<workgroup> vs: array<f16, ${BN * L.vsw}>;      // V tile [key][dim]

@compute @workgroup_size(${L.threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32${c.subgroupId ? ', @builtin(subgroup_id) sgid: u32' : ''}) {
  let warp = ${c.subgroupId ? 'sgid' : '0u'};
  let lane = lid % SG;
${c.varlen ? varlenPrologue('BM') : `  // Longest tiles first (bottom query blocks see the most keys under a causal mask), in
  // groups of params.head_group heads: grid-order.ts.
  let tile = grid_tile(wid, nwg);
  let row0 = tile.x * BM;
  let bh = tile.y; // (batch, query head) row within this dispatch's window (binding-windows.ts)
  let h = (bh + params.head0) % params.hq; // bh counts from the window's first row, params.head0
  let bhk = kv_head(bh);
  let qbase = bh * params.nq * D;
  let kbase = bhk * params.nk * D;
  let vbase = bhk * params.nk * DV;`}
  let wrow = warp * ${M}u;          // this subgroup's first row in the tile
  let sreg = wrow * SW;            // its S stripe / O scratch

  // Q into registers: straight from the buffer where that is right (qFromBuffer), else ${K}
  // head dims at a time through the K array (zeros past Nq and d).
${c.qFromBuffer ? lines(QT, (i) => `  let q${i} = subgroupMatrixLoad<${left}, row_major>(&q, qbase + (row0 + wrow) * D + ${i * K}u, D);`) : lines(
  QT,
  (i) => `  for (var idx = lid; idx < BM * ${K}u; idx += NT) {
    let r = idx / ${K}u; let col = ${i * K}u + idx % ${K}u;
    var x = f16(0.0);
    if (row0 + r < params.nq && col < D) { x = q[qbase + (row0 + r) * ${A.qs} + col]; }
    ks[idx] = x;
  }
  workgroupBarrier();
  let q${i} = subgroupMatrixLoad<${left}, row_major>(&ks, wrow * ${K}u, ${K}u);
  workgroupBarrier();`,
)}
${lines(OT, (i) => `  var o${i} = ${result}();`)}

  // Softmax-step ownership: this lane handles row (wrow + lane / LPR), columns ≡ lane % LPR.
  let srow = wrow + lane / LPR;
  let part = lane % LPR;
  let grow = row0 + srow;
  let sink = sink_logit(h);
  let msink = to_log2(sink);
  var mtrue = msink;               // the row's max over every score seen, log2 units
  var m = msink;                   // the max P is taken against, log2 units
  var l = 0.0;
  let c2 = params.scale * LOG2E;

  let kr = block_key_range(row0, min(row0 + BM, params.nq));
  let jfirst = (kr.x / BN) * BN;
${
  segmented
    ? `  // The starts [span.x, span.y) of the block's tiles that tile_visible passes (they are
  // consecutive), each constraint solved for the tile start; written out here rather than as a
  // helper, so that the serving kernels' rewrite of params' shape (sequence-geometry.ts) covers it.
  let span_rows_end = i32(min(row0 + BM, params.nq));
  let span_tiles = (i32(kr.y) - i32(jfirst) + i32(BN) - 1) / i32(BN);
  var span_lo = i32(jfirst);       // no fully visible tile starts below this key
  if (params.left >= 0) { span_lo = max(span_lo, span_rows_end - 1 + params.diag - params.left); }
  var span_hi = i32(params.nk);    // no fully visible tile ends above this key
  if (params.causal != 0u) { span_hi = min(span_hi, i32(row0) + params.diag + 1); }
  if (params.right >= 0) { span_hi = min(span_hi, i32(row0) + params.diag + params.right + 1); }
  let span_a = clamp((span_lo - i32(jfirst) + i32(BN) - 1) / i32(BN), 0, span_tiles);
  let span_b = clamp(select(0, (span_hi - i32(jfirst)) / i32(BN), span_hi - i32(jfirst) >= i32(BN)), span_a, span_tiles);
  let span = vec2<u32>(jfirst + u32(span_a) * BN, jfirst + u32(span_b) * BN);`
    : ''
}
  ${kg('jfirst').decl} ${vg('jfirst').decl}
  // A second pass only where some row's max grew past m + rescaleLog after its first P; it
  // starts every row at its true max, which no score can pass.
  for (var sweep = 0u; sweep < 2u; sweep++) {
    m = mtrue;
    l = select(0.0, exp2(msink - m), sink > NEG_INF && part == 0u);
    var started = false;           // P of this row taken against m (m may no longer move)
    var again = false;
${lines(OT, (i) => `    o${i} = ${result}();`)}
${tileLoop.replace(/^(?=.)/gm, '  ')}
    if (again) { rerun = 1u; }
    if (workgroupUniformLoad(&rerun) == 0u) { break; }
  }
  ${lines(Math.log2(L.lanesPerRow), (i) => `l += subgroupShuffleXor(l, ${1 << i}u);`, ' ')}
  workgroupBarrier();
  if (part == 0u) { ss[srow * SW + RF] = select(0.0, 1.0 / l, l > 0.0); }
  if (grow < params.nq && part == 0u) { lse[${A.lse('grow')}] = select(neg_inf_runtime(), m * 0.6931471805599453 + log(l), l > 0.0); }
  workgroupBarrier();
${lines(OT, (i) => `  subgroupMatrixStore<row_major>(&ss, sreg, o${i}, SW);
  workgroupBarrier();
  for (var e = lane; e < ${M * N}u; e += SG) {
    let r = e / ${N}u; let col = ${i * N}u + e % ${N}u;
    let gr = row0 + wrow + r;
    if (gr < params.nq && col < DV) { o[${A.oRow('gr')} + col] = ss[sreg + r * SW + e % ${N}u] * ss[sreg + r * SW + RF]; }
  }
  workgroupBarrier();`)}
}
`;
  return c.varlen ? withSequenceGeometry(wgsl) : wgsl;
}
