// The serving-layout contract of `run`, run in process as a user runs it (argv in, files out) and checked
// against a float64 reference written HERE (no engine numerics): per sequence, scores
// q·k/sqrt(d) with the causal / window masks aligned bottom-right in that sequence, a
// max-subtracted softmax, o = P V, lse = log Σ exp, and for the backward dP = dO Vᵀ,
// dS = P (dP − rowsum(dO ∘ O)), dq = dS K / sqrt(d), dk = dSᵀ q / sqrt(d), dv = Pᵀ dO, summed
// over the query heads of a K/V head. Tensors are laid out and paged by this file's own
// index arithmetic; the pool's unowned slots hold NaN. Tolerances: fp32 2e-5, 16-bit 2e-3.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import { seqOffsets } from '../layouts/varlen.ts';
import { runCliCaptured } from './run-cli-captured.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-layout-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;

type Prec = 'fp32' | 'fp16' | 'bf16';
const TOL: Record<Prec, number> = { fp32: 2e-5, fp16: 2e-3, bf16: 2e-3 };

// ---- inputs as the CLI will see them ----

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** float32 → bfloat16, round to nearest even, as torch does. */
function toBf16(x: number): number {
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, x);
  const u = b.getUint32(0);
  const r = (u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000;
  b.setUint32(0, r >>> 0);
  return b.getFloat32(0);
}

/**
 * Writes `n` uniform values in [−1.5, 1.5) as a file of the precision and returns the file
 * and the exact values the CLI reads: fp16 goes through the .npy file and is read back,
 * bf16 is an fp32 file run with --dtype bf16 (rounded here by toBf16).
 */
function tensor(n: number, shape: number[], prec: Prec, seed: number, nanAt?: (i: number) => boolean): { file: string; x: Float64Array } {
  const r = rng(seed);
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = nanAt?.(i) ? NaN : (r() - 0.5) * 3;
  const file = join(dir, `t${fileNo++}.npy`);
  writeFileSync(file, encodeNpy(v, shape, prec === 'fp16' ? 'float16' : 'float32'));
  let x: Float64Array;
  if (prec === 'fp16') {
    const buf = readFileSync(file);
    const back = new DataView(buf.buffer, buf.byteOffset, buf.byteLength); // .npy version 1: the header length is at byte 8
    const headerLen = back.getUint16(8, true);
    x = Float64Array.from({ length: n }, (_, i) => halfToNumber(back.getUint16(10 + headerLen + 2 * i, true)));
  } else x = Float64Array.from(v, (y) => (prec === 'bf16' ? toBf16(y) : y));
  return { file, x };
}

function halfToNumber(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

const ints = (values: number[], shape: number[]) => {
  const file = join(dir, `i${fileNo++}.npy`);
  writeFileSync(file, encodeNpy(values, shape, 'int32'));
  return file;
};

// ---- the float64 reference of one sequence ----

interface Dims {
  hq: number;
  hk: number;
  d: number;
  dv: number;
}
interface Mask {
  causal: boolean;
  window?: [number, number];
}
type At = (row: number, head: number, c: number) => number;
interface SeqRef {
  /** [nq][hq][dv] flattened as (i * hq + h) * dv + c. */
  o: Float64Array;
  /** (h * nq + i). */
  lse: Float64Array;
  dq?: Float64Array;
  dk?: Float64Array;
  dv?: Float64Array;
}

/** `rnd` set: the unfused same-precision computation instead (see oBudget); no gradients then. */
function seqRef(D: Dims, m: Mask, nq: number, nk: number, q: At, k: At, v: At, dO?: At, rnd?: (x: number) => number): SeqRef {
  const { hq, hk, d, dv } = D;
  const scale = 1 / Math.sqrt(d);
  const o = new Float64Array(nq * hq * dv);
  const lse = new Float64Array(hq * nq).fill(-Infinity);
  const dq = new Float64Array(nq * hq * d);
  const dk = new Float64Array(nk * hk * d);
  const dvv = new Float64Array(nk * hk * dv);
  for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / (hq / hk));
    for (let i = 0; i < nq; i++) {
      const diag = i + nk - nq;
      const p = new Float64Array(nk);
      let max = -Infinity;
      const seen: boolean[] = [];
      for (let j = 0; j < nk; j++) {
        let ok = !m.causal || j <= diag;
        if (m.window && m.window[0] >= 0 && j < diag - m.window[0]) ok = false;
        if (m.window && m.window[1] >= 0 && j > diag + m.window[1]) ok = false;
        seen[j] = ok;
        if (!ok) continue;
        let s = 0;
        for (let c = 0; c < d; c++) s += q(i, h, c) * k(j, g, c);
        p[j] = rnd ? rnd(rnd(s) * scale) : s * scale;
        max = Math.max(max, p[j]);
      }
      if (max === -Infinity) continue; // no key: o = 0, lse = −inf, no gradient
      let sum = 0;
      for (let j = 0; j < nk; j++) if (seen[j]) sum += p[j] = Math.exp(p[j] - max);
      for (let j = 0; j < nk; j++) p[j] = seen[j] ? (rnd ? rnd(p[j] / sum) : p[j] / sum) : 0;
      lse[h * nq + i] = max + Math.log(sum);
      for (let j = 0; j < nk; j++) if (p[j]) for (let c = 0; c < dv; c++) o[(i * hq + h) * dv + c] += p[j] * v(j, g, c);
      if (rnd) for (let c = 0; c < dv; c++) o[(i * hq + h) * dv + c] = rnd(o[(i * hq + h) * dv + c]);
      if (!dO) continue;
      let rowD = 0;
      for (let c = 0; c < dv; c++) rowD += dO(i, h, c) * o[(i * hq + h) * dv + c];
      for (let j = 0; j < nk; j++) {
        if (!p[j]) continue;
        let dp = 0;
        for (let c = 0; c < dv; c++) {
          dp += dO(i, h, c) * v(j, g, c);
          dvv[(j * hk + g) * dv + c] += p[j] * dO(i, h, c);
        }
        const ds = p[j] * (dp - rowD) * scale;
        for (let c = 0; c < d; c++) {
          dq[(i * hq + h) * d + c] += ds * k(j, g, c);
          dk[(j * hk + g) * d + c] += ds * q(i, h, c);
        }
      }
    }
  }
  return dO ? { o, lse, dq, dk, dv: dvv } : { o, lse };
}

// ---- running and comparing ----

const cli = (args: string[]) => runCliCaptured(['run', ...args]);

async function npy(file: string): Promise<{ shape: number[]; data: ArrayLike<number> }> {
  const t = await readNpy(new MemorySource(readFileSync(file), file));
  return { shape: t.info.shape, data: t.data };
}

/** Max |a − b| with equal infinities equal and any NaN or one-sided infinity = Infinity. */
function maxErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    const e = Math.abs(a[i] - b[i]);
    m = Number.isNaN(e) ? Infinity : Math.max(m, e);
  }
  return m;
}

/** Rounds a value to what the precision stores. */
function storeIn(prec: Prec): (x: number) => number {
  return prec === 'bf16' ? toBf16 : prec === 'fp16' ? (x) => halfToNumber(numberToHalf(x)) : Math.fround;
}

/**
 * The accuracy rule on o: within the precision's budget of float64, or within twice the
 * error of the unfused same-precision computation PyTorch's math path does (S = q kᵀ
 * rounded, scaled and rounded, P rounded, P V rounded): bf16 keeps 8 bits, so that one
 * already misses float64 by a few 1e-3 where |o| ≈ 1.
 */
function oBudget(prec: Prec, ref: Float64Array, unfused: Float64Array | undefined): number {
  return unfused ? Math.max(TOL[prec], 2 * maxErr(unfused, ref)) : TOL[prec];
}

/** Nearest binary16 bits (ties to even) of a value in the normal or subnormal range. */
function numberToHalf(x: number): number {
  const s = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return s | 0x7c00;
  if (a < 2 ** -14) return s | Math.round(a / 2 ** -24);
  let e = Math.floor(Math.log2(a));
  let m = Math.round((a / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e++;
  }
  return s | ((e + 15) << 10) | m;
}

// ---- varlen ----

interface VarlenCase {
  name: string;
  algos: string[];
  D: Dims;
  lq: number[];
  lk: number[];
  mask: Mask;
  prec: Prec;
  backward?: boolean;
  /** A quantizing algorithm's own budget for O and the LSE, instead of the precision's (sage: INT8 Q·Kᵀ). */
  quantTol?: { o: number; lse: number };
}

const FORWARD = ['standard', 'fa1', 'fa2', 'fa3', 'fa4', 'cute-fa2', 'fmha-v2', 'flash-decoding'];
const BACKWARD = ['standard', 'fa1', 'fa2', 'fa3'];
// Sequence 1 has no keys, 2 no query rows, 4 neither; 5 has fewer keys than rows.
const LQ = [5, 7, 0, 19, 0, 9];
const LK = [11, 0, 6, 19, 0, 4];

const VARLEN: VarlenCase[] = [
  {
    name: 'GQA causal fp32, empty sequences',
    algos: FORWARD,
    D: { hq: 4, hk: 2, d: 8, dv: 6 },
    lq: LQ,
    lk: LK,
    mask: { causal: true },
    prec: 'fp32',
  },
  {
    name: 'MQA window 3,1 fp32',
    algos: FORWARD,
    D: { hq: 3, hk: 1, d: 16, dv: 16 },
    lq: LQ,
    lk: LK,
    mask: { causal: false, window: [3, 1] },
    prec: 'fp32',
  },
  {
    name: 'decode rows (Nq = 1 per sequence) against long caches, fp16',
    algos: FORWARD,
    D: { hq: 4, hk: 1, d: 16, dv: 8 },
    lq: [1, 1, 1],
    lk: [40, 1, 23],
    mask: { causal: true },
    prec: 'fp16',
  },
  {
    name: 'GQA causal window 4,0 bf16',
    algos: FORWARD,
    D: { hq: 4, hk: 2, d: 8, dv: 8 },
    lq: LQ,
    lk: LK,
    mask: { causal: true, window: [4, 0] },
    prec: 'bf16',
  },
  // sage quantizes Q and K to INT8 per sequence (its varlen kernels do too) and takes d = dv only.
  // Budget: with d = 8 and |q|,|k| ≲ 4 the INT8 steps move a logit by ≲ 8·4·(4/127)·scale ≈ 0.36 at worst; typical errors are far smaller (measured 0.007).
  {
    name: 'sage v1, INT8 Q·Kᵀ: GQA causal fp16, empty sequences',
    algos: ['sage'],
    D: { hq: 4, hk: 2, d: 8, dv: 8 },
    lq: LQ,
    lk: LK,
    mask: { causal: true },
    prec: 'fp16',
    quantTol: { o: 0.05, lse: 0.05 },
  },
  {
    name: 'backward: GQA causal fp32, dq dk dv packed',
    algos: BACKWARD,
    D: { hq: 4, hk: 2, d: 8, dv: 6 },
    lq: LQ,
    lk: LK,
    mask: { causal: true },
    prec: 'fp32',
    backward: true,
  },
  {
    name: 'backward: MQA window 2,2 fp16',
    algos: ['fa2', 'fa3'],
    D: { hq: 2, hk: 1, d: 8, dv: 8 },
    lq: LQ,
    lk: LK,
    mask: { causal: false, window: [2, 2] },
    prec: 'fp16',
    backward: true,
  },
];

describe("spawned `run` on packed varlen batches against this file's float64 reference", () => {
  for (const c of VARLEN) {
    it(`${c.name}: ${c.algos.join(', ')}`, async () => {
      const { hq, hk, d, dv } = c.D;
      const cq = seqOffsets(c.lq);
      const ck = seqOffsets(c.lk);
      const tq = cq[cq.length - 1];
      const tk = ck[ck.length - 1];
      const q = tensor(tq * hq * d, [tq, hq, d], c.prec, 1);
      const k = tensor(tk * hk * d, [tk, hk, d], c.prec, 2);
      const v = tensor(tk * hk * dv, [tk, hk, dv], c.prec, 3);
      const dO = c.backward ? tensor(tq * hq * dv, [tq, hq, dv], c.prec, 4) : undefined;
      const out = join(dir, `varlen-${fileNo++}`);
      const args = [
        '--algo',
        c.algos.join(','),
        '--q',
        q.file,
        '--k',
        k.file,
        '--v',
        v.file,
        '--cu-seqlens-q',
        ints(cq, [cq.length]),
        '--cu-seqlens-k',
        ints(ck, [ck.length]),
        '--out',
        out,
      ];
      if (c.mask.causal) args.push('--causal');
      if (c.mask.window) args.push('--window', c.mask.window.join(','));
      if (c.prec === 'bf16') args.push('--dtype', 'bf16');
      if (dO) args.push('--do', dO.file);
      const r = await cli(args);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      // The truth, sequence by sequence, scattered into the packed layouts.
      const o = new Float64Array(tq * hq * dv);
      const unfused = c.prec === 'fp32' ? undefined : new Float64Array(tq * hq * dv);
      const lse = new Float64Array(hq * tq).fill(-Infinity);
      const dq = new Float64Array(tq * hq * d);
      const dk = new Float64Array(tk * hk * d);
      const dvv = new Float64Array(tk * hk * dv);
      c.lq.forEach((nq, b) => {
        const nk = c.lk[b];
        const at =
          (x: Float64Array, t0: number, H: number, e: number): At =>
          (i, h, cc) =>
            x[((t0 + i) * H + h) * e + cc];
        const s = seqRef(
          c.D,
          c.mask,
          nq,
          nk,
          at(q.x, cq[b], hq, d),
          at(k.x, ck[b], hk, d),
          at(v.x, ck[b], hk, dv),
          dO && at(dO.x, cq[b], hq, dv),
        );
        o.set(s.o, cq[b] * hq * dv);
        unfused?.set(
          seqRef(c.D, c.mask, nq, nk, at(q.x, cq[b], hq, d), at(k.x, ck[b], hk, d), at(v.x, ck[b], hk, dv), undefined, storeIn(c.prec)).o,
          cq[b] * hq * dv,
        );
        for (let h = 0; h < hq; h++) for (let i = 0; i < nq; i++) lse[h * tq + cq[b] + i] = s.lse[h * nq + i];
        if (s.dq) dq.set(s.dq, cq[b] * hq * d);
        if (s.dk) dk.set(s.dk, ck[b] * hk * d);
        if (s.dv) dvv.set(s.dv, ck[b] * hk * dv);
      });
      for (const algo of c.algos) {
        const got = async (name: string) => npy(join(out, algo, name));
        const go = await got('o.npy');
        const gl = await got('lse.npy');
        expect(go.shape, algo).toEqual([tq, hq, dv]);
        expect(gl.shape, algo).toEqual([hq, tq]);
        expect(maxErr(go.data, o), `${algo} o`).toBeLessThanOrEqual(c.quantTol?.o ?? oBudget(c.prec, o, unfused));
        expect(maxErr(gl.data, lse), `${algo} lse`).toBeLessThan(c.quantTol?.lse ?? TOL[c.prec]);
        // Quantized: never within rounding of the truth (a plain fp16 run would be).
        if (c.quantTol) expect(maxErr(go.data, o), `${algo} o`).toBeGreaterThan(TOL[c.prec]);
        if (!c.backward) continue;
        const [gq, gk, gv] = await Promise.all(['dq.npy', 'dk.npy', 'dv.npy'].map(got));
        expect([gq.shape, gk.shape, gv.shape], algo).toEqual([
          [tq, hq, d],
          [tk, hk, d],
          [tk, hk, dv],
        ]);
        // Gradients add up many terms: the 16-bit budget is relative to their size.
        const scaleOf = (x: Float64Array) => Math.max(1, ...Array.from(x, Math.abs));
        expect(maxErr(gq.data, dq) / scaleOf(dq), `${algo} dq`).toBeLessThan(TOL[c.prec]);
        expect(maxErr(gk.data, dk) / scaleOf(dk), `${algo} dk`).toBeLessThan(TOL[c.prec]);
        expect(maxErr(gv.data, dvv) / scaleOf(dvv), `${algo} dv`).toBeLessThan(TOL[c.prec]);
        const stats = JSON.parse(readFileSync(join(out, algo, 'stats.json'), 'utf8'));
        expect(stats.backward.hbm_bytes_read_by_tensor.cu_seqlens_q, algo).toBeGreaterThan(0);
      }
    });
  }
});

// ---- paged ----

interface PagedCase {
  name: string;
  algos: string[];
  D: Dims;
  nq: number;
  lens: number[];
  pageSize: number;
  mask: Mask;
  prec: Prec;
  layout: 'bnhd' | 'bhnd';
}

const PAGED_ALGOS = ['flash-decoding', 'fa2', 'fmha-v2'];
// Sequence 1 is empty; 3 holds fewer tokens than a 4-row chunk has rows (its first rows see nothing under causal).
const LENS = [37, 0, 16, 2];

const PAGED: PagedCase[] = [
  {
    name: 'decode Nq = 1, GQA, fp32',
    algos: PAGED_ALGOS,
    D: { hq: 4, hk: 2, d: 8, dv: 6 },
    nq: 1,
    lens: LENS,
    pageSize: 8,
    mask: { causal: false },
    prec: 'fp32',
    layout: 'bnhd',
  },
  {
    name: 'chunk Nq = 4, causal, MQA, fp32',
    algos: PAGED_ALGOS,
    D: { hq: 3, hk: 1, d: 16, dv: 16 },
    nq: 4,
    lens: LENS,
    pageSize: 4,
    mask: { causal: true },
    prec: 'fp32',
    layout: 'bnhd',
  },
  {
    name: 'chunk Nq = 3, causal window 5,0, fp16',
    algos: PAGED_ALGOS,
    D: { hq: 4, hk: 2, d: 8, dv: 8 },
    nq: 3,
    lens: LENS,
    pageSize: 16,
    mask: { causal: true, window: [5, 0] },
    prec: 'fp16',
    layout: 'bnhd',
  },
  {
    name: 'decode Nq = 1, GQA, bf16, q and o in bhnd',
    algos: PAGED_ALGOS,
    D: { hq: 4, hk: 2, d: 16, dv: 8 },
    nq: 1,
    lens: LENS,
    pageSize: 8,
    mask: { causal: true },
    prec: 'bf16',
    layout: 'bhnd',
  },
];

/** A shuffled pool with two spare pages; table rows point at the sequence's pages, the rest is −1. */
function poolFor(lens: number[], ps: number, seed: number): { table: number[]; maxPages: number; numPages: number; owned: Set<number> } {
  const need = lens.map((L) => Math.ceil(L / ps));
  const maxPages = Math.max(1, ...need) + 1; // one column no sequence uses
  const numPages = need.reduce((a, b) => a + b, 0) + 2;
  const r = rng(seed);
  const order = Array.from({ length: numPages }, (_, i) => i).sort(() => r() - 0.5);
  const table = new Array<number>(lens.length * maxPages).fill(-1);
  const owned = new Set<number>();
  let next = 0;
  need.forEach((n, b) => {
    for (let j = 0; j < n; j++) table[b * maxPages + j] = order[next++];
  });
  lens.forEach((L, b) => {
    for (let j = 0; j < L; j++) owned.add(table[b * maxPages + Math.floor(j / ps)] * ps + (j % ps));
  });
  return { table, maxPages, numPages, owned };
}

describe("spawned `run` on a paged K/V cache against this file's float64 reference", () => {
  for (const c of PAGED) {
    it(`${c.name}: ${c.algos.join(', ')} read only owned slots of a NaN pool`, async () => {
      const { hq, hk, d, dv } = c.D;
      const B = c.lens.length;
      const ps = c.pageSize;
      const pool = poolFor(c.lens, ps, 9);
      const qShape = c.layout === 'bnhd' ? [B, c.nq, hq, d] : [B, hq, c.nq, d];
      const q = tensor(B * c.nq * hq * d, qShape, c.prec, 5);
      const slotOf = (i: number, e: number) => Math.floor(i / (hk * e));
      const kc = tensor(pool.numPages * ps * hk * d, [pool.numPages, ps, hk, d], c.prec, 6, (i) => !pool.owned.has(slotOf(i, d)));
      const vc = tensor(pool.numPages * ps * hk * dv, [pool.numPages, ps, hk, dv], c.prec, 7, (i) => !pool.owned.has(slotOf(i, dv)));
      const out = join(dir, `paged-${fileNo++}`);
      const args = [
        '--algo',
        c.algos.join(','),
        '--q',
        q.file,
        '--layout',
        c.layout,
        '--k-cache',
        kc.file,
        '--v-cache',
        vc.file,
        '--block-table',
        ints(pool.table, [B, pool.maxPages]),
        '--cache-seqlens',
        ints(c.lens, [B]),
        '--out',
        out,
      ];
      if (c.mask.causal) args.push('--causal');
      if (c.mask.window) args.push('--window', c.mask.window.join(','));
      if (c.prec === 'bf16') args.push('--dtype', 'bf16');
      const r = await cli(args);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const o = new Float64Array(B * c.nq * hq * dv); // in the CLI's o layout
      const unfused = c.prec === 'fp32' ? undefined : new Float64Array(o.length);
      const lse = new Float64Array(B * hq * c.nq).fill(-Infinity);
      const qIdx = (b: number, i: number, h: number) => (c.layout === 'bnhd' ? (b * c.nq + i) * hq + h : (b * hq + h) * c.nq + i);
      let needed = 0; // pages holding a key that some query row of its sequence sees
      c.lens.forEach((L, b) => {
        for (let pg = 0; pg < Math.ceil(L / ps); pg++) {
          const seen = (j: number) =>
            Array.from({ length: c.nq }, (_, i) => i + L - c.nq).some(
              (diag) => (!c.mask.causal || j <= diag) && (!c.mask.window || j >= diag - c.mask.window[0]),
            );
          if (Array.from({ length: Math.min(ps, L - pg * ps) }, (_, t) => pg * ps + t).some(seen)) needed++;
        }
        const slot = (j: number) => pool.table[b * pool.maxPages + Math.floor(j / ps)] * ps + (j % ps);
        const args = [
          c.D,
          c.mask,
          c.nq,
          L,
          (i: number, h: number, cc: number) => q.x[qIdx(b, i, h) * d + cc],
          (j: number, g: number, cc: number) => kc.x[(slot(j) * hk + g) * d + cc],
          (j: number, g: number, cc: number) => vc.x[(slot(j) * hk + g) * dv + cc],
        ] as const;
        const s = seqRef(...args);
        const s16 = unfused && seqRef(...args, undefined, storeIn(c.prec));
        for (let i = 0; i < c.nq; i++)
          for (let h = 0; h < hq; h++) {
            lse[(b * hq + h) * c.nq + i] = s.lse[h * c.nq + i];
            for (let cc = 0; cc < dv; cc++) {
              o[qIdx(b, i, h) * dv + cc] = s.o[(i * hq + h) * dv + cc];
              if (unfused && s16) unfused[qIdx(b, i, h) * dv + cc] = s16.o[(i * hq + h) * dv + cc];
            }
          }
      });
      for (const algo of c.algos) {
        const go = await npy(join(out, algo, 'o.npy'));
        const gl = await npy(join(out, algo, 'lse.npy'));
        expect(go.shape, algo).toEqual(c.layout === 'bnhd' ? [B, c.nq, hq, dv] : [B, hq, c.nq, dv]);
        expect(gl.shape, algo).toEqual([B, hq, c.nq]);
        expect(Array.from(go.data).every(Number.isFinite), `${algo}: o finite`).toBe(true);
        expect(maxErr(go.data, o), `${algo} o`).toBeLessThanOrEqual(oBudget(c.prec, o, unfused));
        expect(maxErr(gl.data, lse), `${algo} lse`).toBeLessThan(TOL[c.prec]);
        const stats = JSON.parse(readFileSync(join(out, algo, 'stats.json'), 'utf8'));
        expect(stats.pages_touched, algo).toBe(needed);
      }
    });
  }
});

// ---- refusals: a message naming the tensor and index, exit 1, nothing written ----

describe('spawned `run` refuses inconsistent serving inputs and writes nothing', () => {
  const lq = [3, 5];
  const lk = [4, 6];
  const q = tensor(8 * 4 * 8, [8, 4, 8], 'fp32', 11);
  const k = tensor(10 * 2 * 8, [10, 2, 8], 'fp32', 12);
  const v = tensor(10 * 2 * 8, [10, 2, 8], 'fp32', 13);
  const varlen = (over: Record<string, string> = {}, extra: string[] = []) => {
    const f = {
      q: q.file,
      k: k.file,
      v: v.file,
      'cu-seqlens-q': ints(seqOffsets(lq), [3]),
      'cu-seqlens-k': ints(seqOffsets(lk), [3]),
      ...over,
    };
    return [...Object.entries(f).flatMap(([n, p]) => [`--${n}`, p]), ...extra];
  };
  const pool = poolFor([9, 3], 4, 3);
  const pq = tensor(2 * 1 * 4 * 8, [2, 1, 4, 8], 'fp32', 14);
  const kc = tensor(pool.numPages * 4 * 2 * 8, [pool.numPages, 4, 2, 8], 'fp32', 15);
  const paged = (over: Record<string, string> = {}, extra: string[] = []) => {
    const f = {
      q: pq.file,
      'k-cache': kc.file,
      'v-cache': kc.file,
      'block-table': ints(pool.table, [2, pool.maxPages]),
      'cache-seqlens': ints([9, 3], [2]),
      ...over,
    };
    return [...Object.entries(f).flatMap(([n, p]) => [`--${n}`, p]), ...extra];
  };
  const badTable = (b: number, j: number, value: number) => {
    const t = [...pool.table];
    t[b * pool.maxPages + j] = value;
    return ints(t, [2, pool.maxPages]);
  };
  const cases: [string, string[], RegExp, string?][] = [
    ['offsets not non-decreasing', varlen({ 'cu-seqlens-q': ints([0, 6, 5], [3]) }), /cu_seqlens_q\[2\]: offsets must be non-decreasing/],
    ['last q offset ≠ total_q', varlen({ 'cu-seqlens-q': ints([0, 3, 7], [3]) }), /cu_seqlens_q\[2\]: must equal q's token count 8/],
    ['last k offset ≠ total_k', varlen({ 'cu-seqlens-k': ints([0, 4, 11], [3]) }), /cu_seqlens_k\[2\]: must equal k's token count 10/],
    ['a first offset ≠ 0', varlen({ 'cu-seqlens-k': ints([1, 4, 10], [3]) }), /cu_seqlens_k\[0\]: must be 0/],
    [
      'offsets of different batch sizes',
      varlen({ 'cu-seqlens-k': ints([0, 10], [2]) }),
      /cu_seqlens_k: must have the same length as cu_seqlens_q/,
    ],
    [
      'k heads that do not divide q heads',
      varlen({ k: tensor(10 * 3 * 8, [10, 3, 8], 'fp32', 16).file }),
      /^error: k: q has 4 heads, k has 3/m,
    ],
    ['v heads ≠ k heads', varlen({ v: tensor(10 * 1 * 8, [10, 1, 8], 'fp32', 17).file }), /^error: v: must have k's tokens and heads/m],
    [
      'a dO not shaped like o',
      varlen({}, ['--do', tensor(8 * 4 * 4, [8, 4, 4], 'fp32', 18).file]),
      /^error: dO: .*expected shape \[8, 4, 8\]/m,
    ],
    [
      '--layout bhnd on token-major varlen tensors',
      varlen({}, ['--layout', 'bhnd']),
      /--layout bhnd: varlen tensors are token-major \[total, H, d\]/,
    ],
    ['--do on an algorithm without a backward', varlen({}, ['--do', q.file]), /algo: sage has no backward pass/, 'sage'],
    [
      'a needed block-table entry out of range',
      paged({ 'block-table': badTable(0, 2, pool.numPages) }),
      /block_table\[0, 2\]: page \d+ is out of range/,
    ],
    ['a negative needed block-table entry', paged({ 'block-table': badTable(1, 0, -3) }), /block_table\[1, 0\]: page -3 is out of range/],
    [
      'cache_seqlens beyond the table',
      paged({ 'cache-seqlens': ints([9, 4 * pool.maxPages + 1], [2]) }),
      new RegExp(`cache_seqlens\\[1\\]: ${4 * pool.maxPages + 1} tokens need`),
    ],
    [
      'k_cache heads that do not divide q heads',
      paged({ 'k-cache': tensor(pool.numPages * 4 * 3 * 8, [pool.numPages, 4, 3, 8], 'fp32', 19).file }),
      /^error: k_cache: q has 4 heads, k_cache has 3/m,
    ],
    [
      'v_cache heads ≠ k_cache heads',
      paged({ 'v-cache': tensor(pool.numPages * 4 * 1 * 8, [pool.numPages, 4, 1, 8], 'fp32', 20).file }),
      /^error: v_cache: must have k_cache's pages, page size and heads/m,
    ],
    [
      'a block table with a row per another batch',
      paged({ 'block-table': ints([...pool.table, ...pool.table], [4, pool.maxPages]) }),
      /block_table: needs one row per sequence \(B = 2\)/,
    ],
    ['--do on a paged cache', paged({}, ['--do', pq.file]), /--do: a paged K\/V cache has no backward pass/],
  ];
  for (const [name, args, msg, algo = 'fa2'] of cases) {
    it(`refuses ${name}`, async () => {
      const out = join(dir, `refused-${fileNo++}`);
      const r = await cli(['--algo', algo, ...args, '--out', out]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(msg);
      expect(existsSync(out)).toBe(false);
    });
  }

  it('accepts an out-of-range entry in a column no sequence uses (it is never read)', async () => {
    const out = join(dir, `unused-${fileNo++}`);
    const r = await cli(['--algo', 'fa2', ...paged({ 'block-table': badTable(1, pool.maxPages - 1, 999) }), '--out', out]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect((await npy(join(out, 'fa2', 'o.npy'))).shape).toEqual([2, 1, 4, 8]);
  });
});
