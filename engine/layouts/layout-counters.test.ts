// The serving layouts' counters against closed forms written from the kernels' structure
// (not from the engine's events): per-tensor bytes including the metadata every CTA reads
// (cu_seqlens, block-table entries, cache_seqlens), the pages touched, and the FLOPs packing
// saves over padding. fp32 (4 bytes per element), no mask unless stated.

import { describe, expect, it } from 'vitest';
import { algorithmById } from '../algorithms/registry.ts';
import { runPaged } from './paged.ts';
import { runLayoutToEnd } from './sequence-runner.ts';
import { DEFAULT_SERVING_FORM, generateServing, runServing, type ServingForm } from './serving-run.ts';
import { runVarlen } from './varlen.ts';
import { runVarlenBackward } from './varlen-backward.ts';

const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
const cdiv = (a: number, b: number) => Math.ceil(a / b);

describe('paged counters in closed form', () => {
  // 70 tokens = 4 full pages of 16 and a partial one; 5 = one partial page; an empty sequence; 33 = 3 pages.
  const LENS = [70, 5, 0, 33];
  const PS = 16;
  const form: ServingForm = {
    ...DEFAULT_SERVING_FORM,
    layout: 'paged',
    seqlensK: LENS,
    pageSize: PS,
    hq: 4,
    hk: 2,
    d: 16,
    causal: false,
    nq: 1,
  };
  const sp = generateServing(form);
  if (sp.layout !== 'paged') throw new Error('paged form');
  const { hq, d, dv } = sp.pp.base;
  const pages = sum(LENS.map((L) => cdiv(L, PS)));

  // blockN divides the page (each tile reads one table entry) or is a multiple of it (a tile reads blockN / PS entries, fewer at the end).
  for (const [id, blockN, entryBytes] of [
    ['fa2', 8, 4],
    ['fa2', 16, 4],
    ['fa2', 32, 4],
    ['fmha-v2', 16, 8],
    ['flash-decoding', 16, 4],
    ['flash-decoding', 32, 4],
  ] as const) {
    it(`${id}, K/V tiles of ${blockN} on pages of ${PS}: K, V, block_table, cache_seqlens bytes and pages touched`, () => {
      const splits = id === 'flash-decoding' ? 2 : undefined;
      const run = runPaged(algorithmById(id), sp.pp, sp.x, { trace: false, blockN, features: splits ? { splits } : undefined });
      const r = runLayoutToEnd(run.gen);
      const read = r.counters.hbmRead;
      // Every query head streams its sequence's keys once (Nq = 1: one Q tile), up to the sequence's end.
      expect(read.K).toBe(hq * sum(LENS) * d * 4);
      expect(read.V).toBe(hq * sum(LENS) * dv * 4);
      // One table entry per page a K/V tile spans: max(tiles, pages) per sequence and head.
      const entries = sum(LENS.map((L) => Math.max(cdiv(L, blockN), cdiv(L, PS))));
      expect(read.block_table).toBe(hq * entries * entryBytes);
      // cache_seqlens: 4 bytes per Q tile load, i.e. per CTA that has keys: one per head, or
      // per non-empty split for flash-decoding (2 splits over the longest sequence's tiles,
      // rounded up to whole pages, then the same split length for every sequence).
      let ctas = LENS.filter((L) => L > 0).length;
      if (splits) {
        const perSplit = cdiv(cdiv(cdiv(Math.max(...LENS), blockN), splits), Math.max(1, PS / blockN)) * Math.max(1, PS / blockN);
        ctas = sum(LENS.map((L) => cdiv(cdiv(L, blockN), perSplit)));
      }
      expect(read.cache_seqlens).toBe(4 * hq * ctas);
      expect(run.touched.size).toBe(pages);
      expect(r.counters.hbmWritten.O).toBe(LENS.length * hq * dv * 4);
    });
  }

  it('a causal window touches only the pages some row can see', () => {
    const w = generateServing({ ...form, causal: true, nq: 3 });
    if (w.layout !== 'paged') throw new Error('paged form');
    const pp = { ...w.pp, base: { ...w.pp.base, window: { left: 20, right: 0 } } };
    const run = runPaged(algorithmById('fa2'), pp, w.x, { trace: false, blockN: 16 });
    runLayoutToEnd(run.gen);
    // Rows see keys [L − 3 − 20, L − 1]: pages floor(max(0, L − 23) / 16) … floor((L − 1) / 16).
    const seen = sum(LENS.map((L) => (L === 0 ? 0 : Math.floor((L - 1) / PS) - Math.floor(Math.max(0, L - 23) / PS) + 1)));
    expect(run.touched.size).toBe(seen);
    expect(seen).toBeLessThan(pages);
  });
});

describe('varlen counters in closed form', () => {
  // An empty sequence, one with query rows and no keys, Nq < Nk and Nq = Nk.
  const LQ = [12, 40, 0, 23, 3];
  const LK = [12, 40, 9, 23, 0];
  const form: ServingForm = { ...DEFAULT_SERVING_FORM, seqlensQ: LQ, seqlensK: LK, hq: 2, hk: 1, d: 16, causal: false };
  const sp = generateServing(form);
  if (sp.layout !== 'varlen') throw new Error('varlen form');
  const { hq, d, dv } = sp.vp.base;
  const BM = 16;
  const BN = 32;

  it('fa2: Q, K, V, O, LSE and the cu_seqlens offsets (16 bytes per CTA) per tensor', () => {
    const r = runLayoutToEnd(runVarlen(algorithmById('fa2'), sp.vp, sp.x, { trace: false, blockM: BM, blockN: BN }));
    const read = r.counters.hbmRead;
    const withKeys = LQ.map((n, b) => (LK[b] > 0 ? n : 0));
    const ctas = hq * sum(withKeys.map((n) => cdiv(n, BM)));
    expect(read.Q).toBe(hq * sum(withKeys) * d * 4);
    // Each Q tile (CTA) streams all of its sequence's keys: ceil(nq / BM) · nk per head.
    expect(read.K).toBe(hq * sum(LQ.map((n, b) => cdiv(n, BM) * LK[b])) * d * 4);
    expect(read.V).toBe(hq * sum(LQ.map((n, b) => cdiv(n, BM) * LK[b])) * dv * 4);
    expect(read.cu_seqlens_q).toBe(8 * ctas);
    expect(read.cu_seqlens_k).toBe(8 * ctas);
    // Every query row is written, the key-less sequence's too (O = 0, LSE = −inf).
    expect(r.counters.hbmWritten.O).toBe(hq * sum(LQ) * dv * 4);
    expect(r.counters.hbmWritten.LSE).toBe(hq * sum(LQ) * 4);
    // Score and PV FLOPs of exactly the packed sequences: 2 · nq · nk · (d + dv) per head.
    expect(r.counters.matmulFlops).toBe(hq * sum(LQ.map((n, b) => 2 * n * LK[b] * (d + dv))));
  });

  it('the varlen backward reads the offsets once per backward CTA: one per K/V column block and query head', () => {
    const dO = Float32Array.from({ length: sum(LQ) * hq * dv }, (_, i) => Math.sin(i));
    const g = runVarlenBackward('fa2', sp.vp, sp.x, dO, { blockM: BM, blockN: BN });
    const ctas = hq * sum(LK.map((nk, b) => (LQ[b] > 0 ? cdiv(nk, BN) : 0)));
    expect(g.counters.hbmRead.cu_seqlens_q).toBe(8 * ctas);
    expect(g.counters.hbmRead.cu_seqlens_k).toBe(8 * ctas);
    // Gradients come back packed: dq over every query row, dk and dv over every key.
    expect([g.dq.length, g.dk.length, g.dv.length]).toEqual([sum(LQ) * hq * d, sum(LK) * sp.vp.base.hk * d, sum(LK) * sp.vp.base.hk * dv]);
    // Keys of the sequence without query rows (sequence 2) get no gradient.
    const k0 = LK[0] + LK[1];
    expect(Array.from(g.dk.slice(k0 * d, (k0 + LK[2]) * d)).every((x) => x === 0)).toBe(true);
  });

  it('padding every sequence to the longest costs the dense FLOPs of B · max nq · max nk', () => {
    const run = runServing(sp, 'fa2', { blockM: BM, blockN: BN });
    const B = LQ.length;
    const nq = Math.max(...LQ);
    const nk = Math.max(...LK);
    expect(run.padded?.counters.matmulFlops).toBe(B * hq * 2 * nq * nk * (d + dv));
    expect(run.counters.matmulFlops / run.padded!.counters.matmulFlops).toBeCloseTo(sum(LQ.map((n, b) => n * LK[b])) / (B * nq * nk), 12);
  });
});
