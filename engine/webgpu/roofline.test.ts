import { describe, expect, it } from 'vitest';
import { nominalFlops, type AttentionProblem } from '../core/problem.ts';
import type { Ceilings } from './ceilings.ts';
import { bwdmMainWgsl, chooseMatrixBackward } from './backward-matrix-kernel.ts';
import { H200_MATRIX_CONTEXT } from './h200-matrix-context.ts';
import { chooseMatrixTile, matrixKernelWgsl, matrixLayout } from './flash-matrix-kernel.ts';
import {
  backwardCounts,
  decodeCounts,
  describeRoofline,
  forwardCounts,
  roofline,
  rooflineOfRun,
  tileFromConfig,
  visibleTiles,
} from './roofline.ts';

const P = (n: number, d: number, causal: boolean): AttentionProblem => ({
  batch: 2,
  hq: 4,
  hk: 4,
  nq: n,
  nk: n,
  d,
  dv: d,
  causal,
  dtype: 'fp16',
});

const h200 = H200_MATRIX_CONTEXT;

describe('roofline counts', () => {
  it('counts the (query block, key tile) pairs a causal mask leaves, as a brute force over tiles does', () => {
    for (const [nq, nk, bm, bn] of [
      [256, 256, 128, 32],
      [100, 300, 64, 16],
      [300, 100, 128, 32],
    ]) {
      let brute = 0;
      for (let r0 = 0; r0 < nq; r0 += bm)
        for (let j0 = 0; j0 < nk; j0 += bn) {
          const lastRow = Math.min(r0 + bm, nq) - 1;
          // bottom-right alignment: row i sees keys j ≤ i + nk − nq
          if (j0 <= lastRow + nk - nq) brute++;
        }
      expect(visibleTiles({ nq, nk, causal: true }, bm, bn)).toBe(brute);
      expect(visibleTiles({ nq, nk, causal: false }, bm, bn)).toBe(Math.ceil(nq / bm) * Math.ceil(nk / bn));
    }
  });

  it('gives the nominal FLOPs on whole tiles: 4·B·H·N²·d forward, 2.5× that backward', () => {
    const p = P(512, 128, false);
    expect(forwardCounts(p, 128, 32).mmaFlops).toBe(nominalFlops(p));
    expect(backwardCounts(p, 16, 128).mmaFlops).toBe(2.5 * nominalFlops(p));
  });

  it('counts per tile what the generated forward kernel does: two barriers and BM·BN exp2 across its lanes', () => {
    const c = chooseMatrixTile(h200, { d: 128, dv: 128, nq: 4096 }, { masked: false, softcap: false, alibi: false });
    const layout = matrixLayout(c);
    const w = matrixKernelWgsl(c);
    const loop = w.slice(w.indexOf('for (var j0 = jfirst'), w.indexOf('if (again)'));
    const barriers = loop.match(/workgroupBarrier\(\)/g)?.length ?? 0;
    // the full-tile softmax branch: one exp2 per score a lane holds
    const expsPerLane = loop.match(/let p\d+ = exp2\(/g)?.length ?? 0;
    const p = P(4096, 128, false);
    const tiles = p.batch * p.hq * visibleTiles(p, layout.bm, c.bn);
    const counts = forwardCounts(p, layout.bm, c.bn);
    expect(counts.barriers / tiles).toBe(barriers);
    expect(counts.exps / tiles).toBe(expsPerLane * layout.threads);
  });

  it('counts four barriers per tile of the generated backward kernel, and BN = subgroups × 16 keys', () => {
    const ctx = { ...(h200 as object), limits: { maxInvocations: 1024, maxWorkgroupStorage: 49152 } } as Parameters<
      typeof chooseMatrixBackward
    >[0];
    const c = chooseMatrixBackward(ctx, { d: 128, dv: 128, group: 1, softcap: false, alibi: false });
    const w = bwdmMainWgsl(c);
    // the query-tile loop, up to its closing brace
    const from = w.indexOf('for (var t = 0u; t < total; t++) {');
    let depth = 0;
    let end = from;
    for (let i = w.indexOf('{', from); i < w.length; i++) {
      if (w[i] === '{') depth++;
      else if (w[i] === '}' && --depth === 0) {
        end = i;
        break;
      }
    }
    const barriers = w.slice(from, end).match(/workgroupBarrier\(\)/g)?.length ?? 0;
    const p = P(4096, 128, false);
    const bn = c.warps * c.t;
    const counts = backwardCounts(p, c.bm, bn);
    expect(counts.barriers / (p.batch * p.hq * visibleTiles(p, c.bm, bn))).toBe(barriers);
    expect(tileFromConfig(`8 subgroups × 16 keys per workgroup (BN ${bn}), query tiles of ${c.bm} rows`)).toEqual({ bm: c.bm, bn });
  });

  it('decoding is a stream: storage binds', () => {
    const p: AttentionProblem = { batch: 4, hq: 64, hk: 8, nq: 1, nk: 8192, d: 128, dv: 128, causal: false, dtype: 'fp16' };
    const c = decodeCounts(p);
    expect(c.storageBytes).toBe(4 * (64 * 128 + 8 * 8192 * 256) * 2 + 4 * 64 * 129 * 4);
    const r = roofline('decode', p, c, CEILINGS, 0.1);
    expect(r.binding.resource).toBe('storage');
  });
});

const CEILINGS: Ceilings = {
  source: 'test',
  mmaRegisters: 600e12,
  mmaWorkgroupRight: 500e12,
  mmaWorkgroupBoth: 400e12,
  workgroupBytes: 30e12,
  storageBytes: 4e12,
  expPerSecond: 4e12,
  atomicsPerSecond: 200e9,
  barrierSeconds: 0.25e-9,
};

describe('roofline', () => {
  it('each bound is the count over its ceiling; the largest binds; fractions are of the measured time', () => {
    const p = P(1024, 64, false);
    const counts = forwardCounts(p, 128, 16);
    const r = roofline('forward', p, counts, CEILINGS, 2);
    const mma = (counts.mmaFlops - counts.mmaFlopsBothLoaded) / 500e12 + counts.mmaFlopsBothLoaded / 400e12;
    expect(r.bounds.find((b) => b.resource === 'mma')?.seconds).toBeCloseTo(mma, 15);
    expect(r.bounds.find((b) => b.resource === 'exp')?.seconds).toBeCloseTo(counts.exps / 4e12, 15);
    expect(r.bounds.some((b) => b.resource === 'atomic')).toBe(false);
    const max = Math.max(...r.bounds.map((b) => b.seconds));
    expect(r.binding.seconds).toBe(max);
    expect(r.fractionOfBinding).toBeCloseTo(max / 2e-3, 12);
    expect(r.fractionOfSum).toBeCloseTo(r.bounds.reduce((s, b) => s + b.seconds, 0) / 2e-3, 12);
    expect(r.achievedFlops).toBeCloseTo(nominalFlops(p) / 2e-3, 0);
    expect(describeRoofline(r)).toContain(
      `binds ${r.binding.resource} ${(max * 1e3).toFixed(3)} ms = ${(max / 2e-3).toFixed(2)} of the measured 2.000 ms`,
    );
  });

  it("reads the tile from the kernels' configuration text, and has no roofline for the plain-arithmetic paths", () => {
    expect(
      tileFromConfig('16×16×16 f16 subgroup matrices, Q and O in registers (Q loaded from its buffer), BM=128 BN=32, 8 subgroups of 32'),
    ).toEqual({ bm: 128, bn: 32 });
    expect(
      tileFromConfig(
        'f16 subgroup-matrix backward (16×16×16): 8 subgroups × 16 keys per workgroup (BN 128), query tiles of 16 rows, 41.0 KB',
      ),
    ).toEqual({ bm: 16, bn: 128 });
    expect(tileFromConfig('64×64 tiles, 256 threads')).toBeUndefined();
    const p = P(1024, 64, false);
    expect(rooflineOfRun({ pass: 'forward', path: 'flash-f32', config: 'BM=64 BN=64', ms: 1 }, p, CEILINGS)).toBeUndefined();
    expect(
      rooflineOfRun(
        { pass: 'backward', path: 'flash-matrix', config: '(BN 128), query tiles of 16 rows', ms: 1 },
        p,
        CEILINGS,
      )?.bounds.some((b) => b.resource === 'atomic'),
    ).toBe(true);
  });
});
