// The host-side arithmetic of the WebGPU serving layouts: the varlen tile list (no padding
// blocks, longest first once grid_tile reverses it), its key ranges against the CPU mask rule,
// the paged work list (page-aligned splits covering every token once), the tables' word
// layouts, and the geometry rewrite of a dense kernel's WGSL.

import { describe, expect, it } from 'vitest';
import { scoreModel, visible } from '../core/scores.ts';
import { tileAt } from './grid-order.ts';
import { packPagedTable, pagedWork } from './paged-layout.ts';
import { functionsReadingGeoUnbound, withSequenceGeometry } from './sequence-geometry.ts';
import { flashKernelWgsl } from './flash-kernel.ts';
import { chooseFlashTile } from './tiles.ts';
import { blockKeyRange, packVarlenTable, varlenTiles } from './varlen-layout.ts';
import { rowKernelWgsl } from './flash-row-kernel.ts';

describe('varlen tile list', () => {
  const cuQ = [0, 1, 38, 38, 168, 173];
  const cuK = [0, 7, 44, 47, 197, 197];

  it('has ceil(n / BM) blocks per sequence and none for empty ones', () => {
    const tiles = varlenTiles(cuQ, cuK, 32, { causal: true });
    const per = [0, 1, 2, 3, 4].map((s) =>
      tiles
        .filter((t) => t.seq === s)
        .map((t) => t.block)
        .sort((a, b) => a - b),
    );
    expect(per).toEqual([[0], [0, 1], [], [0, 1, 2, 3, 4], [0]]);
  });

  it('is sorted shortest first, so the grid order (bottom first) starts the longest tiles', () => {
    const tiles = varlenTiles(cuQ, cuK, 32, { causal: true });
    for (let i = 1; i < tiles.length; i++) expect(tiles[i].keys).toBeGreaterThanOrEqual(tiles[i - 1].keys);
    const first = tileAt(0, tiles.length, 4, 4);
    expect(tiles[first.block].keys).toBe(Math.max(...tiles.map((t) => t.keys)));
  });

  it('counts the keys a block sees by the CPU mask rule (bottom-right causal, windows)', () => {
    for (const m of [
      { causal: true },
      { causal: false, window: { left: 5, right: 2 } },
      { causal: true, window: { left: 9, right: -1 } },
    ]) {
      for (const [nq, nk] of [
        [37, 37],
        [10, 150],
        [130, 20],
        [5, 0],
      ]) {
        for (let r0 = 0; r0 < nq; r0 += 16) {
          const r1 = Math.min(nq, r0 + 16);
          const [lo, hi] = blockKeyRange(nq, nk, r0, r1, m);
          // every visible pair lies inside [lo, hi)
          for (let i = r0; i < r1; i++)
            for (let j = 0; j < nk; j++) {
              const sm = scoreModel({ batch: 1, hq: 1, hk: 1, nq, nk, d: 4, dv: 4, causal: m.causal, window: m.window, dtype: 'fp32' });
              if (visible(sm, i, j, 0, 0)) expect(j >= lo && j < hi, `nq=${nq} nk=${nk} row ${i} key ${j}`).toBe(true);
            }
        }
      }
    }
  });

  it('packs B, total_q, both offset arrays and the (sequence, block) pairs', () => {
    const tiles = varlenTiles([0, 3, 5], [0, 4, 4], 2, { causal: false });
    const t = packVarlenTable([0, 3, 5], [0, 4, 4], tiles);
    expect([...t.slice(0, 8)]).toEqual([2, 5, 0, 3, 5, 0, 4, 4]);
    expect(t.length).toBe(8 + 2 * tiles.length);
    expect([...t.slice(8)]).toEqual(tiles.flatMap((x) => [x.seq, x.block]));
  });
});

describe('paged work list', () => {
  it('splits are whole pages, cover every token once, and empty sequences get none', () => {
    const lens = [1, 100, 0, 333, 64];
    const w = pagedWork(lens, 16, 2, 2048, 3);
    expect(w.splitLen).toBe(48);
    expect(w.splits).toEqual([1, 3, 0, 7, 2]);
    expect(w.base).toEqual([0, 1, 4, 4, 11, 13]);
    const covered = lens.map(() => 0);
    for (const [b, s] of w.items) covered[b] += Math.min(w.splitLen, lens[b] - s * w.splitLen);
    expect(covered).toEqual(lens);
    // full splits first
    const len = ([b, s]: [number, number]) => Math.min(w.splitLen, lens[b] - s * w.splitLen);
    for (let i = 1; i < w.items.length; i++) expect(len(w.items[i])).toBeLessThanOrEqual(len(w.items[i - 1]));
  });

  it('chooses at least 256 keys per split and about 2048 workgroups on large batches', () => {
    expect(pagedWork([1000, 2000], 64, 8).splitLen).toBe(256);
    const big = Array.from({ length: 32 }, () => 9000);
    const w = pagedWork(big, 64, 8);
    expect(w.splitLen % 64).toBe(0);
    expect(w.items.length * 8).toBeGreaterThan(1800);
    expect(w.items.length * 8).toBeLessThan(2600);
  });

  it('packs the table with the block table last; entries of -1 wrap to u32', () => {
    const w = pagedWork([3, 0], 2, 1, 2048, 1);
    const t = packPagedTable([3, 0], [5, 1, -1, -1], 2, w);
    expect([...t.slice(0, 8)]).toEqual([2, 2, 2, 3, 0, 0, 2, 2]);
    expect([...t.slice(8, 12)]).toEqual([0, 0, 0, 1]);
    expect([...t.slice(12)]).toEqual([5, 1, 0xffffffff, 0xffffffff]);
  });
});

describe('withSequenceGeometry', () => {
  it('moves every shape read from params to geo and threads geo through the helpers', () => {
    const dense = rowKernelWgsl({
      elem: 'f32',
      tpr: 1,
      rpt: 1,
      threads: 128,
      bc: 32,
      sc: 8,
      d: 64,
      dv: 64,
      score: { masked: true, softcap: true, alibi: true },
    });
    expect(dense).toMatch(/params\.nk/);
    const out = withSequenceGeometry(dense.replace('let sink', 'let geo = make_geo(params.nq, params.nk);\n  let sink'));
    expect(out).not.toMatch(/params\.(nq|nk|diag)\b/);
    expect(out).toContain('fn key_visible(geo: Geo, i: u32, j: u32)');
    expect(out).toContain('block_key_range(geo, row0');
    expect(out).not.toMatch(/(?<!fn )\bscore_edge\((?!geo)/);
  });

  it('threads geo through every helper of the 4×4-tiled kernel, score_unmasked included, and refuses a helper it misses', () => {
    const c = chooseFlashTile(
      // SwiftShader's limits
      {
        limits: {
          maxWorkgroupStorage: 16384,
          maxInvocations: 256,
          maxStorageBinding: 2 ** 27,
          maxBuffer: 2 ** 28,
          maxWorkgroupsPerDim: 65535,
          minStorageOffset: 256,
        },
      },
      { elem: 'f32', subgroup: 0, d: 128, dv: 128 },
    );
    const code = flashKernelWgsl({ ...c, varlen: true });
    expect(functionsReadingGeoUnbound(code)).toEqual([]);
    expect(code).toContain('fn score_unmasked(geo: Geo, ');
    expect(() => withSequenceGeometry('const FLAG_ALIBI = 1u;\nfn helper(i: u32) -> u32 { return params.nq + i; }')).toThrow(
      /helper read geo/,
    );
  });
});
