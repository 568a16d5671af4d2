// Flash-decoding's split pass on subgroup matrices (tensor cores): the query rows of one key
// head (GQA's Hq / Hk heads times Nq) are the rows of one M-row Q tile, so S = Q·Kᵀ and
// O += P·V of the whole group are matrix products and each K/V byte is read once for all of
// them. Same bindings, grid ([split, key-head group]) and partial layout ([bh][split][row]) as
// decode-group-kernel.ts, so decode-kernels.ts's LSE combine finishes the job.
//
// Why: the group kernel does the rows × keys dot products and the softmax's O updates in
// scalar f32, and at Hq 64 / Hk 8 it is bound by that arithmetic (BENCHMARKS.md, "GQA decoding
// on the H100"), not by the K/V bytes.
//
// A workgroup is one subgroup. Per block of N = 16 keys: the block's K, read as 16-byte words
// into registers one block ahead, goes to workgroup memory; S (M × N) = Σ Q_i · K_iᵀ over the
// head dim; S to workgroup memory; V likewise into workgroup memory while the online softmax
// runs on plain lanes (SG / M lanes per row) and writes P as f16; O_i += P · V_i. Loading K and
// V as matrices straight from their buffers measured 1.6–1.7× slower (BENCHMARKS.md, "GQA
// decoding on subgroup matrices"): the driver's matrix loads from storage are not 16-byte loads.
//
// Q loads straight from its buffer where the tile's M rows lie inside it; a matrix load
// returns zeros unless it lies wholly inside its array, so the last key heads' tiles are staged
// instead. A K/V block stays inside its key head's rows, so no load needs a guard: the last
// block of a split starts BN keys before the head's end (the keys it repeats are masked).
// Hence Nk ≥ BN.
//
// A result matrix cannot be scaled row by row, so O is rescaled lazily (as flash-matrix-kernel.ts
// does): a row's max m stays while no score passes m + RESCALE_LOG (P ≤ e^RESCALE_LOG fits f16),
// and only a block where one does sends O through workgroup memory to be rescaled per row.
// O / l and LSE = m + log l do not depend on which m was used.
//
// Matrix stores and workgroup loads take run-time offsets (`z`, the always-zero wid.z): with
// compile-time offsets the driver may move them across barriers (flash-matrix-kernel.ts's trap).

import { DECODE_GROUP_DEFAULT_ROWS } from './decode-group-kernel.ts';
import type { MatrixConfig } from './device.ts';
import { PARAMS_WGSL, scoreWgsl, type ScoreSpec } from './params.ts';

export interface DecodeMatrixConfig {
  d: number;
  dv: number;
  /** Query rows of one key head, (Hq / Hk) · Nq, at most m. */
  rows: number;
  nq: number;
  /** Matrix shape: M rows of Q, N keys per block (= K, the P·V inner dimension). */
  m: number;
  n: number;
  /** Subgroup size (one subgroup per workgroup). */
  sg: number;
  score: ScoreSpec;
}

/**
 * Workgroups a launch aims for (decodeSplits): about as many as the H200's 132 SMs hold at once
 * (the kernel's registers allow about seven one-subgroup workgroups per SM). At Hq 64 / Hk 8,
 * B 4 there: 512 → 896 took Nk 32768 from 0.214 to 0.184 ms and Nk 8192 from 0.080 to 0.074;
 * 1056 (a second partial wave) measured 0.240 and 0.098 (BENCHMARKS.md, "Closing the ratios:
 * GQA decoding").
 */
export const DECODE_MATRIX_WORKGROUPS = 896;

/**
 * Whether dense decoding takes this kernel where the adapter has subgroup matrices: where a key
 * head carries more query rows than the group kernel keeps in one workgroup (8 rows at Hq 64 /
 * Hk 8: 0.108 → 0.096 ms at Nk 8192, 0.340 → 0.246 at 32768 on the H100); with 4 rows (Hq 32 /
 * Hk 8) the group kernel measured faster (0.085 against 0.095, 0.229 against 0.245).
 */
export function preferDecodeMatrix(rows: number): boolean {
  return rows > DECODE_GROUP_DEFAULT_ROWS;
}

/** Max growth of a row's logits after its first P before O is rescaled: P ≤ e^8 ≈ 2981, inside f16. */
export const DECODE_RESCALE_LOG = 8;

/**
 * The configuration for a problem, or undefined where the group kernel runs it: no f16
 * 16 × 16 × 16 config, more rows than 16, head dims not multiples of 16, fewer keys than a block,
 * a subgroup size that varies (the kernel is one subgroup) or does not split into M rows.
 */
export function chooseDecodeMatrix(
  p: { d: number; dv: number; hq: number; hk: number; nq: number; nk: number },
  score: ScoreSpec,
  configs: readonly MatrixConfig[],
  subgroupMin: number,
  subgroupMax: number,
): DecodeMatrixConfig | undefined {
  const rows = (p.hq / p.hk) * p.nq;
  if (subgroupMin !== subgroupMax || subgroupMin < 1) return undefined;
  const sg = subgroupMin;
  // 16 × 16 × 16 only: the one shape self-tested and timed on a GPU (BENCHMARKS.md)
  const c = configs.find(
    (c) =>
      c.M === 16 &&
      c.N === 16 &&
      c.K === 16 &&
      c.M >= rows &&
      sg % c.M === 0 &&
      p.d % c.K === 0 &&
      p.dv % c.N === 0 &&
      p.nk >= c.N &&
      (c.N * c.M) % sg === 0 &&
      c.N % (sg / c.M) === 0 &&
      // whole 16-byte words per lane
      ((c.N * p.d) / 8) % sg === 0 &&
      ((c.N * p.dv) / 8) % sg === 0,
  );
  return c ? { d: p.d, dv: p.dv, rows, nq: p.nq, m: c.M, n: c.N, sg, score } : undefined;
}

/** Workgroup memory layout: S (f32, M × SW), P and staged Q blocks (f16, M × PW), a flag. */
export function decodeMatrixLayout(c: DecodeMatrixConfig) {
  const sw = c.n + 4; // padded rows: the softmax lanes read down columns
  const pw = c.n + 8;
  const kvw = Math.max(c.d, c.dv) + 8; // staged K or V row (halves)
  const lanesPerRow = c.sg / c.m;
  return { sw, pw, kvw, lanesPerRow, cols: c.n / lanesPerRow, bytes: c.m * sw * 4 + c.m * pw * 2 + 4 + c.n * kvw * 2 };
}

export function decodeMatrixKernelWgsl(c: DecodeMatrixConfig): string {
  const L = decodeMatrixLayout(c);
  const { m: M, n: N, rows: R, sg: SG } = c;
  const QM = c.d / N; // Q left matrices (K = N columns each)
  const OM = c.dv / N; // O result matrices
  const SC = L.cols; // scores per lane per block
  const left = `subgroup_matrix_left<f16, ${N}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${N}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  const lines = (n: number, f: (i: number) => string, sep = '\n  ') => Array.from({ length: n }, (_, i) => f(i)).join(sep);
  const KU = (N * c.d) / 8 / SG; // 16-byte words of a K block per lane
  const VU = (N * c.dv) / 8 / SG;
  // Words u of this lane: key idx / W8 of the block at b, word idx % W8 of the row.
  const fetch = (name: string, buf: string, n: number, w8: number) =>
    lines(n, (u) => `{ let idx = lid + ${u * SG}u; ${name}${u} = ${buf}[(kbase + b + idx / ${w8}u) * ${w8}u + idx % ${w8}u]; }`, '\n    ');
  const stash = (name: string, n: number, w8: number) =>
    lines(
      n,
      (u) =>
        `{ let idx = lid + ${u * SG}u; let at = (idx / ${w8}u) * KVW + (idx % ${w8}u) * 8u; ${[0, 1, 2, 3]
          .map((e) => `let h${e} = bitcast<vec2<f16>>(${name}${u}[${e}]); kv[at + ${2 * e}u] = h${e}.x; kv[at + ${2 * e + 1}u] = h${e}.y;`)
          .join(' ')} }`,
      '\n    ',
    );
  const rowReduce = (op: string, x: string) => {
    const out: string[] = [];
    let cur = x;
    for (let o = L.lanesPerRow / 2; o >= 1; o /= 2) {
      out.push(`${op}(${cur}, subgroupShuffleXor(${cur}, ${o}u))`);
      cur = out[out.length - 1];
    }
    return cur;
  };
  return /* wgsl */ `
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> qh: array<f16>;
@group(0) @binding(2) var<storage, read> kw: array<vec4<u32>>; // 8 halves a word
@group(0) @binding(3) var<storage, read> vw: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> opart: array<f32>;   // [bh][split][row][dv]
@group(0) @binding(5) var<storage, read_write> lpart: array<f32>;   // [bh][split][row]
@group(0) @binding(6) var<storage, read> aux: array<f32>;
${scoreWgsl(c.score)}
const NQ = ${c.nq}u;
const G = ${R / c.nq}u; // query heads per key head
const R = ${R}u;        // rows used of the M-row tile
const D = ${c.d}u; const DV = ${c.dv}u; const BN = ${N}u;
const SW = ${L.sw}u; const PW = ${L.pw}u;
const LPR = ${L.lanesPerRow}u; const SC = ${SC}u;
const RESCALE_LOG = ${DECODE_RESCALE_LOG}.0;
var<workgroup> ss: array<f32, ${M * L.sw}>;
var<workgroup> ps: array<f16, ${M * L.pw}>;
var<workgroup> rescale_wg: u32;
var<workgroup> kv: array<f16, ${N * L.kvw}>; // the block's K, then its V
const KVW = ${L.kvw}u;

fn add(a: f32, b: f32) -> f32 { return a + b; }

@compute @workgroup_size(${SG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &aux; // bound for every problem; read only by ALiBi's score code
  let z = wid.z; // always 0, unknown to the compiler (see the header)
  let split = wid.x;
  let bh0 = wid.y * G;
  let kbase = kv_head(bh0) * params.nk;
  let k_lo = split * params.split_len;
  let k_hi = min(params.nk, k_lo + params.split_len);
  let kr = block_key_range(0u, NQ);
  let lo = max(k_lo, kr.x);
  let hi = max(lo, min(k_hi, kr.y));

  // This lane's row of the tile and its columns of a block.
  let row = lid / LPR;
  let c0 = (lid % LPR) * SC;
  let live = row < R;
  let rr = min(row, R - 1u);
  let h = (bh0 + rr / NQ + params.head0) % params.hq;
  let qi = rr % NQ;

  // Q as left matrices: straight from its buffer where the tile's M rows lie inside it (rows
  // past R read other heads' queries; their scores are masked), else staged a column block at a
  // time through workgroup memory with the rows past R zeroed.
  ${lines(QM, (i) => `var q${i} = ${left}();`)}
  if ((bh0 * NQ + ${M}u) * D <= arrayLength(&qh)) {
    ${lines(QM, (i) => `q${i} = subgroupMatrixLoad<${left}, row_major>(&qh, bh0 * NQ * D + ${i * N}u, D);`, '\n    ')}
  } else {
    ${lines(
      QM,
      (i) => `for (var e = lid; e < ${M * N}u; e += ${SG}u) {
      let r = e / BN;
      ps[r * PW + e % BN] = select(f16(0.0), qh[(bh0 * NQ + min(r, R - 1u)) * D + ${i * N}u + e % BN], r < R);
    }
    workgroupBarrier();
    q${i} = subgroupMatrixLoad<${left}, row_major>(&ps, z, PW);
    workgroupBarrier();`,
      '\n    ',
    )}
  }
  ${lines(OM, (i) => `var o${i} = ${result}();`)}
  var m = NEG_INF;
  var l = 0.0; // this lane's part of its row's sum
  ${lines(KU, (u) => `var kp${u} = vec4<u32>(0u);`, ' ')}
  ${lines(VU, (u) => `var vp${u} = vec4<u32>(0u);`, ' ')}
  if (lo < hi) {
    let b = min(lo, params.nk - BN);
    ${fetch('kp', 'kw', KU, c.d / 8)}
    ${fetch('vp', 'vw', VU, c.dv / 8)}
  }

  for (var j0 = lo; j0 < hi; j0 += BN) {
    // The block's first key: j0, or BN keys before the head's end (the repeated keys are masked).
    let b = min(j0, params.nk - BN);
    // K of this block into workgroup memory, the next block's K into registers.
    let nb = min(j0 + BN, params.nk - BN);
    let more = j0 + BN < hi;
    workgroupBarrier();
    ${stash('kp', KU, c.d / 8)}
    workgroupBarrier();
    if (more) {
      let b = nb;
      ${fetch('kp', 'kw', KU, c.d / 8)}
    }
    var acc = ${result}();
    ${lines(QM, (i) => `acc = subgroupMatrixMultiplyAccumulate(q${i}, subgroupMatrixLoad<${right}, col_major>(&kv, z + ${i * N}u, KVW), acc);`, '\n    ')}
    subgroupMatrixStore<row_major>(&ss, z, acc, SW);
    workgroupBarrier();
    // V likewise (its stores are seen after the barrier below).
    ${stash('vp', VU, c.dv / 8)}
    if (more) {
      let b = nb;
      ${fetch('vp', 'vw', VU, c.dv / 8)}
    }
    ${lines(SC, (t) => `let s${t} = select(NEG_INF, score_edge(h, qi, b + c0 + ${t}u, ss[row * SW + c0 + ${t}u]), live && b + c0 + ${t}u >= j0 && b + c0 + ${t}u < hi);`, '\n    ')}
    var bmax = ${Array.from({ length: SC }, (_, t) => `s${t}`).reduce((a, x) => `max(${a}, ${x})`)};
    bmax = ${rowReduce('max', 'bmax')};
    // m moves freely until the row's first P, then only past m + RESCALE_LOG (O rescaled below).
    let grow = m > NEG_INF && bmax > m + RESCALE_LOG;
    let mnew = select(m, bmax, m == NEG_INF || grow);
    let alpha = select(1.0, exp(m - mnew), grow);
    m = mnew;
    l *= alpha;
    ${lines(
      SC,
      (t) => `let p${t} = f16(select(0.0, exp(s${t} - m), s${t} > NEG_INF));
    ps[row * PW + c0 + ${t}u] = p${t};`,
      '\n    ',
    )}
    l += ${lines(SC, (t) => `f32(p${t})`, ' + ')};
    let any_grow = subgroupAny(grow);
    if (lid == 0u) { rescale_wg = select(0u, 1u, any_grow); }
    if (workgroupUniformLoad(&rescale_wg) != 0u) {
      // Rare: O through workgroup memory, each row scaled by its alpha.
      ${lines(
        OM,
        (i) => `subgroupMatrixStore<row_major>(&ss, z, o${i}, SW);
      workgroupBarrier();
      for (var t = 0u; t < SC; t++) { ss[row * SW + c0 + t] *= alpha; }
      workgroupBarrier();
      o${i} = subgroupMatrixLoad<${result}, row_major>(&ss, z, SW);
      workgroupBarrier();`,
        '\n      ',
      )}
    }
    let pm = subgroupMatrixLoad<${left}, row_major>(&ps, z, PW);
    ${lines(OM, (i) => `o${i} = subgroupMatrixMultiplyAccumulate(pm, subgroupMatrixLoad<${right}, row_major>(&kv, z + ${i * N}u, KVW), o${i});`, '\n    ')}
  }

  let lrow = ${rowReduce('add', 'l')};
  let inv = select(0.0, 1.0 / lrow, lrow > 0.0);
  let out = ((bh0 + rr / NQ) * params.splits + split) * NQ + qi;
  ${lines(
    OM,
    (i) => `workgroupBarrier();
  subgroupMatrixStore<row_major>(&ss, z, o${i}, SW);
  workgroupBarrier();
  if (live) { for (var t = 0u; t < SC; t++) { opart[out * DV + ${i * N}u + c0 + t] = ss[row * SW + c0 + t] * inv; } }`,
  )}
  if (live && c0 == 0u) { lpart[out] = select(NEG_INF, m + log(lrow), lrow > 0.0); }
}
`;
}
