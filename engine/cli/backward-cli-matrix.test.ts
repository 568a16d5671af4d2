// The backward's command-line contract on every variant, through the real command:
// `run --algo standard,fa1,fa2,fa3 --q … --k … --v … --do … --out DIR` runs once per variant
// (in this process, through the dispatcher main.ts calls) on tensor files written here, and DIR/<algo>/{o,lse,dq,dk,dv}.npy
// are compared with a float64 reference written in this file on its own terms (dense score
// matrices, the masks and modifiers spelled out from FlashAttention's definitions, no engine
// score code), so a wrong mask alignment or modifier in the engine cannot cancel out.
// Rule (the FlashAttention tests'): fp32 within 1e-4; 16-bit within max(2 × the unfused
// same-precision error, 4e-3), O included (its 16-bit store rounds it). Gradients of rows that see no key and of keys no row sees must
// be exactly 0. The variants rotate through dtypes (fp16 .npy, bf16 .safetensors, bf16 by
// --dtype), layouts (bhnd, bnhd) and ranks (2, 3, 4).

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { naiveSamePrecision } from '../algorithms/accuracy-matrix.ts';
import { naiveBackwardSamePrecision } from '../backward/accuracy-support.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import { runCliCaptured } from './run-cli-captured.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-bwd-matrix-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ALGOS = ['standard', 'fa1', 'fa2', 'fa3'];

type Layout = 'bhnd' | 'bnhd';
/** How the 16-bit (or fp32) inputs reach the command. */
type Storage = 'f32' | 'f16-npy' | 'bf16-safetensors' | 'bf16-flag';

interface Case {
  name: string;
  p: AttentionProblem;
  layout: Layout;
  rank: 2 | 3 | 4;
  storage: Storage;
  /** Explicit ALiBi slopes written to a file (else --alibi standard when p.alibi is set). */
  slopesFile?: number[];
  blocks?: [number, number];
}

const base = { batch: 1, hq: 2, hk: 2, nq: 23, nk: 31, d: 8, dv: 12, causal: false } as const;
const CASES: Case[] = [
  { name: 'Nq < Nk, dv != d', p: { ...base, dtype: 'fp32' }, layout: 'bhnd', rank: 4, storage: 'f32', blocks: [8, 4] },
  {
    name: 'causal bottom-right, Nq < Nk',
    p: { ...base, causal: true, dtype: 'fp32' },
    layout: 'bnhd',
    rank: 4,
    storage: 'f32',
    blocks: [4, 8],
  },
  {
    name: 'causal bottom-right, Nq > Nk (fully masked rows)',
    p: { ...base, nq: 31, nk: 19, causal: true, dtype: 'fp16' },
    layout: 'bhnd',
    rank: 3,
    storage: 'f16-npy',
    blocks: [8, 8],
  },
  {
    name: 'causal, Nq > Nk, bf16',
    p: { ...base, nq: 29, nk: 17, causal: true, dtype: 'bf16' },
    layout: 'bnhd',
    rank: 4,
    storage: 'bf16-safetensors',
    blocks: [4, 4],
  },
  { name: 'sliding window', p: { ...base, window: { left: 5, right: 2 }, dtype: 'bf16' }, layout: 'bnhd', rank: 4, storage: 'bf16-flag' },
  {
    name: 'window with keys no query sees',
    p: { ...base, nq: 12, nk: 30, causal: true, window: { left: 2, right: -1 }, dtype: 'fp32' },
    layout: 'bhnd',
    rank: 4,
    storage: 'f32',
    blocks: [4, 4],
  },
  {
    name: 'GQA (4 query heads on 2)',
    p: { ...base, hq: 4, hk: 2, causal: true, dtype: 'fp32' },
    layout: 'bnhd',
    rank: 4,
    storage: 'f32',
    blocks: [8, 8],
  },
  { name: 'MQA, batch 2', p: { ...base, batch: 2, hq: 3, hk: 1, dtype: 'fp16' }, layout: 'bnhd', rank: 4, storage: 'f16-npy' },
  {
    name: 'ALiBi standard slopes, 3 heads',
    p: { ...base, hq: 3, hk: 3, alibi: 'standard', causal: true, dtype: 'fp32' },
    layout: 'bhnd',
    rank: 3,
    storage: 'f32',
    blocks: [8, 4],
  },
  {
    name: 'ALiBi slopes from a file',
    p: { ...base, alibi: [0.7, 0.05], dtype: 'bf16' },
    layout: 'bhnd',
    rank: 4,
    storage: 'bf16-flag',
    slopesFile: [0.7, 0.05],
  },
  {
    name: 'softcap',
    p: { ...base, hq: 1, hk: 1, softcap: 2.5, scale: 0.6, dtype: 'fp32' },
    layout: 'bhnd',
    rank: 2,
    storage: 'f32',
    blocks: [8, 8],
  },
  {
    name: 'sinks',
    p: { ...base, sinks: [1.5, -0.5], causal: true, dtype: 'fp16' },
    layout: 'bnhd',
    rank: 4,
    storage: 'f16-npy',
    blocks: [8, 4],
  },
  { name: 'dv > d, rank 3 bnhd', p: { ...base, d: 4, dv: 16, dtype: 'bf16' }, layout: 'bnhd', rank: 3, storage: 'bf16-flag' },
  {
    name: 'everything at once',
    p: {
      ...base,
      batch: 2,
      hq: 4,
      hk: 2,
      nq: 27,
      nk: 21,
      causal: true,
      window: { left: 9, right: -1 },
      softcap: 4,
      alibi: 'standard',
      sinks: [0.5, -1, 2, 0],
      dtype: 'fp32',
    },
    layout: 'bnhd',
    rank: 4,
    storage: 'f32',
    blocks: [8, 4],
  },
];

// ---- inputs: a generator of our own (not the engine's), rounded as the files store them ----

function normals(n: number, seed: number): Float64Array {
  let s = seed >>> 0 || 1;
  const u = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) + 0.5) / 4294967296;
  };
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
  return out;
}

/** Round to bfloat16 (nearest even) through float32 bits; returns the value and its 16 bits. */
function bf16(x: number): [number, number] {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer);
  const bits = ((u[0] + 0x7fff + ((u[0] >>> 16) & 1)) >>> 16) & 0xffff;
  u[0] = bits << 16;
  return [f[0], bits];
}

/** The values the command will see: fp32/bf16 rounded here, fp16 read back from its own .npy encoding. */
async function storedValues(values: Float64Array, dtype: DType): Promise<Float64Array> {
  if (dtype === 'fp32') return Float64Array.from(Float32Array.from(values));
  if (dtype === 'bf16') return values.map((v) => bf16(v)[0]);
  const t = await readNpy(new MemorySource(encodeNpy(values, [values.length], 'float16'), 'x.npy'));
  return Float64Array.from(t.data);
}

/** BHND [B, H, N, D] → the file's rank and layout (shape, values). */
function toFile(x: Float64Array, [B, H, N, D]: number[], layout: Layout, rank: number): [number[], Float64Array] {
  const out = new Float64Array(x.length);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let n = 0; n < N; n++)
        for (let e = 0; e < D; e++) {
          const src = ((b * H + h) * N + n) * D + e;
          const dst = layout === 'bhnd' ? src : ((b * N + n) * H + h) * D + e;
          out[dst] = x[src];
        }
  const shape =
    rank === 2 ? [N, D] : rank === 3 ? (layout === 'bhnd' ? [H, N, D] : [N, H, D]) : layout === 'bhnd' ? [B, H, N, D] : [B, N, H, D];
  return [shape, out];
}

function bf16Safetensors(shape: number[], values: Float64Array): Uint8Array {
  const json = JSON.stringify({ t: { dtype: 'BF16', shape, data_offsets: [0, values.length * 2] } });
  const padded = json + ' '.repeat((8 - (json.length % 8)) % 8);
  const out = new Uint8Array(8 + padded.length + values.length * 2);
  const view = new DataView(out.buffer);
  view.setUint32(0, padded.length, true);
  for (let i = 0; i < padded.length; i++) out[8 + i] = padded.charCodeAt(i);
  values.forEach((v, i) => view.setUint16(8 + padded.length + 2 * i, bf16(v)[1], true));
  return out;
}

// ---- the float64 reference: dense, from the definitions ----

/** ALiBi slopes of Press et al. for n heads (geometric; interleaved from 2n when n is not a power of 2). */
function alibiSlopesOf(n: number): number[] {
  const geometric = (k: number) => Array.from({ length: k }, (_, i) => 2 ** ((-8 * (i + 1)) / k));
  const p2 = 2 ** Math.floor(Math.log2(n));
  return p2 === n
    ? geometric(n)
    : [
        ...geometric(p2),
        ...geometric(2 * p2)
          .filter((_, i) => i % 2 === 0)
          .slice(0, n - p2),
      ];
}

interface Grads {
  o: Float64Array;
  lse: Float64Array;
  dq: Float64Array;
  dk: Float64Array;
  dv: Float64Array;
}

/**
 * s_ij = c·tanh(τ q_i·k_j / c) − slope_h |j − i − (Nk − Nq)|, masked where j > i + Nk − Nq (causal)
 * or outside [i + Nk − Nq − left, i + Nk − Nq + right] (window); a sink adds exp(sink_h) to the
 * softmax denominator. Gradients of L = Σ dO ∘ O by the chain rule, all in float64.
 */
function reference(p: AttentionProblem, q: Float64Array, k: Float64Array, v: Float64Array, dO: Float64Array): Grads {
  const { batch: B, hq, hk, nq, nk, d, dv } = p;
  const tau = p.scale ?? 1 / Math.sqrt(d);
  const slopes = p.alibi === undefined ? undefined : p.alibi === 'standard' ? alibiSlopesOf(hq) : p.alibi;
  const g: Grads = {
    o: new Float64Array(B * hq * nq * dv),
    lse: new Float64Array(B * hq * nq),
    dq: new Float64Array(B * hq * nq * d),
    dk: new Float64Array(B * hk * nk * d),
    dv: new Float64Array(B * hk * nk * dv),
  };
  for (let b = 0; b < B; b++)
    for (let h = 0; h < hq; h++) {
      const kh = Math.floor(h / (hq / hk));
      const Q = (i: number, e: number) => q[((b * hq + h) * nq + i) * d + e];
      const K = (j: number, e: number) => k[((b * hk + kh) * nk + j) * d + e];
      const V = (j: number, e: number) => v[((b * hk + kh) * nk + j) * dv + e];
      const G = (i: number, e: number) => dO[((b * hq + h) * nq + i) * dv + e];
      for (let i = 0; i < nq; i++) {
        const s: number[] = [];
        const dsdx: number[] = [];
        for (let j = 0; j < nk; j++) {
          const rel = j - i - (nk - nq);
          const masked =
            (p.causal && rel > 0) ||
            (p.window && p.window.left >= 0 && rel < -p.window.left) ||
            (p.window && p.window.right >= 0 && rel > p.window.right);
          let x = 0;
          for (let e = 0; e < d; e++) x += Q(i, e) * K(j, e);
          let sij = tau * x;
          let der = tau;
          if (p.softcap !== undefined) {
            const t = Math.tanh(sij / p.softcap);
            sij = p.softcap * t;
            der = tau * (1 - t * t);
          }
          if (slopes) sij -= slopes[h] * Math.abs(rel);
          s.push(masked ? -Infinity : sij);
          dsdx.push(der);
        }
        const sink = p.sinks?.[h];
        const m = Math.max(...s, sink ?? -Infinity);
        const row = (b * hq + h) * nq + i;
        if (m === -Infinity) {
          g.lse[row] = -Infinity;
          continue;
        }
        const denom = s.reduce((acc, x) => acc + Math.exp(x - m), sink === undefined ? 0 : Math.exp(sink - m));
        const lse = m + Math.log(denom);
        g.lse[row] = lse;
        const P = s.map((x) => Math.exp(x - lse));
        for (let j = 0; j < nk; j++) for (let e = 0; e < dv; e++) g.o[row * dv + e] += P[j] * V(j, e);
        // dP_ij = dO_i · V_j; dS_ij = P_ij (dP_ij − Σ_l P_il dP_il)
        const dP = P.map((_, j) => {
          let acc = 0;
          for (let e = 0; e < dv; e++) acc += G(i, e) * V(j, e);
          return acc;
        });
        const D = P.reduce((acc, pj, j) => acc + pj * dP[j], 0);
        for (let j = 0; j < nk; j++) {
          if (P[j] === 0) continue;
          const ds = P[j] * (dP[j] - D) * dsdx[j];
          for (let e = 0; e < d; e++) {
            g.dq[row * d + e] += ds * K(j, e);
            g.dk[((b * hk + kh) * nk + j) * d + e] += ds * Q(i, e);
          }
          for (let e = 0; e < dv; e++) g.dv[((b * hk + kh) * nk + j) * dv + e] += P[j] * G(i, e);
        }
      }
    }
  return g;
}

// ---- the check ----

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, a[i] === b[i] ? 0 : Math.abs(a[i] - b[i]));
  return m;
}

const npy = async (file: string) => readNpy(new MemorySource(readFileSync(file), file));

describe('run --do: every variant through the spawned command, against a float64 reference', () => {
  it.each(CASES.map((c, i) => [c.name, c, i] as const))(
    '%s',
    async (_name, c, index) => {
      const { p, layout, rank } = c;
      const at = (n: string) => join(dir, `${index}-${n}`);
      const dims = {
        q: [p.batch, p.hq, p.nq, p.d],
        k: [p.batch, p.hk, p.nk, p.d],
        v: [p.batch, p.hk, p.nk, p.dv],
        do: [p.batch, p.hq, p.nq, p.dv],
      } as const;
      const raw = {
        q: normals(
          dims.q.reduce((a, b) => a * b),
          11 + index,
        ),
        k: normals(
          dims.k.reduce((a, b) => a * b),
          101 + index,
        ),
        v: normals(
          dims.v.reduce((a, b) => a * b),
          1001 + index,
        ),
        do: normals(
          dims.do.reduce((a, b) => a * b),
          10001 + index,
        ),
      };
      const vals = {
        q: await storedValues(raw.q, p.dtype),
        k: await storedValues(raw.k, p.dtype),
        v: await storedValues(raw.v, p.dtype),
        do: await storedValues(raw.do, p.dtype),
      };
      const args: string[] = [];
      for (const name of ['q', 'k', 'v', 'do'] as const) {
        const [shape, data] = toFile(vals[name], [...dims[name]], layout, rank);
        let file: string;
        if (c.storage === 'bf16-safetensors') writeFileSync((file = at(`${name}.safetensors`)), bf16Safetensors(shape, data));
        else writeFileSync((file = at(`${name}.npy`)), encodeNpy(data, shape, c.storage === 'f16-npy' ? 'float16' : 'float32'));
        args.push(`--${name}`, file);
      }
      if (layout === 'bnhd') args.push('--layout', 'bnhd');
      if (c.storage === 'bf16-flag') args.push('--dtype', 'bf16');
      if (p.causal) args.push('--causal');
      if (p.window) args.push('--window', `${p.window.left},${p.window.right}`);
      if (p.softcap !== undefined) args.push('--softcap', String(p.softcap));
      if (p.scale !== undefined) args.push('--scale', String(p.scale));
      if (p.alibi === 'standard') args.push('--alibi');
      if (c.slopesFile) {
        writeFileSync(at('slopes.npy'), encodeNpy(c.slopesFile, [c.slopesFile.length]));
        args.push('--alibi-slopes', at('slopes.npy'));
      }
      if (p.sinks) {
        writeFileSync(at('sinks.npy'), encodeNpy(p.sinks, [p.sinks.length]));
        args.push('--sink', at('sinks.npy'));
      }
      if (c.blocks) args.push('--block-m', String(c.blocks[0]), '--block-n', String(c.blocks[1]));
      const out = at('out');
      const r = await runCliCaptured(['run', '--algo', ALGOS.join(','), ...args, '--out', out]);
      expect(r.stderr, 'stderr').toBe('');
      expect(r.status).toBe(0);

      const ref = reference(p, vals.q, vals.k, vals.v, vals.do);
      // Outputs come back in the caller's layout: compare there.
      const want = {
        o: toFile(ref.o, [...dims.do], layout, rank),
        dq: toFile(ref.dq, [...dims.q], layout, rank),
        dk: toFile(ref.dk, [...dims.k], layout, rank),
        dv: toFile(ref.dv, [...dims.v], layout, rank),
      };
      let bar = { o: 1e-4, dq: 1e-4, dk: 1e-4, dv: 1e-4 };
      if (p.dtype !== 'fp32') {
        const f32 = (a: Float64Array) => Float32Array.from(a);
        const x = { q: f32(vals.q), k: f32(vals.k), v: f32(vals.v) };
        const naive = naiveBackwardSamePrecision(p, { ...x, dO: f32(vals.do) });
        const rule = (e: number) => Math.max(2 * e, 4e-3);
        bar = {
          o: rule(maxAbsDiff(naiveSamePrecision(p, x).o, ref.o)),
          dq: rule(maxAbsDiff(naive.dq, ref.dq)),
          dk: rule(maxAbsDiff(naive.dk, ref.dk)),
          dv: rule(maxAbsDiff(naive.dv, ref.dv)),
        };
      }
      for (const algo of ALGOS) {
        for (const name of ['o', 'dq', 'dk', 'dv'] as const) {
          const t = await npy(join(out, algo, `${name}.npy`));
          const [shape, expected] = want[name];
          expect(t.info.dtype, `${algo} ${name} dtype`).toBe('float32');
          expect(t.info.shape, `${algo} ${name} shape`).toEqual(shape);
          expect(maxAbsDiff(t.data, expected), `${algo} ${name}`).toBeLessThanOrEqual(bar[name]);
          // Exactly zero where no score reaches: rows that see no key, keys that no row sees.
          if (name !== 'o')
            for (let i = 0; i < expected.length; i++) if (expected[i] === 0) expect(t.data[i], `${algo} ${name}[${i}]`).toBe(0);
        }
        const lse = await npy(join(out, algo, 'lse.npy'));
        expect(lse.info.shape).toEqual([p.batch, p.hq, p.nq]);
        for (let i = 0; i < ref.lse.length; i++) {
          if (ref.lse[i] === -Infinity) expect(lse.data[i]).toBe(-Infinity);
          else expect(Math.abs(lse.data[i] - ref.lse[i]), `${algo} lse[${i}]`).toBeLessThanOrEqual(p.dtype === 'fp32' ? 1e-4 : 4e-3);
        }
      }
      // Cases meant to exercise masked rows and unseen keys do have them.
      if (c.name.includes('fully masked')) expect(ref.lse.some((x) => x === -Infinity)).toBe(true);
      if (c.name.includes('no query sees')) expect(ref.dk.some((x) => x === 0)).toBe(true);
    },
    120_000,
  );
});

describe('run --do refusals through the spawned command: nothing written', () => {
  const p = { batch: 1, hq: 2, nq: 5, nk: 7, d: 4, dv: 6 };
  const file = (name: string, shape: number[]) => {
    writeFileSync(
      join(dir, name),
      encodeNpy(
        normals(
          shape.reduce((a, b) => a * b),
          7,
        ),
        shape,
      ),
    );
    return join(dir, name);
  };
  // bnhd files: q [1, 5, 2, 4], k [1, 7, 2, 4], v [1, 7, 2, 6]; O is [1, 5, 2, 6].
  const qkv = [
    '--q',
    file('rq.npy', [1, p.nq, p.hq, p.d]),
    '--k',
    file('rk.npy', [1, p.nk, p.hq, p.d]),
    '--v',
    file('rv.npy', [1, p.nk, p.hq, p.dv]),
    '--layout',
    'bnhd',
  ];
  const engine = (args: string[]) => runCliCaptured(['run', ...args]);

  it('a dO with O’s element count in the other layout is refused, naming dO and the expected shape', async () => {
    const out = join(dir, 'refused-do');
    const r = await engine(['--algo', 'standard,fa2', ...qkv, '--do', file('do-bhnd.npy', [1, p.hq, p.nq, p.dv]), '--out', out]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/dO: .*expected shape \[1, 5, 2, 6\] \(the shape of O.*got \[1, 2, 5, 6\]/);
    expect(existsSync(out)).toBe(false);
  });

  it('an algorithm without a backward is refused before anything is written, even after ones that have one', async () => {
    const out = join(dir, 'refused-algo');
    const r = await engine(['--algo', 'standard,fa2,sage', ...qkv, '--do', file('do-ok.npy', [1, p.nq, p.hq, p.dv]), '--out', out]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/algo: sage has no backward pass in FlashScope; backward passes exist for standard, fa1, fa2, fa3, fa4/);
    expect(existsSync(out)).toBe(false);
  });
});
