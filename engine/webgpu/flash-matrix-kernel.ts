// The tensor-core path: the FA2 forward pass with both matmuls on subgroup matrices
// (chromium-experimental-subgroup-matrix; on NVIDIA, Dawn lowers them to Vulkan cooperative
// matrices, i.e. mma instructions). f16 operands, f32 accumulation. Measurements behind each
// choice below: BENCHMARKS.md, "WebGPU backend, forward" and "WebGPU against CUDA on the H200"
// (run-by-run history in docs/benchmarks-history.md).
//
// A workgroup is W subgroups; subgroup w owns query rows [w·M, w·M + M) of a BM = W·M tile.
// Its Q rows live in registers as left matrices and its O rows as result matrices for the
// whole pass. Per tile of BN keys the kernel runs named stages (matrixKernelWgsl below):
// stage K/V (a register prefetch written to workgroup memory), Q·Kᵀ (each subgroup's M×BN
// stripe of S, stored f32), the online softmax (on plain lanes, SG/M lanes per row, scores in
// registers, P = exp2(S·log2 e − m) written as f16, m in log2 units as FA4 keeps it), P·V
// (O += P V on the result matrices), and at the end the store (O / l and the LSE).
//
// Every matrix load reads workgroup memory inside its array: Dawn returns zeros for a load
// that does not lie wholly inside its array, so loads straight from ragged Q/K/V buffers fail.
//
// Workgroup memory, not registers, sets how many workgroups an SM runs: on the H200 all of an
// SM's workgroups together get no more than the 48 KiB one may have, so the d = 64 tile stays
// under half of it and two workgroups share each SM (one's barriers and softmax overlap the
// other's MMAs); at d = 128 the half-size tile measured slower, so wide heads take one.
//
// A subgroup matrix cannot be scaled row by row, so O is never rescaled (FA4's lazy rescale
// taken to its end): a row's max m moves freely until the row has its first P; after that m
// stays, and P = exp(s − m) ≤ e^rescaleLog while no score passes m + rescaleLog, and O / l and
// LSE = m + log l do not depend on which m was used. A row whose scores do pass it sets a flag,
// and the workgroup then runs its pass again with every row's m at the true row max (tracked
// through the first pass), which no score can exceed: typical inputs never run twice.
//
// Workgroup-memory rows are padded by 16 bytes (S: BN + 4 floats, P: BN + 8 halves, K/V:
// head dim + 8 halves): unpadded, the softmax lanes reading down a column collide 16 ways.
//
// A trap: Dawn wraps every matrix load or store whose offset it cannot check at compile time
// in a run-time bounds test, and those tests keep the P and V loads where the code puts them;
// with compile-time offsets (or robustness off) the driver moves the loads across workgroup
// barriers and the results are wrong. So the P, V and S offsets stay run-time values; the K
// loads, whose results are used before the next barrier, have constant offsets.

import type { ProblemDims } from '../core/problem.ts';
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
  /** Max growth allowed after a row's first P (the benchmark's 0: any growth runs the second pass). */
  rescaleLog?: number;
  /** Row padding of the S stripes (floats) and P stripes (halves), for the benchmark's padding grid. */
  pad?: { s: number; p: number };
  /** Stage Q through workgroup memory (true; the serving layouts need it) or load it from its buffer where that is right. */
  qStaged?: boolean;
  /** A masked problem's key loop in three segments (the default for a tile alone on its SM) or one loop testing each tile. */
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
  /** A masked problem's key loop as edge / fully visible / edge segments (keyLoops in matrixKernelWgsl). */
  segments: boolean;
  /**
   * Q matrices loaded straight from the Q buffer instead of staged through the K array (which
   * then has to hold BM × K halves). Right only where Nq is a multiple of M and d of K: a
   * matrix load that reaches past the binding returns zeros, and with those divisibilities only
   * rows past Nq of the last head can (their results are discarded). Chosen for the tiles that
   * have an SM to themselves (it skips the staging rounds and their barriers); the
   * two-workgroup tile measured slightly slower with it, so it stages Q (BENCHMARKS.md).
   */
  qFromBuffer: boolean;
  /** A packed variable-length batch (varlen-layout.ts) instead of [B, H, N, d]; Q is then always staged. */
  varlen?: boolean;
  /** Block-sparse: the block list's WGSL (block-list.ts) at this kernel's BM × BN tiles. */
  blockList?: string;
  /**
   * Block-sparse: the partial and the full tiles in two loops (the two-workgroup tile, where one
   * loop with a per-tile branch measured 2–8% slower) or in one with the branch (a tile alone on
   * its SM, where two copies of the loop body took 1.2× the time of one; BENCHMARKS.md, "Full tiles on the GPU").
   */
  splitList: boolean;
}

/** The problem sizes that shape the kernel. */
export type MatrixDims = Pick<ProblemDims, 'd' | 'dv' | 'nq'>;

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

// Tried in this order (subgroups × BN): first 8×16 where it takes at most half the
// workgroup-memory limit (two workgroups per SM, see the header), then the largest tiles that
// fit; each order measured fastest on the H200 at N = 4096 (BENCHMARKS.md, "WebGPU backend, forward").
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
      const c: MatrixKernelConfig = {
        m: mc.M,
        n: mc.N,
        k: mc.K,
        warps,
        sg,
        bn,
        d,
        dv,
        subgroupId,
        score,
        pad: prefer.pad ?? PAD,
        rescaleLog: prefer.rescaleLog ?? RESCALE_LOG,
        segments: prefer.segments ?? !sharedSm,
        qFromBuffer,
        splitList: sharedSm,
      };
      const L = matrixLayout(c);
      const limit = sharedSm ? ctx.limits.maxWorkgroupStorage / 2 : ctx.limits.maxWorkgroupStorage;
      if (L.threads <= ctx.limits.maxInvocations && L.bytes <= limit) return c;
    }
  }
  throw new Error(`no subgroup-matrix tile fits this adapter's limits for d=${d}, dv=${dv}`);
}

/** Names the stages below share: the config, its layout, its address expressions and its matrix types. */
interface KernelParts {
  c: MatrixKernelConfig;
  layout: ReturnType<typeof matrixLayout>;
  addr: typeof DENSE_ADDRESS;
  left: string;
  right: string;
  result: string;
  /** Q left matrices per subgroup. */
  qMats: number;
  /** O result matrices per subgroup. */
  oMats: number;
}

const lines = (count: number, f: (i: number) => string, sep = '\n') => Array.from({ length: count }, (_, i) => f(i)).join(sep);
const each = <X>(xs: X[], f: (x: X) => string, sep = '\n') => xs.map(f).join(sep);

function kernelParts(c: MatrixKernelConfig): KernelParts {
  const layout = matrixLayout(c);
  return {
    c,
    layout,
    addr: c.varlen ? VARLEN_ADDRESS : DENSE_ADDRESS,
    left: `subgroup_matrix_left<f16, ${c.k}, ${c.m}>`,
    right: `subgroup_matrix_right<f16, ${c.n}, ${c.k}>`,
    result: `subgroup_matrix_result<f32, ${c.n}, ${c.m}>`,
    qMats: layout.dp / c.k,
    oMats: layout.dvp / c.n,
  };
}

// Stage K/V: a register prefetch. Each thread loads its share of the next tile (groups of 4
// halves) while the current one is computed and writes it to workgroup memory at the top of
// the next step, so the global-load latency hides behind the matmuls (BENCHMARKS.md, "WebGPU backend, forward").
// Head dims that are multiples of 4 read 8 bytes per load; others read element by element.
function kvStaging(
  { c, layout }: KernelParts,
  width: number,
  dpad: number,
  buf: string,
  base: string,
  name: string,
  jt: string,
  stride: string,
) {
  const total = (c.bn * dpad) / 4;
  const per = Math.ceil(total / layout.threads);
  const vec = width % 4 === 0;
  const fetch = Array.from({ length: per }, (_, t) => {
    const guard = (t + 1) * layout.threads <= total ? '' : `idx < ${total}u && `;
    const read = vec
      ? `${buf}4[(${base} + (${jt} + key) * ${stride} + col) / 4u]`
      : `vec4<f16>(${[0, 1, 2, 3].map((e) => `select(f16(0.0), ${buf}[${base} + (${jt} + key) * ${stride} + min(col + ${e}u, ${width - 1}u)], col + ${e}u < ${width}u)`).join(', ')})`;
    return `{ let idx = lid + ${t * layout.threads}u; let key = idx / ${dpad / 4}u; let col = (idx % ${dpad / 4}u) * 4u;
      ${name}${t} = vec4<f16>(0.0); if (${guard}${jt} + key < params.nk && col < ${width}u) { ${name}${t} = ${read}; } }`;
  });
  const store = (arr: string, stride: string) =>
    Array.from({ length: per }, (_, t) => {
      const guard = (t + 1) * layout.threads <= total ? '' : `if (idx < ${total}u) `;
      return `{ let idx = lid + ${t * layout.threads}u; let key = idx / ${dpad / 4}u; let col = (idx % ${dpad / 4}u) * 4u;
      ${guard}{ for (var e = 0u; e < 4u; e++) { ${arr}[key * ${stride} + col + e] = ${name}${t}[e]; } } }`;
    });
  return { decl: Array.from({ length: per }, (_, t) => `var ${name}${t}: vec4<f16>;`).join(' '), fetch: fetch.join('\n    '), store };
}

const kStage = (parts: KernelParts, jt: string) =>
  kvStaging(parts, parts.c.d, parts.layout.dp, 'k', 'kbase', 'pk', jt, parts.addr.ks === 'D' ? `${parts.c.d}u` : parts.addr.ks);
const vStage = (parts: KernelParts, jt: string) =>
  kvStaging(parts, parts.c.dv, parts.layout.dvp, 'v', 'vbase', 'pv', jt, parts.addr.vs === 'DV' ? `${parts.c.dv}u` : parts.addr.vs);

// Q·Kᵀ: this subgroup's S stripe, M rows × BN keys; one accumulator per block of N keys, the
// blocks interleaved: independent MMA chains.
function qkTWgsl({ c, right, result, qMats }: KernelParts): string {
  return `${lines(c.bn / c.n, (b) => `    var acc${b} = ${result}();`)}
${lines(qMats, (i) => lines(c.bn / c.n, (b) => `    acc${b} = subgroupMatrixMultiplyAccumulate(q${i}, subgroupMatrixLoad<${right}, col_major>(&ks, ${b * c.n}u * KSW + ${i * c.k}u, KSW), acc${b});`))}
${lines(c.bn / c.n, (b) => `    subgroupMatrixStore<row_major>(&ss, sreg + ${b * c.n}u, acc${b}, SW);`)}`;
}

// One score of this lane in log2 units (FA4's exp2 domain): where the problem has no softcap or
// ALiBi, scale·log2(e) folds into one multiply and P = exp2(x − m) is one add and one MUFU op.
function scoreTerm({ c, layout }: KernelParts, fn: 'score_full' | 'score_edge', col: number): string {
  const plain = !c.score.softcap && !c.score.alibi && !c.score.user?.hasScore;
  const dot = `ss[srow * SW + ${col * layout.lanesPerRow}u + part]`;
  if (fn === 'score_full') return plain ? `${dot} * c2` : `score_full(h, grow, j0 + ${col * layout.lanesPerRow}u + part, ${dot}) * LOG2E`;
  return `to_log2(score_edge(h, grow, j0 + ${col * layout.lanesPerRow}u + part, ${dot}))`;
}

// Online softmax of one tile with the full-tile or the edge score function, with the lazy max.
// Up to 16 scores per lane stay in registers between the max and the exponentials; past that
// the lane reads its scores twice.
function softmaxTileWgsl(parts: KernelParts, fn: 'score_full' | 'score_edge'): string {
  const { layout } = parts;
  const cols = Array.from({ length: layout.scols }, (_, i) => i);
  const inRegs = layout.scols <= 16;
  return `
      ${inRegs ? each(cols, (i) => `let x${i} = ${scoreTerm(parts, fn, i)};`, '\n      ') : ''}
      var mx = ${inRegs ? cols.reduce((acc, i) => (acc ? `max(${acc}, x${i})` : `x${i}`), '') : 'NEG_INF'};
      ${inRegs ? '' : each(cols, (i) => `mx = max(mx, ${scoreTerm(parts, fn, i)});`, '\n      ')}
      ${lines(Math.log2(layout.lanesPerRow), (i) => `mx = max(mx, subgroupShuffleXor(mx, ${1 << i}u));`, ' ')}
      mtrue = max(mtrue, mx);
      if (mx > m + RESCALE_LOG2) {
        if (started) { again = true; } else { alpha = exp2(m - mx); m = mx; }
      }
      started = started || mx > NEG_INF;
      ${each(
        cols,
        (i) => {
          const x = inRegs ? `x${i}` : 'x';
          const open = inRegs ? '' : `{ let x = ${scoreTerm(parts, fn, i)}; `;
          const p = fn === 'score_full' ? `exp2(${x} - m)` : `select(0.0, exp2(${x} - m), ${x} > NEG_INF)`;
          return `${open}let p${i} = ${p}; ps[srow * PW + ${i * layout.lanesPerRow}u + part] = f16(p${i}); sum += p${i};${inRegs ? '' : ' }'}`;
        },
        '\n      ',
      )}`;
}

// Online softmax on plain lanes; the mask tests only where needed: 'either' tests each tile,
// 'listed' reads the block list's kind of the tile (its partial tiles come first), 'full' and
// 'edge' are the loops that know which kind of tile they hold (keyLoopsWgsl).
function onlineSoftmaxWgsl(parts: KernelParts, kind: 'either' | 'listed' | 'full' | 'edge'): string {
  return `    var alpha = 1.0;
    var sum = 0.0;
${
  kind === 'either' || kind === 'listed'
    ? `    if (${kind === 'listed' ? 'bt >= bpartial' : 'tile_visible(row0, min(row0 + BM, params.nq), j0, j0 + BN)'}) {${softmaxTileWgsl(parts, 'score_full')}
    } else {${softmaxTileWgsl(parts, 'score_edge')}
    }`
    : `    {${softmaxTileWgsl(parts, kind === 'full' ? 'score_full' : 'score_edge')}
    }`
}
    l = l * alpha + sum;`;
}

// P·V: O += P V on the result matrices. kb stays a run-time loop variable on purpose (the
// header's trap).
function pvWgsl({ c, left, right, oMats }: KernelParts): string {
  return `    for (var kb = 0u; kb < BN; kb += ${c.k}u) {
      let pm = subgroupMatrixLoad<${left}, row_major>(&ps, wrow * PW + kb, PW);
${lines(oMats, (i) => `      o${i} = subgroupMatrixMultiplyAccumulate(pm, subgroupMatrixLoad<${right}, row_major>(&vs, kb * VSW + ${i * c.n}u, VSW), o${i});`)}
    }`;
}

/** A masked problem's key loop in three segments (see keyLoopsWgsl). */
const segmentedLoops = (c: MatrixKernelConfig) => c.score.masked && c.segments && !c.blockList;

// Where the K/V tile of loop step `step` (0: the first, 'next': the one after j0's, 'next2':
// two after) starts: consecutive tiles, or block-sparse, the block list's entries (past its
// end, Nk: the staging then loads zeros), the next two read at the top of each tile.
function tileStart(c: MatrixKernelConfig, step: 'first' | 'second' | 'next' | 'next2'): string {
  if (c.blockList) {
    const t = { first: '0u', second: '1u', next: 'jv_next', next2: 'jk_next' }[step];
    return step === 'first' || step === 'second' ? `block_start(bbase, bcount, ${t}, BN)` : t;
  }
  return { first: 'jfirst', second: '(jfirst + BN)', next: '(j0 + BN)', next2: '(j0 + 2u * BN)' }[step];
}

// The loop over a block's key tiles around a body that takes the softmax kind. Without a mask,
// one loop that tests each tile (only the last can be ragged). With one, three loops: the edge
// tiles below the block's fully visible span (a window's left edge), the span, and the edge
// tiles above it (the causal diagonal, a right edge, Nk), as FA2 separates its masking steps;
// the span's loop is then the unmasked kernel's loop, with no branch in the softmax. The
// two-workgroup tile keeps one loop: three copies of it cost it its second workgroup per SM
// (BENCHMARKS.md, "WebGPU against CUDA on the H200").
function keyLoopsWgsl(c: MatrixKernelConfig, body: (kind: 'either' | 'listed' | 'full' | 'edge') => string): string {
  if (c.blockList) {
    // Block-sparse: the partial tiles with the mask tests, then the full ones without, in a
    // loop each (splitList) or in one loop with a branch; the staging prefetch runs across both.
    // The next two tile starts are read once per tile, not on every staged K/V load.
    const starts = `    let j0 = block_start(bbase, bcount, bt, BN);
    let jv_next = block_start(bbase, bcount, bt + 1u, BN);
    let jk_next = block_start(bbase, bcount, bt + 2u, BN);`;
    return `  let bpartial = block_list[bbase + 1u];
${
  c.splitList
    ? `  for (var bt = 0u; bt < bpartial; bt++) {
${starts}
${body('edge')}
  }
  for (var bt = bpartial; bt < bcount; bt++) {
${starts}
${body('full')}
  }`
    : `  for (var bt = 0u; bt < bcount; bt++) {
${starts}
${body('listed')}
  }`
}`;
  }
  return segmentedLoops(c)
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
}

// The tile loop: K(t+1) and V(t) are written during the softmax of tile t (Q·Kᵀ(t), the last
// reader of K(t), and P·V(t−1), the last reader of V(t−1), are both behind the S barrier, and
// the P barrier makes both visible), so a tile has two barriers, and P·V(t−1) runs next to
// Q·Kᵀ(t) as independent MMA chains. K/V written between barriers of their own at the top of
// each tile (four per tile) measured slower on every tile (BENCHMARKS.md, "WebGPU backend, forward").
function tileLoopWgsl(parts: KernelParts): string {
  const { c, layout } = parts;
  const qkT = qkTWgsl(parts);
  const pv = pvWgsl(parts);
  return `  ${kStage(parts, tileStart(c, 'first')).fetch}
  ${kStage(parts, tileStart(c, 'first')).store('ks', 'KSW').join('\n  ')}
  ${kStage(parts, tileStart(c, 'second')).fetch}
  ${vStage(parts, tileStart(c, 'first')).fetch}
  if (lid == 0u) { rerun = 0u; }
  // The first iteration's P·V (of no tile) must add nothing: P and V start as zeros.
  for (var i = lid; i < ${layout.bm * layout.pw}u; i += NT) { ps[i] = f16(0.0); }
  for (var i = lid; i < ${c.bn * layout.vsw}u; i += NT) { vs[i] = f16(0.0); }
  workgroupBarrier();               // K(0), the zeros and the flag visible
${keyLoopsWgsl(
  c,
  (kind) => `${pv}
${qkT}
    workgroupBarrier();             // S visible; every QKᵀ(t) and P·V(t−1) read done
    ${kStage(parts, 'j0').store('ks', 'KSW').join('\n    ')}
    ${vStage(parts, 'j0').store('vs', 'VSW').join('\n    ')}
    ${kStage(parts, tileStart(c, 'next2')).fetch}
    ${vStage(parts, tileStart(c, 'next')).fetch}
${onlineSoftmaxWgsl(parts, kind)}
    workgroupBarrier();             // P(t), K(t+1) and V(t) visible`,
)}
${pv}`;
}

// Q into registers: straight from the buffer where that is right (qFromBuffer), else K head
// dims at a time through the K array (zeros past Nq and d).
function qLoadWgsl({ c, addr, left, qMats }: KernelParts): string {
  return c.qFromBuffer
    ? lines(qMats, (i) => `  let q${i} = subgroupMatrixLoad<${left}, row_major>(&q, qbase + (row0 + wrow) * D + ${i * c.k}u, D);`)
    : lines(
        qMats,
        (i) => `  for (var idx = lid; idx < BM * ${c.k}u; idx += NT) {
    let r = idx / ${c.k}u; let col = ${i * c.k}u + idx % ${c.k}u;
    var x = f16(0.0);
    if (row0 + r < params.nq && col < D) { x = q[qbase + (row0 + r) * ${addr.qs} + col]; }
    ks[idx] = x;
  }
  workgroupBarrier();
  let q${i} = subgroupMatrixLoad<${left}, row_major>(&ks, wrow * ${c.k}u, ${c.k}u);
  workgroupBarrier();`,
      );
}

// The starts [span.x, span.y) of the block's fully visible tiles, for the segmented key loops.
const SPAN_WGSL = `  // The starts [span.x, span.y) of the block's tiles that tile_visible passes (they are
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
  let span = vec2<u32>(jfirst + u32(span_a) * BN, jfirst + u32(span_b) * BN);`;

// Store: each subgroup's O matrices through its S stripe, scaled by 1 / l, to the O buffer.
function storeWgsl({ c, addr, oMats }: KernelParts): string {
  return lines(
    oMats,
    (i) => `  subgroupMatrixStore<row_major>(&ss, sreg, o${i}, SW);
  workgroupBarrier();
  for (var e = lane; e < ${c.m * c.n}u; e += SG) {
    let r = e / ${c.n}u; let col = ${i * c.n}u + e % ${c.n}u;
    let gr = row0 + wrow + r;
    if (gr < params.nq && col < DV) { o[${addr.oRow('gr')} + col] = ss[sreg + r * SW + e % ${c.n}u] * ss[sreg + r * SW + RF]; }
  }
  workgroupBarrier();`,
  );
}

export function matrixKernelWgsl(c: MatrixKernelConfig): string {
  if (c.varlen && c.qFromBuffer) throw new Error('matrixKernelWgsl: a varlen kernel stages Q (its rows stop at sequence boundaries)');
  const parts = kernelParts(c);
  const { layout, addr, result, oMats } = parts;
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
@group(0) @binding(6) var<storage, read> aux: array<f32>;${c.varlen ? VARLEN_BINDING_WGSL : ''}${c.blockList ?? ''}
${scoreWgsl(c.score)}

const BM = ${layout.bm}u; const BN = ${c.bn}u; const D = ${c.d}u; const DV = ${c.dv}u;
const NT = ${layout.threads}u; const SG = ${c.sg}u;
const SW = ${layout.sw}u; const RF = ${Math.max(c.bn, c.n)}u; const PW = ${layout.pw}u; const KSW = ${layout.ksw}u; const VSW = ${layout.vsw}u;
const LPR = ${layout.lanesPerRow}u;     // lanes per query row in the softmax step
const LOG2E = 1.4426950408889634;
const RESCALE_LOG2 = ${(c.rescaleLog * Math.LOG2E).toFixed(6)}; // growth allowed after a row's first P, log2 units
// A score in log2 units; masked scores (NEG_INF) stay NEG_INF.
fn to_log2(x: f32) -> f32 { return select(NEG_INF, x * LOG2E, x > NEG_INF); }

var<workgroup> ps: array<f16, ${layout.bm * layout.pw}>;     // P stripes, [row][key]
var<workgroup> ss: array<f32, ${layout.bm * layout.sw}>;     // S stripes, [row][key]; O scratch; column RF: 1 / l
var<workgroup> rerun: u32;                         // some row's max grew past m + rescaleLog after its first P
var<workgroup> ks: array<f16, ${layout.kHalves}>;        // K tile [key][dim]; first, Q columns where Q is staged
var<workgroup> vs: array<f16, ${c.bn * layout.vsw}>;      // V tile [key][dim]

@compute @workgroup_size(${layout.threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32${c.subgroupId ? ', @builtin(subgroup_id) sgid: u32' : ''}) {
  let warp = ${c.subgroupId ? 'sgid' : '0u'};
  let lane = lid % SG;
${
  c.varlen
    ? varlenPrologue('BM')
    : `  // Longest tiles first (bottom query blocks see the most keys under a causal mask), in
  // groups of params.head_group heads: grid-order.ts.
  let tile = grid_tile(wid, nwg);
  let row0 = tile.x * BM;
  let bh = tile.y; // (batch, query head) row within this dispatch's window (binding-windows.ts)
  let h = (bh + params.head0) % params.hq; // bh counts from the window's first row, params.head0${c.score.user ? '\n  mask_row = bh + params.head0;' : ''}
  let bhk = kv_head(bh);
  let qbase = bh * params.nq * D;
  let kbase = bhk * params.nk * D;
  let vbase = bhk * params.nk * DV;`
}
  let wrow = warp * ${c.m}u;          // this subgroup's first row in the tile
  let sreg = wrow * SW;            // its S stripe / O scratch

  // Q into registers: straight from the buffer where that is right (qFromBuffer), else ${c.k}
  // head dims at a time through the K array (zeros past Nq and d).
${qLoadWgsl(parts)}
${lines(oMats, (i) => `  var o${i} = ${result}();`)}

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

${
  c.blockList
    ? `  // Block-sparse: only the K/V tiles the block mask lists for this Q tile (block-list.ts).
  let bbase = block_base(bh + params.head0, tile.x);
  let bcount = block_list[bbase];`
    : `  let kr = block_key_range(row0, min(row0 + BM, params.nq));
  let jfirst = (kr.x / BN) * BN;`
}
${segmentedLoops(c) ? SPAN_WGSL : ''}
  ${kStage(parts, 'jfirst').decl} ${vStage(parts, 'jfirst').decl}
  // A second pass only where some row's max grew past m + rescaleLog after its first P; it
  // starts every row at its true max, which no score can pass.
  for (var sweep = 0u; sweep < 2u; sweep++) {
    m = mtrue;
    l = select(0.0, exp2(msink - m), sink > NEG_INF && part == 0u);
    var started = false;           // P of this row taken against m (m may no longer move)
    var again = false;
${lines(oMats, (i) => `    o${i} = ${result}();`)}
${tileLoopWgsl(parts).replace(/^(?=.)/gm, '  ')}
    if (again) { rerun = 1u; }
    if (workgroupUniformLoad(&rerun) == 0u) { break; }
  }
  ${lines(Math.log2(layout.lanesPerRow), (i) => `l += subgroupShuffleXor(l, ${1 << i}u);`, ' ')}
  workgroupBarrier();
  if (part == 0u) { ss[srow * SW + RF] = select(0.0, 1.0 / l, l > 0.0); }
  if (grow < params.nq && part == 0u) { lse[${addr.lse('grow')}] = select(neg_inf_runtime(), m * 0.6931471805599453 + log(l), l > 0.0); }
  workgroupBarrier();
${storeWgsl(parts)}
}
`;
  return c.varlen ? withSequenceGeometry(wgsl) : wgsl;
}
