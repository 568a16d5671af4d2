// Flash-decoding's split pass with no workgroup memory in its loop, and every K/V byte read
// once for all the query rows that share it: the R = (Hq / Hk)·Nq rows of one key head (GQA,
// MQA and plain decoding alike). Partials go to the same [bh][split][row] layout as
// decode-kernels.ts's split pass, so its LSE combine finishes the job.
//
// Why not decode-kernels.ts's split pass: it keeps a split's scores in workgroup memory (21 KiB),
// and an SM gives all its workgroups together about 48 KiB (BENCHMARKS.md), so only
// two workgroups of 128 lanes ran per SM: too few loads in flight for a pass that only streams
// K and V. And it re-reads K/V for every query row, so GQA read a group's K/V once per query head.
//
// Q, K and V are stored as f16 (what inference engines cache; half the bytes of f32) and read
// as packed u32 words unpacked with unpack2x16float: core WGSL, so no shader-f16 is needed and
// every adapter reads half the bytes. Scores, softmax and O accumulate in f32.
//
// Layout: LPK lanes per key (neighbouring lanes of one subgroup). A lane holds the column groups
// (16 bytes) part, part + LPK, … of q and of O for each of the R rows, so a warp's load covers
// 32 / LPK rows of K or V, each 16·LPK contiguous bytes. The workgroup's NT / LPK lane groups
// ("slots") take keys slot, slot + NT / LPK, … of the split, KU keys per step with all their K and
// V loads issued before the step's arithmetic (dense K/V: a step ahead, so they are in flight
// during the previous step's); each slot keeps an online softmax (m, l, O) per row in registers, its
// partial dots summed across its LPK lanes with subgroupShuffleXor. At the end the slots' states
// meet in workgroup memory, halving the slots each round (log2 slots barriers per split).

import { PARAMS_WGSL, scoreWgsl, type ScoreSpec } from './params.ts';
import { PAGED_BINDING_WGSL, pagedLoop, pagedPrologue } from './paged-layout.ts';
import { withSequenceGeometry } from './sequence-geometry.ts';
import { GROUP_TILE_BITS } from './block-list.ts';

export interface DecodeGroupConfig {
  d: number;
  dv: number;
  /** Query rows sharing one key head: (hq / hk) · nq. */
  rows: number;
  /** Query rows per head (nq): row r is head r / nq of the group, query row r % nq. */
  nq: number;
  /** Lanes per key (a power of two, at most the adapter's smallest subgroup). */
  lpk: number;
  /** Keys per slot per step. */
  ku: number;
  /** Lanes per workgroup. */
  threads: number;
  /** Columns per load: 8 (a vec4<u32> of f16 pairs) or 4 (a vec2<u32>). */
  cols: 4 | 8;
  /** The problem's score modifiers (the score code is specialised to them). */
  score: ScoreSpec;
  /** K/V in a paged cache of pages of this many tokens (paged-layout.ts) instead of [B, Hk, N, d]. */
  pageSize?: number;
  /** Dense K/V only: the next step's words are loaded before this step's arithmetic (in flight during it). */
  prefetch: boolean;
  /**
   * Block-sparse: the group block list's WGSL (block-list.ts, groupBlockListWgsl) at tiles of
   * `bn` keys (groupTileKeys); each split walks params.split_len of its entries instead of a key range.
   */
  blockList?: { wgsl: string; bn: number };
}

/** Keys per block-list tile of a block-sparse config: a whole number of its steps, at least 64. */
export function groupTileKeys(c: Pick<DecodeGroupConfig, 'threads' | 'lpk' | 'ku'>): number {
  return Math.max(64, (c.threads / c.lpk) * c.ku);
}

/** Benchmark study: lanes per key, keys per step, lanes per workgroup (powers of two). */
export interface DecodeGroupPrefs {
  lpk?: number;
  ku?: number;
  threads?: number;
  /** Columns per load (8: 16-byte loads; 4: 8-byte loads). */
  cols?: 4 | 8;
  /**
   * Query heads per workgroup, where it divides Hq / Hk: a key head's heads then go to several
   * workgroups, each reading its K/V (the later ones, launched beside it, from L2 if it holds).
   */
  groupHeads?: number;
  /** Dense K/V loaded a step ahead (true) or at the top of each step (false), as paged K/V always is. */
  prefetch?: boolean;
}

/** The most query rows one workgroup carries (registers: R·(D + DV)/LPK floats per lane). */
export const DECODE_GROUP_MAX_ROWS = 8;

/**
 * The configuration for a problem, or undefined where decode-kernels.ts's split pass runs it:
 * head dims not multiples of 4 or over 256, more than DECODE_GROUP_MAX_ROWS rows per key head,
 * or no subgroups. LPK: at least 8 lanes per key (as the subgroup allows), more where a lane's
 * q and O state would pass 64 floats; COLS: 8 columns per load where the head dims hold LPK
 * groups of 8, else 4. Dense K/V with several rows is prefetched (the next step's words loaded
 * before this step's arithmetic) with KU = 2 keys per step; one row (prefetching measured 0.263 →
 * 0.274 ms at Hq 16, Nk 32768) and paged K/V, whose loop goes page by page, load each step's 2
 * (one row) or 4 keys (more rows) at its top. With f16 K/V on the H200 (BENCHMARKS.md,
 * "fp16 K/V decoding" and "Closing the ratios: GQA decoding") 8 lanes per key took one-row decoding from
 * 0.396 to 0.269 ms at Nk 32768, 4 keys per step took 4 rows from 0.247 to 0.223 ms, and the
 * prefetch with 2 keys 0.190 to 0.181 ms (with 4 keys it measured 0.219: more registers).
 */
export function chooseDecodeGroup(
  p: { d: number; dv: number; hq: number; hk: number; nq: number; pageSize?: number },
  score: ScoreSpec,
  subgroupMin: number,
  maxWorkgroupStorage = 16384,
  prefs: DecodeGroupPrefs = {},
): DecodeGroupConfig | undefined {
  const perKeyHead = p.hq / p.hk;
  const heads =
    prefs.groupHeads !== undefined && prefs.groupHeads >= 1 && perKeyHead % prefs.groupHeads === 0 ? prefs.groupHeads : perKeyHead;
  const rows = heads * p.nq;
  if (p.d % 4 !== 0 || p.dv % 4 !== 0 || p.d > 256 || p.dv > 256 || rows > DECODE_GROUP_MAX_ROWS || subgroupMin < 1) return undefined;
  let lpk = 1;
  while (lpk < 32 && (rows * (Math.ceil(p.d / lpk) + Math.ceil(p.dv / lpk)) > 64 || lpk < Math.min(8, subgroupMin))) lpk *= 2;
  lpk = Math.min(prefs.lpk ?? lpk, pow2Floor(subgroupMin));
  const cols = prefs.cols ?? (p.d % 8 === 0 && p.dv % 8 === 0 && 8 * lpk <= Math.min(p.d, p.dv) ? 8 : 4);
  const prefetch = prefs.prefetch ?? (p.pageSize === undefined && rows > 1);
  const ku = prefs.ku ?? (prefetch || rows === 1 ? 2 : 4);
  // 128 lanes, fewer where the end-of-split reduction would not fit in 16 KiB (or the adapter's
  // limit): small adapters whose subgroups hold fewer lanes per key carry more state per lane.
  const budget = Math.min(16384, maxWorkgroupStorage);
  for (let threads = prefs.threads ?? 128; threads >= 2 * lpk; threads /= 2) {
    const c = { d: p.d, dv: p.dv, rows, nq: p.nq, lpk, ku, threads, cols, score, pageSize: p.pageSize, prefetch };
    if (decodeGroupBytes(c) <= budget) return c;
  }
  return undefined;
}

function pow2Floor(x: number): number {
  let p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

/** Workgroup memory of the end-of-split reduction, bytes. */
export function decodeGroupBytes(c: DecodeGroupConfig): number {
  const slots = c.threads / c.lpk;
  const cv = Math.ceil(c.dv / c.cols / c.lpk) * (c.cols / 4);
  return (slots / 2) * c.rows * (c.lpk * cv * 16 + 8);
}

export function decodeGroupKernelWgsl(c: DecodeGroupConfig): string {
  const { rows: R, lpk: LPK, ku: KU, threads: NT, cols: COLS } = c;
  const H = COLS / 4; // vec4<f32> halves per load
  const DG = c.d / COLS;
  const DVG = c.dv / COLS;
  const CQ = Math.ceil(DG / LPK) * H; // the lane's q (and K) vec4s per row
  const CV = Math.ceil(DVG / LPK) * H; // the lane's O (and V) vec4s per row
  const SLOTS = NT / LPK;
  const HALF = SLOTS / 2;
  const each = (n: number, f: (i: number) => string, sep = '\n  ') => Array.from({ length: n }, (_, i) => f(i)).join(sep);
  // Load group g of this lane: part + LPK·g; guarded only where the last group runs past the row.
  const colOk = (g: number, wg: number) => ((g + 1) * LPK <= wg ? '' : `part + ${g * LPK}u < ${wg}u`);
  const raw = COLS === 8 ? 'vec4<u32>' : 'vec2<u32>';
  // The H vec4<f32>s of load group g of a row (row index in loads: row · wg), as `name_t`, t = g·H + h.
  const word = (buf: string, row: string, g: number, wg: number) => {
    const ok = colOk(g, wg);
    const at = `${buf}[${row} * ${wg}u + ${ok ? `min(part + ${g * LPK}u, ${wg - 1}u)` : `part + ${g * LPK}u`}]`;
    return ok ? `select(${raw}(0u), ${at}, ${ok})` : at;
  };
  const unpack = (name: string, w: string, g: number) =>
    each(H, (h) => `let ${name}_${g * H + h} = unpack4(${w}.${h ? 'zw' : 'xy'});`, '\n    ');
  const load = (name: string, buf: string, row: string, g: number, wg: number) =>
    `let ${name}_w${g} = ${word(buf, row, g, wg)};\n    ${unpack(name, `${name}_w${g}`, g)}`;
  const P = c.pageSize;
  // Row of K / V that holds key `key`: dense, the key head's block of rows; paged, the key's
  // slot in its page (`page`, `pg`: paged-layout.ts's loop).
  const kvRow = (key: string) => (P ? `((page * ${P}u + ${key} - pg * ${P}u) * params.hk + hk)` : `(kbase + ${key})`);
  const end = P ? 'pend' : 'hi';
  const FETCH = !P && c.prefetch;
  const BL = P ? undefined : c.blockList;
  const STEP = SLOTS * KU;
  // Prefetch: the raw words of step j (keys j + u·SLOTS + slot, clamped into the split, or
  // block-sparse, into the cache) live in kw{u}_{g} / vw{u}_{g} across the loop's back edge.
  const fetchStep = (j: string) =>
    each(
      KU,
      (u) => `{ let nk${u} = min(${j} + ${u * SLOTS}u + slot, ${BL ? 'params.nk' : 'hi'} - 1u);
      ${each(CQ / H, (g) => `kw${u}_${g} = ${word('kh', `(kbase + nk${u})`, g, DG)};`, ' ')}
      ${each(CV / H, (g) => `vw${u}_${g} = ${word('vh', `(kbase + nk${u})`, g, DVG)};`, ' ')} }`,
      '\n    ',
    );
  const fetchVars = each(
    KU,
    (u) => `${each(CQ / H, (g) => `var kw${u}_${g} = ${raw}(0u);`, ' ')} ${each(CV / H, (g) => `var vw${u}_${g} = ${raw}(0u);`, ' ')}`,
  );
  const wgsl = /* wgsl */ `
${LPK > 1 ? 'enable subgroups;' : ''}
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: Params;
// f16 pairs in u32 words, COLS = ${COLS} columns per element
@group(0) @binding(1) var<storage, read> qh: array<${raw}>;
@group(0) @binding(2) var<storage, read> kh: array<${raw}>;
@group(0) @binding(3) var<storage, read> vh: array<${raw}>;
@group(0) @binding(4) var<storage, read_write> opart: array<f32>;   // [bh][split][row][dv]
@group(0) @binding(5) var<storage, read_write> lpart: array<f32>;   // [bh][split][row]
@group(0) @binding(6) var<storage, read> aux: array<f32>;${P ? PAGED_BINDING_WGSL : ''}${BL ? BL.wgsl : ''}
${scoreWgsl(c.score)}
const NQ = ${c.nq}u;
const G = ${R / c.nq}u; // query heads per key head
// End-of-split reduction: the upper half of the remaining slots leave (m, l) and O here.
var<workgroup> red_o: array<vec4<f32>, ${HALF * R * LPK * CV}>;
var<workgroup> red_ml: array<vec2<f32>, ${HALF * R}>;

fn unpack4(w: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  _ = &aux; // bound for every problem; read only by ALiBi's score code
${
  P
    ? pagedPrologue()
    : `  let split = wid.x;
  let bh0 = wid.y * G;            // the group's first (batch, query head) row in this window
  let kbase = kv_head(bh0) * params.nk;`
}
  let part = lid % ${LPK}u;
  let slot = lid / ${LPK}u;
${
  BL
    ? `  // This split's entries of the group's list (params.split_len tiles a split).
  let gbase = group_base((bh0 + params.head0) / G);
  let e_lo = min(block_list[gbase], split * params.split_len);
  let e_hi = min(block_list[gbase], e_lo + params.split_len);`
    : `  let k_lo = split * params.split_len;
  let k_hi = min(params.nk, k_lo + params.split_len);
  let kr = block_key_range(0u, NQ);
  let lo = max(k_lo, kr.x);
  let hi = max(lo, min(k_hi, kr.y));`
}

  // This lane's column groups of each row's q, and the rows' online-softmax state.
  ${each(
    R,
    (r) => `let qrow${r} = (bh0 + ${Math.floor(r / c.nq)}u) * NQ + ${r % c.nq}u;
  ${each(CQ / H, (g) => load(`q${r}`, 'qh', `qrow${r}`, g, DG))}
  var m${r} = NEG_INF; var l${r} = 0.0;
  ${each(CV, (t) => `var o${r}_${t} = vec4<f32>(0.0);`)}`,
  )}

  // A uniform loop (the shuffles need every lane of a slot, and WGSL uniform control flow):
  // step j0 covers keys j0 … j0 + SLOTS·KU − 1, slot s taking j0 + s, j0 + s + SLOTS, ….
  ${
    FETCH
      ? `${fetchVars}
  if (${BL ? 'e_lo < e_hi' : 'lo < hi'}) {
    ${
      BL
        ? `let t_first = (block_list[gbase + 1u + e_lo] & ${GROUP_TILE_BITS}u) * ${BL.bn}u;
    ${fetchStep('t_first')}`
        : fetchStep('lo')
    }
  }`
      : ''
  }
  ${
    P
      ? pagedLoop(P, `${STEP}u`)
      : BL
        ? `// Tile by tile over the split's entries (empty tiles are not listed), its keys a step at a time.
  for (var e = e_lo; e < e_hi; e++) {
    let ent = block_list[gbase + 1u + e];
    let t0 = (ent & ${GROUP_TILE_BITS}u) * ${BL.bn}u;
    let hi = min(params.nk, t0 + ${BL.bn}u);${
      FETCH
        ? `
    let t_next = (block_list[gbase + 1u + min(e + 1u, e_hi - 1u)] & ${GROUP_TILE_BITS}u) * ${BL.bn}u;`
        : ''
    }
  for (var j0 = t0; j0 < t0 + ${BL.bn}u; j0 += ${STEP}u) {`
        : `for (var j0 = lo; j0 < hi; j0 += ${STEP}u) {`
  }
    ${
      FETCH
        ? `// This step's words (loaded one step ahead) unpacked, then the next step's loads issued.
    ${each(
      KU,
      (u) => `let key${u} = min(j0 + ${u * SLOTS}u + slot, hi - 1u);
    ${each(CQ / H, (g) => unpack(`k${u}`, `kw${u}_${g}`, g), '\n    ')}
    ${each(CV / H, (g) => unpack(`v${u}`, `vw${u}_${g}`, g), '\n    ')}`,
      '\n    ',
    )}
    ${fetchStep(BL ? `select(t_next, j0 + ${STEP}u, j0 + ${STEP}u < t0 + ${BL.bn}u)` : `j0 + ${STEP}u`)}`
        : `// Every load of the step first (keys past the split clamped into it, masked below).
    ${each(
      KU,
      (u) => `let key${u} = min(j0 + ${u * SLOTS}u + slot, ${end} - 1u);
    ${each(CQ / H, (g) => load(`k${u}`, 'kh', kvRow(`key${u}`), g, DG), '\n    ')}
    ${each(CV / H, (g) => load(`v${u}`, 'vh', kvRow(`key${u}`), g, DVG), '\n    ')}`,
      '\n    ',
    )}`
    }
    // Partial dots of every (row, key) pair, summed over the slot's lanes: reduce-scatter, then
    // all-gather (2·(n − n/LPK) shuffles for n pairs, against n·log2 LPK for n butterflies).
    ${allReduce(R * KU, (v) => `${each(CQ, (t) => `dot(k${v % KU}_${t}, q${Math.floor(v / KU)}_${t})`, ' + ')}`, LPK)}
    ${each(
      R,
      (r) => `{
      // row ${r}: head bh0 + ${Math.floor(r / c.nq)}, query row ${r % c.nq}
      let h = (bh0 + ${Math.floor(r / c.nq)}u + params.head0) % params.hq;
      ${
        BL
          ? `${
              c.score.user
                ? `mask_row = bh0 + ${Math.floor(r / c.nq)}u + params.head0;
      `
                : ''
            }let full = (ent & ${(1 << (16 + Math.floor(r / c.nq))) >>> 0}u) != 0u; // this head sees the whole tile: no mask tests
      ${each(
        KU,
        (u) => `var s${u} = NEG_INF;
      if (j0 + ${u * SLOTS}u + slot < hi) { if (full) { s${u} = score_full(h, ${r % c.nq}u, key${u}, dot${r * KU + u}); } else { s${u} = score_edge(h, ${r % c.nq}u, key${u}, dot${r * KU + u}); } }`,
        '\n      ',
      )}`
          : each(
              KU,
              (u) =>
                `let s${u} = select(NEG_INF, score_edge(h, ${r % c.nq}u, key${u}, dot${r * KU + u}), j0 + ${u * SLOTS}u + slot < ${end});`,
              '\n      ',
            )
      }
      let mnew = ${maxOf([`m${r}`, ...Array.from({ length: KU }, (_, u) => `s${u}`)])};
      let alpha = select(0.0, exp(m${r} - mnew), m${r} > NEG_INF);
      ${each(KU, (u) => `let p${u} = select(0.0, exp(s${u} - mnew), s${u} > NEG_INF);`, '\n      ')}
      l${r} = l${r} * alpha + ${each(KU, (u) => `p${u}`, ' + ')};
      m${r} = mnew;
      ${each(CV, (t) => `o${r}_${t} = o${r}_${t} * alpha + ${each(KU, (u) => `p${u} * v${u}_${t}`, ' + ')};`, '\n      ')}
    }`,
      '\n    ',
    )}
  }${P ? '\n    page = page_next;\n  }' : BL ? '\n  }' : ''}

  // The slots' states meet: each round the upper half of the remaining slots leave theirs, the
  // lower half merge them (O and l rescaled to the larger max).
  for (var n = ${HALF}u; n > 0u; n >>= 1u) {
    if (slot >= n && slot < 2u * n) {
      let s = slot - n;
      ${each(
        R,
        (r) => `red_ml[s * ${R}u + ${r}u] = vec2<f32>(m${r}, l${r});
      ${each(CV, (t) => `red_o[((s * ${R}u + ${r}u) * ${CV}u + ${t}u) * ${LPK}u + part] = o${r}_${t};`, '\n      ')}`,
        '\n      ',
      )}
    }
    workgroupBarrier();
    if (slot < n) {
      ${each(
        R,
        (r) => `{
        let ml = red_ml[slot * ${R}u + ${r}u];
        let mnew = max(m${r}, ml.x);
        let a = select(0.0, exp(m${r} - mnew), m${r} > NEG_INF);
        let b = select(0.0, exp(ml.x - mnew), ml.x > NEG_INF);
        l${r} = l${r} * a + ml.y * b;
        m${r} = mnew;
        ${each(CV, (t) => `o${r}_${t} = o${r}_${t} * a + red_o[((slot * ${R}u + ${r}u) * ${CV}u + ${t}u) * ${LPK}u + part] * b;`, '\n        ')}
      }`,
        '\n      ',
      )}
    }
    workgroupBarrier();
  }

  if (slot == 0u) {
    ${each(
      R,
      (r) => `{
      let out = ${P ? `((sbase + split) * params.hq + hq0 + ${Math.floor(r / c.nq)}u)` : `((bh0 + ${Math.floor(r / c.nq)}u) * params.splits + split)`} * NQ + ${r % c.nq}u;
      let inv = select(0.0, 1.0 / l${r}, l${r} > 0.0);
      ${each(
        CV,
        (t) => {
          const g = Math.floor(t / H);
          const body = `let x = o${r}_${t} * inv; let c = (part + ${g * LPK}u) * ${COLS}u + ${(t % H) * 4}u; opart[out * ${c.dv}u + c] = x.x; opart[out * ${c.dv}u + c + 1u] = x.y; opart[out * ${c.dv}u + c + 2u] = x.z; opart[out * ${c.dv}u + c + 3u] = x.w;`;
          return colOk(g, DVG) ? `if (${colOk(g, DVG)}) { ${body} }` : `{ ${body} }`;
        },
        '\n      ',
      )}
      if (part == 0u) { lpart[out] = select(NEG_INF, m${r} + log(l${r}), l${r} > 0.0); }
    }`,
      '\n    ',
    )}
  }
}
`;
  return P ? withSequenceGeometry(wgsl) : wgsl;
}

/**
 * WGSL that sums n values over each aligned group of `lanes` lanes of a subgroup and leaves every
 * sum, as dot0 … dot{n−1}, in every lane of the group. While the list halves evenly, each stage
 * keeps half of it (the half named by this lane's bit of the stage's offset) and adds the
 * partner's copy of that half; the stages left over add whole lists; then the kept halves are
 * gathered back in reverse order.
 */
function allReduce(n: number, value: (v: number) => string, lanes: number): string {
  const out: string[] = [];
  let names = Array.from({ length: n }, (_, v) => {
    out.push(`let a${v} = ${value(v)};`);
    return `a${v}`;
  });
  const scattered: number[] = [];
  for (let o = lanes / 2; o >= 1; o /= 2) {
    if (names.length % 2 === 0) {
      const half = names.length / 2;
      out.push(`let up${o} = (part & ${o}u) != 0u;`);
      names = names.slice(0, half).map((lo, i) => {
        const hi = names[half + i];
        out.push(`let r${o}_${i} = select(${lo}, ${hi}, up${o}) + subgroupShuffleXor(select(${hi}, ${lo}, up${o}), ${o}u);`);
        return `r${o}_${i}`;
      });
      scattered.push(o);
    } else {
      names = names.map((x, i) => {
        out.push(`let b${o}_${i} = ${x} + subgroupShuffleXor(${x}, ${o}u);`);
        return `b${o}_${i}`;
      });
    }
  }
  for (const o of scattered.reverse()) {
    const lo: string[] = [];
    const hi: string[] = [];
    names.forEach((x, i) => {
      out.push(`let g${o}_${i} = subgroupShuffleXor(${x}, ${o}u);`);
      lo.push(`select(${x}, g${o}_${i}, up${o})`);
      hi.push(`select(g${o}_${i}, ${x}, up${o})`);
    });
    names = [...lo, ...hi].map((x, i) => {
      out.push(`let c${o}_${i} = ${x};`);
      return `c${o}_${i}`;
    });
  }
  names.forEach((x, v) => out.push(`let dot${v} = ${x};`));
  return out.join('\n    ');
}

/** WGSL's two-argument max over a list: max(a, max(b, …)). */
function maxOf(xs: string[]): string {
  return xs.length === 1 ? xs[0] : `max(${xs[0]}, ${maxOf(xs.slice(1))})`;
}

/** Workgroups a decoding launch aims for (one per split and key head): see decodeSplits. */
export const DECODE_GROUP_WORKGROUPS = 1024;

/**
 * Splits of the key range per key head: about `workgroups` workgroups in all, splits of at
 * least 256 keys (each pays for a query load and the end-of-split reduction). 1024 rather than
 * 2048: the longer splits measured 4–12% faster on the H200 wherever the count changed (every
 * shape but Nk = 8192 with 4 and 8 rows, already at 256 keys a split; BENCHMARKS.md, "WebGPU
 * against CUDA on the H200").
 */
export function decodeSplits(nk: number, keyHeads: number, workgroups = DECODE_GROUP_WORKGROUPS): number {
  return Math.max(1, Math.min(Math.ceil(workgroups / keyHeads), Math.ceil(nk / 256)));
}

/**
 * The workgroup target of dense decoding: DECODE_GROUP_WORKGROUPS for one query row per
 * workgroup, half of it for more. With f16 K/V on the H200 the longer splits took Hq 32 / Hk 8
 * from 0.101 to 0.076 ms at Nk 8192 and 0.222 to 0.197 at 32768 (Hq 64: 0.119 → 0.106, 0.344 →
 * 0.339), and cost one-row decoding 6–27% (BENCHMARKS.md, "fp16 K/V decoding").
 */
export function decodeWorkgroups(rows: number): number {
  return rows > 1 ? DECODE_GROUP_WORKGROUPS / 2 : DECODE_GROUP_WORKGROUPS;
}

/** Rows per workgroup the dense decoding path aims for (denseGroupHeads). */
export const DECODE_GROUP_DEFAULT_ROWS = 4;

/**
 * Query heads per workgroup for dense decoding: the whole key head's group where its rows fit in
 * DECODE_GROUP_DEFAULT_ROWS, else the largest divisor of the group that does (at least one head).
 * With 8 rows every lane of a 32-lane key group repeats eight rows' softmax, and the kernel is
 * bound by that arithmetic rather than by memory; two workgroups of 4 rows, each requesting the
 * key head's K/V, measured 1.55 → 1.95 TB/s of unique K/V at Hq 64, Hk 8, Nk 8192 and 2.09 → 2.51
 * at 32768 on the H200 (BENCHMARKS.md, "WebGPU against CUDA on the H200"). The second request
 * of each K/V byte is assumed to come from L2 (its workgroup runs beside the first); with no
 * hardware counters under Dawn that is not measured.
 */
export function denseGroupHeads(p: { hq: number; hk: number; nq: number }): number {
  const group = p.hq / p.hk;
  if (group * p.nq <= DECODE_GROUP_DEFAULT_ROWS) return group;
  for (let h = group - 1; h > 1; h--) if (group % h === 0 && h * p.nq <= DECODE_GROUP_DEFAULT_ROWS) return h;
  return 1;
}
